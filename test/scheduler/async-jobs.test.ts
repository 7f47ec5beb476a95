import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { fakeTime } from '../helpers/fake-time';
import type { Mode } from '../../src/platform/clock';

const time = fakeTime();
let s: TestServer;

before(async () => {
  s = await startTestServer({}, { realNow: time.now });
});
after(() => s.close());

function schedule(kind: string, in_ms: number, n: number, mode: Mode = 'live', shopId = s.demo.shopId): Promise<number> {
  const { scheduler, clocks, store } = s.running.app;
  return store.tx(async (tx) => scheduler.schedule(tx, { kind, subjectId: `s${n}`, shopId, mode, dueAt: (await clocks.now(tx, shopId, mode)) + in_ms, payload: { n } }));
}

async function row(id: number): Promise<{ state: string; attempt: number; last_error: string | null }> {
  return (await s.store.get('SELECT state, attempt, last_error FROM jobs WHERE id = ?', id)) as never;
}

const tick = (ms = 1): Promise<void> => new Promise((r) => setTimeout(r, ms));

test('an advance waits for async jobs: run outside a transaction, complete recorded before the answer', async () => {
  const completed: number[] = [];
  s.running.app.scheduler.registerAsync('async.echo', {
    run: async (job) => {
      // A read through the store inside a transaction body would wait for that body's end: the engine fails it.
      assert.ok(await s.store.get('SELECT 1 AS one'), 'run is called outside any transaction');
      await tick(5);
      return { echoed: job.payload.n as number };
    },
    complete: async (tx, job, result: { echoed: number }) => {
      // In the job's own transaction, before it marks the job done.
      assert.equal((await tx.get<{ state: string }>('SELECT state FROM jobs WHERE id = ?', job.id))?.state, 'pending');
      tx.afterCommit(() => completed.push(result.echoed));
    },
  });
  const shop = await s.newShop();
  const a = await schedule('async.echo', 60_000, 1, 'test', shop.shopId);
  const b = await schedule('async.echo', 120_000, 2, 'test', shop.shopId);
  const r = await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: 180 } });
  assert.equal(r.status, 200);
  assert.equal(r.body.jobs_run, 2);
  assert.deepEqual(completed.sort(), [1, 2]);
  assert.equal((await row(a)).state, 'done');
  assert.equal((await row(b)).state, 'done');
});

test('at most 16 async jobs run at once; the rest wait for a slot and all finish', async () => {
  let active = 0;
  let most = 0;
  let done = 0;
  s.running.app.scheduler.registerAsync('async.slow', {
    run: async () => {
      active++;
      most = Math.max(most, active);
      await tick(3);
      active--;
      return null;
    },
    // Counted once committed: on PostgreSQL a transaction that lost a serialization race runs its body again.
    complete: async (tx) => {
      tx.afterCommit(() => done++);
    },
  });
  // One transaction: all 40 are due together before the scheduler's timer can fire for the first of them.
  const { scheduler, clocks, store } = s.running.app;
  const shopId = s.demo.shopId;
  await store.tx(async (tx) => {
    for (let i = 0; i < 40; i++) {
      await scheduler.schedule(tx, { kind: 'async.slow', subjectId: `s${i}`, shopId, mode: 'live', dueAt: await clocks.now(tx, shopId, 'live'), payload: { n: i } });
    }
  });
  await s.running.app.scheduler.runDue();
  assert.equal(done, 40);
  assert.equal(most, 16);
});

test('a rejected or overdue run is retried with backoff; a throwing complete rolls back and counts as a failure', async () => {
  let calls = 0;
  s.running.app.scheduler.registerAsync('async.flaky', {
    run: async (job) => {
      calls++;
      if (job.attempt === 0) throw new Error('connection refused');
      if (job.attempt === 1) return new Promise(() => {}); // never answers: the deadline ends it
      return 'ok';
    },
    complete: async (tx, job) => {
      await tx.run(`UPDATE jobs SET payload = '{"written":true}' WHERE id = ?`, job.id);
      if (job.attempt === 2) throw new Error('could not record');
    },
    deadline_ms: 30,
  });
  const id = await schedule('async.flaky', 0, 1);
  await s.running.app.scheduler.runDue();
  assert.deepEqual(await row(id), { state: 'pending', attempt: 1, last_error: 'connection refused' });
  time.advance(1000);
  await s.running.app.scheduler.runDue();
  assert.equal((await row(id)).attempt, 2);
  assert.match((await row(id)).last_error ?? '', /timed out after 30 ms/);
  time.advance(2000);
  await s.running.app.scheduler.runDue();
  assert.deepEqual(await row(id), { state: 'pending', attempt: 3, last_error: 'could not record' });
  const payload = ((await s.store.get('SELECT payload FROM jobs WHERE id = ?', id)) as { payload: string }).payload;
  assert.equal(payload, '{"n":1}', "complete's writes were rolled back");
  time.advance(4000);
  await s.running.app.scheduler.runDue();
  assert.equal((await row(id)).state, 'done');
  assert.equal(calls, 4);
});

test('completions of runs that end together: one that throws rolls back and fails alone, the others are recorded', async () => {
  s.running.app.scheduler.registerAsync('async.together', {
    run: async () => 'ok',
    complete: async (tx, job) => {
      await tx.run(`UPDATE jobs SET payload = '{"written":true}' WHERE id = ?`, job.id);
      if (job.payload.n === 3) throw new Error('could not record');
    },
  });
  const { scheduler, clocks, store } = s.running.app;
  const shopId = s.demo.shopId;
  const ids = await store.tx(async (tx) => {
    const out: number[] = [];
    for (let i = 0; i < 10; i++) {
      out.push(await scheduler.schedule(tx, { kind: 'async.together', subjectId: `t${i}`, shopId, mode: 'live', dueAt: await clocks.now(tx, shopId, 'live'), payload: { n: i } }));
    }
    return out;
  });
  await scheduler.runDue();
  for (const [i, id] of ids.entries()) {
    const payload = ((await s.store.get('SELECT payload FROM jobs WHERE id = ?', id)) as { payload: string }).payload;
    if (i === 3) {
      assert.deepEqual(await row(id), { state: 'pending', attempt: 1, last_error: 'could not record' });
      assert.equal(payload, '{"n":3}', "the failed completion's writes were rolled back");
    } else {
      assert.equal((await row(id)).state, 'done', `job ${i}`);
      assert.equal(payload, '{"written":true}', `job ${i}'s completion was recorded`);
    }
  }
});

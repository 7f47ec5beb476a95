import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { fakeTime } from '../helpers/fake-time';
import type { Mode } from '../../src/scheduler/clock';

const time = fakeTime();
let s: TestServer;

before(async () => {
  s = await startTestServer({}, { realNow: time.now });
});
after(() => s.close());

function schedule(kind: string, in_ms: number, n: number, mode: Mode = 'live', shopId = s.demo.shopId): number {
  const { scheduler, clocks, store } = s.running.app;
  return store.tx((tx) => scheduler.schedule(tx, { kind, subjectId: `s${n}`, shopId, mode, dueAt: clocks.now(shopId, mode) + in_ms, payload: { n } }));
}

function row(id: number): { state: string; attempt: number; last_error: string | null } {
  return s.store.db.prepare('SELECT state, attempt, last_error FROM jobs WHERE id = ?').get(id) as never;
}

const tick = (ms = 1): Promise<void> => new Promise((r) => setTimeout(r, ms));

test('an advance waits for async jobs: run outside a transaction, complete recorded before the answer', async () => {
  const completed: number[] = [];
  s.running.app.scheduler.registerAsync('async.echo', {
    run: async (job) => {
      assert.equal(s.store.db.inTransaction, false, 'run is called outside any transaction');
      await tick(5);
      return { echoed: job.payload.n as number };
    },
    complete: (tx, _job, result: { echoed: number }) => {
      assert.equal(tx.db.inTransaction, true);
      completed.push(result.echoed);
    },
  });
  const shop = s.newShop();
  const a = schedule('async.echo', 60_000, 1, 'test', shop.shopId);
  const b = schedule('async.echo', 120_000, 2, 'test', shop.shopId);
  const r = await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: 180 } });
  assert.equal(r.status, 200);
  assert.equal(r.body.jobs_run, 2);
  assert.deepEqual(completed.sort(), [1, 2]);
  assert.equal(row(a).state, 'done');
  assert.equal(row(b).state, 'done');
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
    complete: () => {
      done++;
    },
  });
  for (let i = 0; i < 40; i++) schedule('async.slow', 0, i);
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
    complete: (tx, job) => {
      tx.db.prepare(`UPDATE jobs SET payload = '{"written":true}' WHERE id = ?`).run(job.id);
      if (job.attempt === 2) throw new Error('could not record');
    },
    deadline_ms: 30,
  });
  const id = schedule('async.flaky', 0, 1);
  await s.running.app.scheduler.runDue();
  assert.deepEqual(row(id), { state: 'pending', attempt: 1, last_error: 'connection refused' });
  time.advance(1000);
  await s.running.app.scheduler.runDue();
  assert.equal(row(id).attempt, 2);
  assert.match(row(id).last_error ?? '', /timed out after 30 ms/);
  time.advance(2000);
  await s.running.app.scheduler.runDue();
  assert.deepEqual(row(id), { state: 'pending', attempt: 3, last_error: 'could not record' });
  const payload = (s.store.db.prepare('SELECT payload FROM jobs WHERE id = ?').get(id) as { payload: string }).payload;
  assert.equal(payload, '{"n":1}', "complete's writes were rolled back");
  time.advance(4000);
  await s.running.app.scheduler.runDue();
  assert.equal(row(id).state, 'done');
  assert.equal(calls, 4);
});

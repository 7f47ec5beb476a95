import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { fakeTime, eventually } from '../helpers/fake-time';
import type { Job } from '../../src/platform/queue/jobs';
import type { Mode } from '../../src/platform/clock';
import { REREAD_MS } from '../../src/platform/queue/jobs-table';

const time = fakeTime();
let s: TestServer;
/** Payload `n` of every run of the recording kinds, in run order. */
let seen: number[] = [];
let chainDue: number[] = [];
/** Payload `n` of every committed run of test.mark. */
let marked: number[] = [];

/** Register the kinds these tests use on the running app (again after every restart). */
function registerKinds(): void {
  const sch = s.running.app.scheduler;
  const clocks = s.running.app.clocks;
  // Recorded once committed: a run's transaction may run its body again on PostgreSQL (a serialization retry).
  sch.register('test.record', async (tx, job) => {
    tx.afterCommit(() => seen.push(job.payload.n as number));
  });
  sch.register('test.boom', async (tx, job) => {
    // A write that must be rolled back with the failed run.
    await tx.run(`UPDATE jobs SET payload = '{"touched":true}' WHERE id = ?`, job.id);
    throw new Error(`boom on attempt ${job.attempt}`);
  });
  sch.register('test.mark', async (tx, job) => {
    // A write and an in-memory effect kept for after commit, as the domain's jobs do.
    const n = job.payload.n as number;
    await sch.schedule(tx, { kind: 'test.record', subjectId: `mark-${n}`, shopId: job.shop_id, mode: job.mode, dueAt: job.due_at + 86_400_000, payload: { n } });
    tx.afterCommit(() => marked.push(n));
  });
  sch.register('test.monthly', async (tx, job) => {
    chainDue.push(await clocks.now(tx, job.shop_id, job.mode));
    const n = job.payload.n as number;
    if (n < 12) {
      const next = (await clocks.now(tx, job.shop_id, job.mode)) + 30 * 86_400_000;
      await sch.schedule(tx, { kind: 'test.monthly', subjectId: job.subject_id, shopId: job.shop_id, mode: job.mode, dueAt: next, payload: { n: n + 1 } });
    }
  });
}

/** Schedule a job `in_ms` from now on the shop's clock (the demo shop's by default). */
function schedule(kind: string, in_ms: number, payload: Record<string, unknown>, o: { mode?: Mode; shopId?: string; subject?: string } = {}): Promise<number> {
  const { scheduler, clocks, store } = s.running.app;
  const shopId = o.shopId ?? s.demo.shopId;
  const mode = o.mode ?? 'live';
  return store.tx(async (tx) =>
    scheduler.schedule(tx, { kind, subjectId: o.subject ?? 'subj', shopId, mode, dueAt: (await clocks.now(tx, shopId, mode)) + in_ms, payload }),
  );
}

async function jobRow(id: number): Promise<{ state: string; attempt: number; last_error: string | null; payload: string }> {
  return (await s.store.get('SELECT state, attempt, last_error, payload FROM jobs WHERE id = ?', id)) as never;
}

before(async () => {
  s = await startTestServer({}, { realNow: time.now });
  registerKinds();
});
after(() => s.close());

test('jobs run in due order once their time comes, not before', async () => {
  seen = [];
  await schedule('test.record', 30_000, { n: 30 });
  await schedule('test.record', 10_000, { n: 10 });
  await schedule('test.record', 20_000, { n: 20 });
  await schedule('test.record', 10_000, { n: 11 });
  assert.equal(await s.running.app.scheduler.runDue(), 0);
  time.advance(15_000);
  await s.running.app.scheduler.runDue();
  assert.deepEqual(seen, [10, 11]);
  time.advance(60_000);
  await s.running.app.scheduler.runDue();
  assert.deepEqual(seen, [10, 11, 20, 30]);
});

test('a cancelled job never runs; other kinds of the same subject still do', async () => {
  seen = [];
  const a = await schedule('test.record', 1000, { n: 1 }, { subject: 'pay_1' });
  await schedule('test.monthly', 1000, { n: 12 }, { subject: 'pay_1' });
  const cancelled = await s.store.tx(async (tx) => s.running.app.scheduler.cancel(tx, 'test.record', 'pay_1'));
  assert.equal(cancelled, 1);
  chainDue = [];
  time.advance(2000);
  await s.running.app.scheduler.runDue();
  assert.deepEqual(seen, []);
  assert.equal(chainDue.length, 1);
  assert.equal((await jobRow(a)).state, 'cancelled');
});

test('jobs beyond the horizon wait in the table and run when their time comes', async () => {
  seen = [];
  const id = await schedule('test.record', 3 * 3_600_000, { n: 99 });
  // Nothing of a pending job is held in memory: the timer wakes at most a re-read interval ahead.
  assert.deepEqual({ ...s.running.app.scheduler.stats(), nextWakeAt: 0 }, { asyncRunning: 0, claimsHeld: 0, advances: 0, nextWakeAt: 0 });
  assert.ok(s.running.app.scheduler.stats().nextWakeAt <= time.now() + REREAD_MS, 'the timer waits for the re-read, not for the job three hours away');
  for (let i = 0; i < 6; i++) {
    time.advance(30 * 60_000);
    await s.running.app.scheduler.runDue();
  }
  assert.deepEqual(seen, [99]);
  assert.equal((await jobRow(id)).state, 'done');
});

test('a handler that throws is rolled back, retried with backoff, then dead; kopek-visible error kept', async () => {
  const id = await schedule('test.boom', 0, { n: 1 });
  await s.running.app.scheduler.runDue();
  let row = await jobRow(id);
  assert.equal(row.state, 'pending');
  assert.equal(row.attempt, 1);
  assert.equal(row.last_error, 'boom on attempt 0');
  assert.equal(row.payload, '{"n":1}', 'the failed run wrote nothing');
  // Backoff doubles: 1 s, 2 s, 4 s … so half of the next delay is not enough.
  time.advance(500);
  await s.running.app.scheduler.runDue();
  assert.equal((await jobRow(id)).attempt, 1);
  for (let attempt = 1; attempt < 8; attempt++) {
    time.advance(1000 * 2 ** (attempt - 1));
    await s.running.app.scheduler.runDue();
    assert.equal((await jobRow(id)).attempt, attempt + 1);
  }
  row = await jobRow(id);
  assert.equal(row.state, 'dead');
  assert.equal(row.last_error, 'boom on attempt 7');
  assert.ok(s.logs.some((l) => l.includes('"msg":"job dead"') && l.includes(`"job_id":${id}`)));
  assert.equal(s.logs.filter((l) => l.includes('"msg":"job failed; will retry"') && l.includes(`"job_id":${id},`)).length, 7);
});

test('a job that throws in a batch rolls back alone: the jobs around it commit once each', async () => {
  marked = [];
  const first = await schedule('test.mark', 1000, { n: 1 }, { subject: 'batch' });
  const boom = await schedule('test.boom', 1000, { n: 2 }, { subject: 'batch' });
  const last = await schedule('test.mark', 1000, { n: 3 }, { subject: 'batch' });
  time.advance(1000);
  await s.running.app.scheduler.runDue();
  assert.deepEqual(marked, [1, 3]);
  assert.equal((await jobRow(first)).state, 'done');
  assert.equal((await jobRow(last)).state, 'done');
  const b = await jobRow(boom);
  assert.equal(b.state, 'pending');
  assert.equal(b.attempt, 1);
  assert.equal(b.payload, '{"n":2}', 'the failed run wrote nothing');
  const follow = await s.store.all(`SELECT subject_id AS subject, count(*) AS n FROM jobs WHERE kind = 'test.record' AND subject_id LIKE 'mark-%' GROUP BY subject_id ORDER BY subject_id`);
  assert.deepEqual(follow, [
    { subject: 'mark-1', n: 1 },
    { subject: 'mark-3', n: 1 },
  ]);
  await s.store.tx(async (tx) => s.running.app.scheduler.cancel(tx, 'test.boom', 'batch'));
});

test('restart: overdue jobs run at once after start-up, in due order, without being told', async () => {
  seen = [];
  const ids = [await schedule('test.record', 20_000, { n: 2 }), await schedule('test.record', 5_000, { n: 1 }), await schedule('test.record', 40_000, { n: 3 })];
  const later = await schedule('test.record', 10 * 60_000, { n: 4 });
  await s.running.close();
  time.advance(60_000);
  await s.restart();
  registerKinds();
  await eventually(() => seen.length >= 3, 'the overdue jobs to run after restart');
  assert.deepEqual(seen, [1, 2, 3]);
  for (const id of ids) assert.equal((await jobRow(id)).state, 'done');
  assert.equal((await jobRow(later)).state, 'pending');
  time.advance(10 * 60_000);
  await s.running.app.scheduler.runDue();
  assert.deepEqual(seen, [1, 2, 3, 4]);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { fakeTime } from '../helpers/fake-time';

// The test clock's advance through the scheduler's one hook (Scheduler.runDueUpTo): each job runs with the shop's
// clock pinned to its due time in its own transaction, while a request served in the middle of the advance reads
// the committed offset; a job scheduled within the advance runs in it.

const DAY_MS = 86_400_000;
const time = fakeTime();
let s: TestServer;
/** What the async job saw: the clock in its completion, and the payment a request made while it ran. */
const seen: Array<{ n: number; completedAt: number; paymentCreatedAt: number }> = [];
let key = '';

before(async () => {
  s = await startTestServer({}, { realNow: time.now });
  const { scheduler, clocks } = s.running.app;
  scheduler.registerAsync<number>('sim.clock_probe', {
    // Outside any transaction: a request to the same server, served while the advance waits for this run.
    run: async () => {
      const r = await s.request('POST', '/v1/public/payments', { key, body: { amount: 10_000 } });
      assert.equal(r.status, 201, r.text);
      return Date.parse((r.body.payment as { created_at: string }).created_at);
    },
    complete: async (tx, job, paymentCreatedAt) => {
      const completedAt = await clocks.now(tx, job.shop_id, job.mode);
      tx.afterCommit(() => seen.push({ n: job.payload.n as number, completedAt, paymentCreatedAt }));
      if (job.payload.n === 0) {
        await scheduler.schedule(tx, { kind: 'sim.clock_probe', subjectId: job.subject_id, shopId: job.shop_id, mode: job.mode, dueAt: completedAt + DAY_MS, payload: { n: 1 } });
      }
    },
  });
});
after(() => s.close());

test('an advance pins each job to its due time in its own transaction; a request in the middle reads the committed offset', async () => {
  const shop = await s.newShop();
  key = shop.key;
  const { scheduler, clocks, store } = s.running.app;
  const start = time.now();
  await store.tx(async (tx) =>
    scheduler.schedule(tx, { kind: 'sim.clock_probe', subjectId: 'probe', shopId: shop.shopId, mode: 'test', dueAt: (await clocks.now(tx, shop.shopId, 'test')) + DAY_MS, payload: { n: 0 } }),
  );
  const r = await s.request('POST', '/v1/test/clock/advance', { key, body: { seconds: 10 * 86_400 } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.jobs_run, 2, 'the job scheduled within the advance ran in it');
  assert.deepEqual(
    seen.map((x) => [x.n, x.completedAt - start]),
    [
      [0, DAY_MS],
      [1, 2 * DAY_MS],
    ],
  );
  // The payments the requests made while the jobs ran are on the committed clock, ten days on: no pin leaked to them.
  for (const x of seen) assert.equal(x.paymentCreatedAt, start + 10 * DAY_MS);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startTestServer, type TestServer, type TestShop } from '../helpers/server';
import { fakeTime } from '../helpers/fake-time';

const DAY_MS = 86_400_000;
const time = fakeTime();
let s: TestServer;
/** Runs of the recording kind: [shop id, payload n]. */
let seen: Array<[string | null, number]> = [];
let monthly: number[] = [];

before(async () => {
  s = await startTestServer({}, { realNow: time.now });
  const { scheduler, clocks } = s.running.app;
  scheduler.register('clock.record', async (_tx, job) => {
    seen.push([job.shop_id, job.payload.n as number]);
  });
  scheduler.register('clock.monthly', async (tx, job) => {
    monthly.push(await clocks.now(tx, job.shop_id, job.mode));
    const n = job.payload.n as number;
    if (n < 12) {
      const dueAt = (await clocks.now(tx, job.shop_id, job.mode)) + 30 * DAY_MS;
      await scheduler.schedule(tx, { kind: 'clock.monthly', subjectId: job.subject_id, shopId: job.shop_id, mode: job.mode, dueAt, payload: { n: n + 1 } });
    }
  });
});
after(() => s.close());

/** Schedule a test-mode job of `shop` due `in_ms` from now on its test clock. */
function scheduleTest(shop: TestShop, kind: string, in_ms: number, n: number): Promise<number> {
  const { scheduler, clocks, store } = s.running.app;
  return store.tx(async (tx) =>
    scheduler.schedule(tx, { kind, subjectId: `sub_${n}`, shopId: shop.shopId, mode: 'test', dueAt: (await clocks.now(tx, shop.shopId, 'test')) + in_ms, payload: { n } }),
  );
}

async function advance(shop: TestShop, seconds: number) {
  const r = await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds } });
  assert.equal(r.status, 200, r.text);
  return r.body as { now: string; offset_seconds: number; jobs_run: number };
}

test('GET /v1/test/clock answers now and offset; the clock only moves forward', async () => {
  const shop = await s.newShop();
  const r = await s.request('GET', '/v1/test/clock', { key: shop.key });
  assert.equal(r.status, 200);
  assert.deepEqual(Object.keys(r.body).sort(), ['now', 'offset_seconds']);
  assert.equal(r.body.offset_seconds, 0);
  assert.equal(Date.parse(r.body.now), time.now());
  const back = await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: -5 } });
  assert.equal(back.status, 400);
  assert.equal(back.body.error.param, 'seconds');
  const moved = await advance(shop, 90);
  assert.equal(moved.offset_seconds, 90);
  assert.equal(Date.parse(moved.now), time.now() + 90_000);
});

test("two shops' clocks move independently, and an advance runs only its own shop's due test jobs", async () => {
  seen = [];
  const a = await s.newShop();
  const b = await s.newShop();
  await scheduleTest(a, 'clock.record', 30 * 60_000, 1);
  await scheduleTest(b, 'clock.record', 30 * 60_000, 2);
  await scheduleTest(a, 'clock.record', 2 * 3_600_000, 3);
  const ra = await advance(a, 3600);
  assert.equal(ra.jobs_run, 1);
  assert.deepEqual(seen, [[a.shopId, 1]]);
  const cb = await s.request('GET', '/v1/test/clock', { key: b.key });
  assert.equal(cb.body.offset_seconds, 0);
  const rb = await advance(b, 1800);
  assert.equal(rb.jobs_run, 1);
  assert.deepEqual(seen, [[a.shopId, 1], [b.shopId, 2]]);
  assert.equal((await s.request('GET', '/v1/test/clock', { key: a.key })).body.offset_seconds, 3600);
  // Real time passing does not reach a job two hours away on the shop's clock…
  time.advance(30 * 60_000);
  await s.running.app.scheduler.runDue();
  assert.equal(seen.length, 2);
  // …but real time plus the hour the clock was moved does.
  time.advance(30 * 60_000 + 1);
  await s.running.app.scheduler.runDue();
  assert.deepEqual(seen.at(-1), [a.shopId, 3]);
});

test('an advance of a year runs a chain of 12 monthly jobs, each on its own due date', async () => {
  monthly = [];
  const shop = await s.newShop();
  const start = time.now();
  await scheduleTest(shop, 'clock.monthly', 30 * DAY_MS, 1);
  const r = await advance(shop, 365 * 86_400);
  assert.equal(r.jobs_run, 12);
  assert.deepEqual(
    monthly.map((t) => Math.round((t - start) / DAY_MS)),
    [30, 60, 90, 120, 150, 180, 210, 240, 270, 300, 330, 360],
  );
  const again = await advance(shop, 0);
  assert.equal(again.jobs_run, 0);
});

test('jobs of a shop run in due order during an advance, interleaved with jobs they create', async () => {
  seen = [];
  monthly = [];
  const shop = await s.newShop();
  await scheduleTest(shop, 'clock.record', 45 * DAY_MS, 45);
  await scheduleTest(shop, 'clock.record', 10 * DAY_MS, 10);
  await scheduleTest(shop, 'clock.monthly', 30 * DAY_MS, 11);
  const start = time.now();
  const r = await advance(shop, 70 * 86_400);
  // monthly #11 at day 30 creates #12 at day 60; record 45 must run between them.
  assert.equal(r.jobs_run, 4);
  assert.deepEqual(seen.map((x) => x[1]), [10, 45]);
  assert.deepEqual(monthly.map((t) => Math.round((t - start) / DAY_MS)), [30, 60]);
});

test('kopek jobs lists counts per kind and failing jobs; jobs retry revives a dead one', async () => {
  const { scheduler } = s.running.app;
  scheduler.register('clock.fail', async () => {
    throw new Error('receiver said no');
  }, { maxAttempts: 2 });
  const shop = await s.newShop();
  const id = await scheduleTest(shop, 'clock.fail', 1000, 7);
  await scheduleTest(shop, 'clock.record', 10 * DAY_MS, 8);
  // One advance covers both attempts (1 s, then 1 s of backoff): the job is dead after it.
  const r = await advance(shop, 5);
  assert.equal(r.jobs_run, 2);
  const cli = (...args: string[]): string =>
    execFileSync(process.execPath, ['--import', 'tsx', 'src/main.ts', 'jobs', ...args, '--db', s.dbPath], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const listed = JSON.parse(cli('--json')) as { counts: Array<{ kind: string; pending: number; retrying: number; dead: number }>; failing: Array<{ id: number; state: string; last_error: string }> };
  assert.deepEqual(listed.counts.find((c) => c.kind === 'clock.fail'), { kind: 'clock.fail', pending: 0, retrying: 0, dead: 1 });
  assert.ok((listed.counts.find((c) => c.kind === 'clock.record')?.pending ?? 0) >= 1);
  const f = listed.failing.find((x) => x.id === id);
  assert.deepEqual([f?.state, f?.last_error], ['dead', 'receiver said no']);
  const revived = JSON.parse(cli('retry', String(id), '--json')) as { state: string; attempt: number };
  assert.deepEqual([revived.state, revived.attempt], ['pending', 0]);
  // The server never heard of the revival: its sweep finds the overdue job. The command made it due at the
  // actual time, which this file's fake clock (started when the file began) lags by however long the file has
  // run: the clock moves past both.
  time.advance(Math.max(0, Date.now() - time.now()) + 31_000);
  await scheduler.runDue();
  const row = (await s.store.get('SELECT state, attempt FROM jobs WHERE id = ?', id)) as { state: string; attempt: number };
  assert.deepEqual(row, { state: 'pending', attempt: 1 });
  assert.throws(() => cli('retry', '999999999'), /cannot retry job 999999999: no such job/);
});

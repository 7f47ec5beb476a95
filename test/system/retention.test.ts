import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { fakeTime } from '../helpers/fake-time';
import { startReceiver, type Receiver } from '../helpers/webhooks';
import { ledgerCheck } from '../helpers/money';
import { RETENTION_LIMITS } from '../../src/web/system/retention';
import { openDatabase } from '../../src/platform/storage/sqlite/open';

const DAY = 86_400_000;
const time = fakeTime();
let s: TestServer;
let rcv: Receiver;
before(async () => {
  rcv = await startReceiver();
  s = await startTestServer({ simDelaySeconds: 3600 }, { realNow: time.now });
});
after(async () => {
  await s.close();
  await rcv.close();
});

const count = async (table: string): Promise<number> => ((await s.store.get(`SELECT count(*) AS n FROM ${table}`)) as { n: number }).n;

/** A succeeded payment with an Idempotency-Key, whose webhook the receiver took. */
async function paidWithWebhook(n: number): Promise<string> {
  const c = await s.request('POST', '/v1/public/payments', { body: { amount: 10_000, method: 'sbp', webhook_url: `${rcv.url}/hook` }, headers: { 'Idempotency-Key': `keep-${n}` } });
  assert.equal(c.status, 201, c.text);
  const id = c.body.payment.id;
  await s.request('POST', `/v1/test/payments/${id}/simulate`, { body: { action: 'open_session' } });
  await s.request('POST', `/v1/test/payments/${id}/simulate`, { body: { action: 'succeed' } });
  return id;
}

test('nothing is kept forever that need not be: old finished jobs, ended deliveries and their attempts, events and idempotency records go; the books stay', async () => {
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push(await paidWithWebhook(i));
  // The test bank's answer jobs come due and run (they find the payments paid): finished jobs.
  assert.equal((await s.request('POST', '/v1/test/clock/advance', { body: { seconds: 3601 } })).status, 200);
  await rcv.waitFor(5, 5000);
  for (let i = 0; i < 200 && (await count('webhook_attempts')) < 5; i++) await new Promise((r) => setTimeout(r, 10));
  const before = { jobs: await count('jobs'), deliveries: await count('webhook_deliveries'), attempts: await count('webhook_attempts'), events: await count('events'), keys: await count('idempotency_keys') };
  assert.ok(before.deliveries >= 5 && before.attempts >= 5 && before.events >= 15 && before.keys === 5, JSON.stringify(before));
  // A day later only the idempotency records are due (24 h); the rest is kept for its window.
  time.advance(DAY + 1000);
  let d = await s.running.app.retention.runOnce();
  assert.equal(d.idempotency_keys, 5);
  assert.equal(d.webhook_deliveries, 0);
  assert.equal(d.events, 0);
  const again = await s.request('POST', '/v1/public/payments', { body: { amount: 10_000, method: 'sbp', webhook_url: `${rcv.url}/hook` }, headers: { 'Idempotency-Key': 'keep-0' } });
  assert.equal(again.status, 201, 'a key 24 hours old is free again: a new payment');
  // A month later: everything ended and older than its window goes, in batches through the group commit.
  const pending = (await s.store.all<{ id: number }>(`SELECT id FROM jobs WHERE state = 'pending'`)).map((j) => j.id);
  assert.ok(pending.length > 0, 'the pending payment has its link-expiry sweep');
  time.advance(31 * DAY);
  d = await s.running.app.retention.runOnce();
  assert.ok(d.webhook_attempts >= 5 && d.webhook_deliveries >= 5 && d.events >= 15, JSON.stringify(d));
  assert.ok(d.jobs > 0, 'finished jobs went');
  assert.equal(await count('webhook_attempts'), 0);
  // Payments, refunds and the ledger are never purged.
  for (const id of ids) assert.equal((await s.request('GET', `/v1/public/payments/${id}`)).body.status, 'succeeded');
  const c = await ledgerCheck(s.dbPath);
  assert.equal(c.code, 0, c.stdout);
  // Pending work is never touched: every job pending before the purge is still there (the scheduler may have run
  // the sweep, now due, meanwhile: a job that ended just now is inside its retention window either way).
  for (const id of pending) assert.ok(await s.store.get('SELECT 1 AS one FROM jobs WHERE id = ?', id), `job ${id} was purged`);
});

test('an event a delivery still waits on stays, however old', async () => {
  const shop = await s.newShop();
  const c = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 10_000, method: 'sbp', webhook_url: 'http://127.0.0.1:9/closed' } });
  await s.request('POST', `/v1/test/payments/${c.body.payment.id}/simulate`, { key: shop.key, body: { action: 'open_session' } });
  await s.request('POST', `/v1/test/payments/${c.body.payment.id}/simulate`, { key: shop.key, body: { action: 'succeed' } });
  for (let i = 0; i < 200 && (await count('webhook_attempts')) === 0; i++) await new Promise((r) => setTimeout(r, 10));
  const waiting = (await s.store.get(`SELECT event_id FROM webhook_deliveries WHERE payment_id = ? AND state = 'pending'`, c.body.payment.id)) as { event_id: string } | undefined;
  assert.ok(waiting, 'the delivery is retrying');
  time.advance(60 * DAY);
  await s.running.app.retention.runOnce();
  assert.ok(await s.store.get('SELECT 1 AS one FROM events WHERE id = ?', waiting!.event_id), 'its event stayed');
});

test('a metrics scrape reads no finished rows: webhook counters are kept as attempts are recorded, pending counts come through partial indexes', async () => {
  const r = await s.request('GET', '/metrics', { key: null });
  assert.equal(r.status, 200);
  assert.match(r.text, /kopek_webhook_attempts_total\{result="succeeded"\} [1-9]/);
  assert.match(r.text, /kopek_webhook_deliveries_ended_total\{state="succeeded"\} [1-9]/);
  assert.match(r.text, /kopek_webhook_deliveries\{state="pending"\} \d+/);
  const queries = [
    `SELECT count(*) AS n FROM webhook_deliveries INDEXED BY webhook_deliveries_due WHERE state = 'pending'`,
    `SELECT kind, sum(attempt = 0), sum(attempt > 0) FROM jobs INDEXED BY jobs_run WHERE state = 'pending' GROUP BY kind`,
    `SELECT kind, count(*) FROM jobs INDEXED BY jobs_failing WHERE state = 'dead' GROUP BY kind`,
  ];
  // The query plans, read on a connection of the test's own (they are SQLite's; PostgreSQL plans without hints).
  if (s.store.engine === 'postgres') return;
  const db = openDatabase(s.dbPath, { readonly: true });
  let plans: string[];
  try {
    plans = queries.map((q) => (db.prepare(`EXPLAIN QUERY PLAN ${q}`).all() as Array<{ detail: string }>).map((x) => x.detail).join('; '));
  } finally {
    db.close();
  }
  for (const p of plans) assert.doesNotMatch(p, /^SCAN (webhook_deliveries|jobs)$|SCAN (webhook_deliveries|jobs)(?! USING)/, p);
});

test('an idempotency record past its retention replays no more, before the sweep too; the sweep deletes it in its time', async () => {
  const shop = await s.newShop();
  const body = { amount: 12_345, order_id: 'kept-answer' };
  const headers = { 'Idempotency-Key': 'ret-answer' };
  const first = await s.request('POST', '/v1/public/payments', { key: shop.key, body, headers });
  assert.equal(first.status, 201, first.text);
  const records = async () => (await s.store.all<{ answer: string }>(`SELECT answer FROM idempotency_keys WHERE key = 'ret-answer'`)).map((r) => JSON.parse(r.answer).payment.id);
  assert.deepEqual(await records(), [first.body.payment.id], 'the record keeps the first answer');
  time.advance(DAY - 1000);
  const replay = await s.request('POST', '/v1/public/payments', { key: shop.key, body, headers });
  assert.equal(replay.status, 200);
  assert.equal(replay.body.payment.id, first.body.payment.id);
  // Two seconds later the record is 24 hours old: no sweep has run, and the key makes a new payment all the same.
  time.advance(2000);
  const fresh = await s.request('POST', '/v1/public/payments', { key: shop.key, body, headers });
  assert.equal(fresh.status, 201, fresh.text);
  assert.notEqual(fresh.body.payment.id, first.body.payment.id);
  assert.deepEqual(await records(), [fresh.body.payment.id], 'the key has one record, of the new payment');
  const again = await s.request('POST', '/v1/public/payments', { key: shop.key, body, headers });
  assert.equal(again.status, 200);
  assert.equal(again.body.payment.id, fresh.body.payment.id, 'the key now replays the new payment');
  // The sweep deletes the record in its time.
  time.advance(DAY + 1000);
  await s.running.app.retention.runOnce();
  assert.equal(((await s.store.get(`SELECT count(*) AS n FROM idempotency_keys WHERE key = 'ret-answer'`)) as { n: number }).n, 0);
  assert.equal((await s.request('GET', `/v1/public/payments/${fresh.body.payment.id}`, { key: shop.key })).status, 200, 'the payment stays');
});

test('the sweep deletes idempotency records oldest first, a bounded slice at a time, up to the first still kept', async () => {
  // More old records than one run may delete (RETENTION_LIMITS: 20 batches of 500), then a few young ones.
  const old = RETENTION_LIMITS.batch_rows * RETENTION_LIMITS.batches_per_run + 700;
  const at = time.now();
  await s.store.tx(async (tx) => {
    const ins = `INSERT INTO idempotency_keys (merchant_id, mode, key, fingerprint, answer, created_at) VALUES ('m-sweep', 'test', ?, '', '{}', ?)`;
    for (let i = 0; i < old; i++) await tx.run(ins, `k-${String(i).padStart(6, '0')}`, at - DAY - 1000);
    for (const i of [5, 7_000, old - 1]) await tx.run(ins, `k-${String(i).padStart(6, '0')}-young`, at);
  });
  const left = async () => ((await s.store.get(`SELECT count(*) AS n FROM idempotency_keys WHERE merchant_id = 'm-sweep'`)) as { n: number }).n;
  const first = await s.running.app.retention.runOnce();
  assert.equal(first.idempotency_keys, RETENTION_LIMITS.batch_rows * RETENTION_LIMITS.batches_per_run, 'one run deletes at most its bound');
  assert.equal(await left(), 700 + 3);
  const second = await s.running.app.retention.runOnce();
  assert.equal(second.idempotency_keys, 700);
  assert.equal(await left(), 3, 'the young records stay');
  const third = await s.running.app.retention.runOnce();
  assert.equal(third.idempotency_keys, 0);
  assert.equal(await left(), 3);
});

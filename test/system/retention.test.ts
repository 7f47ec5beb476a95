import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { fakeTime } from '../helpers/fake-time';
import { startReceiver, type Receiver } from '../helpers/webhooks';
import { ledgerCheck } from '../helpers/money';

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

const count = (table: string): number => (s.store.db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;

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
  for (let i = 0; i < 200 && count('webhook_attempts') < 5; i++) await new Promise((r) => setTimeout(r, 10));
  const before = { jobs: count('jobs'), deliveries: count('webhook_deliveries'), attempts: count('webhook_attempts'), events: count('events'), keys: count('idempotency_keys') };
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
  time.advance(31 * DAY);
  d = await s.running.app.retention.runOnce();
  assert.ok(d.webhook_attempts >= 5 && d.webhook_deliveries >= 5 && d.events >= 15, JSON.stringify(d));
  assert.ok(d.jobs > 0, 'finished jobs went');
  assert.equal(count('webhook_attempts'), 0);
  // Payments, refunds and the ledger are never purged.
  for (const id of ids) assert.equal((await s.request('GET', `/v1/public/payments/${id}`)).body.status, 'succeeded');
  const c = await ledgerCheck(s.dbPath);
  assert.equal(c.code, 0, c.stdout);
  // Pending work is never touched: the pending payment's link-expiry sweep is still there.
  assert.ok((s.store.db.prepare(`SELECT count(*) AS n FROM jobs WHERE state = 'pending'`).get() as { n: number }).n > 0);
});

test('an event a delivery still waits on stays, however old', async () => {
  const shop = s.newShop();
  const c = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 10_000, method: 'sbp', webhook_url: 'http://127.0.0.1:9/closed' } });
  await s.request('POST', `/v1/test/payments/${c.body.payment.id}/simulate`, { key: shop.key, body: { action: 'open_session' } });
  await s.request('POST', `/v1/test/payments/${c.body.payment.id}/simulate`, { key: shop.key, body: { action: 'succeed' } });
  for (let i = 0; i < 200 && count('webhook_attempts') === 0; i++) await new Promise((r) => setTimeout(r, 10));
  const waiting = s.store.db.prepare(`SELECT event_id FROM webhook_deliveries WHERE payment_id = ? AND state = 'pending'`).get(c.body.payment.id) as { event_id: string } | undefined;
  assert.ok(waiting, 'the delivery is retrying');
  time.advance(60 * DAY);
  await s.running.app.retention.runOnce();
  assert.ok(s.store.db.prepare('SELECT 1 FROM events WHERE id = ?').get(waiting!.event_id), 'its event stayed');
});

test('a metrics scrape reads no finished rows: webhook counters are kept as attempts are recorded, pending counts come through partial indexes', async () => {
  const r = await s.request('GET', '/metrics', { key: null });
  assert.equal(r.status, 200);
  assert.match(r.text, /kopek_webhook_attempts_total\{result="succeeded"\} [1-9]/);
  assert.match(r.text, /kopek_webhook_deliveries_ended_total\{state="succeeded"\} [1-9]/);
  assert.match(r.text, /kopek_webhook_deliveries\{state="pending"\} \d+/);
  const plans = [
    `SELECT count(*) AS n FROM webhook_deliveries INDEXED BY webhook_deliveries_due WHERE state = 'pending'`,
    `SELECT kind, sum(attempt = 0), sum(attempt > 0) FROM jobs INDEXED BY jobs_run WHERE state = 'pending' GROUP BY kind`,
    `SELECT kind, count(*) FROM jobs INDEXED BY jobs_failing WHERE state = 'dead' GROUP BY kind`,
  ].map((q) => (s.store.db.prepare(`EXPLAIN QUERY PLAN ${q}`).all() as Array<{ detail: string }>).map((x) => x.detail).join('; '));
  for (const p of plans) assert.doesNotMatch(p, /^SCAN (webhook_deliveries|jobs)$|SCAN (webhook_deliveries|jobs)(?! USING)/, p);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { startTestServer, type TestServer } from '../helpers/server';
import { createPayment, getPayment, simulate, succeededPayment } from '../helpers/payments';
import { receiverPool } from '../helpers/webhooks';
import { sqliteOnly } from '../helpers/pg';

// One view of a payment, built in code: GET answers it read fresh each time, webhooks carry the same object.
// Each test changes a payment in a way its view shows and reads it again right after.
let s: TestServer;
const { receiver, closeAll } = receiverPool();
before(async () => {
  s = await startTestServer({ simDelaySeconds: 60 });
});
after(async () => {
  await closeAll();
  await s.close();
});

test('a status change, a refund and its completion each show on the next GET', async () => {
  const c = await createPayment(s, { amount: 10000 });
  const id = c.payment.id;
  assert.equal((await getPayment(s, id)).status, 'pending');
  await simulate(s, id, { action: 'open_session', method: 'sbp' });
  assert.equal((await getPayment(s, id)).status, 'processing');
  await simulate(s, id, { action: 'succeed' });
  const paid = await getPayment(s, id);
  assert.equal(paid.status, 'succeeded');
  assert.deepEqual(paid.refunds, []);
  const r = await s.request('POST', `/v1/public/payments/${id}/refund`, { body: { amount: 4000 } });
  assert.equal(r.status, 201, r.text);
  const refunded = await getPayment(s, id);
  assert.equal(refunded.refunds.length, 1, 'the new refund shows');
  assert.equal(refunded.refunds[0].status, 'pending');
  assert.equal(refunded.refunds[0].completed_at, null);
  // The refund settles on the bank's clock.
  await s.request('POST', '/v1/test/clock/advance', { body: { seconds: 3600 } });
  const settled = await getPayment(s, id);
  assert.equal(settled.amount_refunded, 4000);
  assert.equal(settled.refunds[0].status, 'succeeded');
  assert.match(settled.refunds[0].completed_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
});

test('GET answers the object the payment.succeeded webhook carries, key for key in the same order', async () => {
  const rcv = await receiver();
  const c = await createPayment(s, { amount: 12345, description: 'Кофе "с молоком"\n\t\\ 😀', metadata: { note: '<&>' }, webhook_url: `${rcv.url}/hook` });
  await simulate(s, c.payment.id, { action: 'open_session', method: 'cards' });
  await simulate(s, c.payment.id, { action: 'succeed' });
  const got = await rcv.waitFor(1);
  const hook = JSON.parse(got.body) as { data?: { object?: unknown }; object?: unknown; payment?: unknown };
  const sent = findPayment(hook, c.payment.id);
  assert.ok(sent, `the webhook carries the payment: ${got.body.slice(0, 200)}`);
  const r = await s.request('GET', `/v1/public/payments/${c.payment.id}`);
  assert.equal(r.status, 200);
  assert.equal(r.text, JSON.stringify(sent), 'the GET answer is the webhook\'s payment, byte for byte');
});

/** The payment object with this id somewhere inside a webhook body. */
function findPayment(v: unknown, id: string): unknown {
  if (!v || typeof v !== 'object') return undefined;
  if ((v as { id?: unknown }).id === id && 'refunds' in v) return v;
  for (const x of Object.values(v)) {
    const found = findPayment(x, id);
    if (found) return found;
  }
  return undefined;
}

test('another shop\'s key gets 404, as for an id that does not exist', async () => {
  const other = await s.newShop();
  const p = await succeededPayment(s, 10000);
  const r = await s.request('GET', `/v1/public/payments/${p.id}`, { key: other.key });
  assert.equal(r.status, 404);
  assert.equal(r.body.error.code, 'not_found');
  const none = await s.request('GET', '/v1/public/payments/00000000-0000-4000-8000-000000000000');
  assert.equal(none.status, 404);
  assert.deepEqual(Object.keys(none.body.error).sort(), Object.keys(r.body.error).sort());
});

test('a change made by another connection (an admin command) shows on the next GET', { skip: sqliteOnly('a second connection to the same SQLite file') }, async () => {
  const c = await createPayment(s, { amount: 10000, description: 'before' });
  const id = c.payment.id;
  assert.equal((await getPayment(s, id)).description, 'before');
  const db = new Database(s.dbPath);
  try {
    db.pragma('busy_timeout = 5000');
    db.prepare('UPDATE payments SET description = ? WHERE id = ?').run('after', id);
    db.prepare('UPDATE shops SET name = ? WHERE id = ?').run('Renamed elsewhere', s.demo.shopId);
  } finally {
    db.close();
  }
  const p = await getPayment(s, id);
  assert.equal(p.description, 'after');
  assert.equal(p.shop_name, 'Renamed elsewhere');
});

test('renaming the shop shows on every payment of it', async () => {
  const a = await createPayment(s, { amount: 10000 });
  const b = await createPayment(s, { amount: 20000 });
  await getPayment(s, a.payment.id);
  await s.store.write(async (tx) => tx.run('UPDATE shops SET name = ? WHERE id = ?', 'Renamed here', s.demo.shopId));
  assert.equal((await getPayment(s, a.payment.id)).shop_name, 'Renamed here');
  assert.equal((await getPayment(s, b.payment.id)).shop_name, 'Renamed here');
});

test('the mode rule: a live key reads its shop\'s test payments, a test key never a live one', async () => {
  const shop = await s.newShop();
  await s.store.write(async (tx) => tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', shop.merchantId));
  const live = await s.newKey(shop.shopId, 'live');
  const testPayment = (await createPayment(s, { amount: 10000 }, shop.key)).payment.id;
  const livePayment = (await createPayment(s, { amount: 10000 }, live.key)).payment.id;
  assert.equal((await getPayment(s, testPayment, live.key)).id, testPayment);
  assert.equal((await getPayment(s, livePayment, live.key)).id, livePayment);
  const r = await s.request('GET', `/v1/public/payments/${livePayment}`, { key: shop.key });
  assert.equal(r.status, 404);
});

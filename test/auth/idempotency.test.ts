import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer, type TestShop } from '../helpers/server';
import { createKey, createShop } from '../../src/cabinet/store';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

const PAYMENTS = '/v1/public/payments';

function create(key: string, idem: string | undefined, body: unknown) {
  return s.request('POST', PAYMENTS, { key, body, headers: idem === undefined ? {} : { 'idempotency-key': idem } });
}

async function paymentCount(shop: TestShop): Promise<number> {
  const r = await s.request('GET', `${PAYMENTS}?limit=200`, { key: shop.key });
  assert.equal(r.status, 200);
  return r.body.items.length;
}

test('a replay answers 200 with the stored body and "idempotent": true; nothing new is created', async () => {
  const shop = s.newShop();
  const first = await create(shop.key, 'order-1', { amount: 10000, order_id: 'A-1' });
  assert.equal(first.status, 201);
  assert.equal(first.body.idempotent, undefined);
  const again = await create(shop.key, 'order-1', { order_id: 'A-1', amount: 10000 });
  assert.equal(again.status, 200);
  assert.equal(again.body.idempotent, true);
  assert.equal(again.body.payment.id, first.body.payment.id);
  assert.deepEqual(again.body.payment, first.body.payment);
  assert.equal(await paymentCount(shop), 1);
});

test('the same key with a different body is 409 idempotent_conflict quoting the key', async () => {
  const shop = s.newShop();
  assert.equal((await create(shop.key, 'k-conflict', { amount: 10000 })).status, 201);
  const r = await create(shop.key, 'k-conflict', { amount: 10001 });
  assert.equal(r.status, 409);
  assert.equal(r.body.error.code, 'idempotent_conflict');
  assert.match(r.body.error.message, /"k-conflict"/);
  assert.equal(await paymentCount(shop), 1);
});

test('Idempotency-Key: 64 characters are accepted, 65 are 400 naming the header, empty is 400', async () => {
  const shop = s.newShop();
  assert.equal((await create(shop.key, 'k'.repeat(64), { amount: 10000 })).status, 201);
  const long = await create(shop.key, 'k'.repeat(65), { amount: 10000 });
  assert.equal(long.status, 400);
  assert.equal(long.body.error.code, 'bad_request');
  assert.equal(long.body.error.param, 'Idempotency-Key');
  const empty = await create(shop.key, '', { amount: 10000 });
  assert.equal(empty.status, 400);
  assert.equal(await paymentCount(shop), 1);
});

test('keys are scoped per merchant: the same key in two merchants makes two objects', async () => {
  const a = s.newShop();
  const b = s.newShop();
  const ra = await create(a.key, 'shared-key', { amount: 10000 });
  const rb = await create(b.key, 'shared-key', { amount: 10000 });
  assert.equal(ra.status, 201);
  assert.equal(rb.status, 201);
  assert.notEqual(ra.body.payment.id, rb.body.payment.id);
  assert.equal(rb.body.payment.shop_id, b.shopId);
});

test('another shop of the same merchant reusing a key gets a conflict, never the first shop\'s object', async () => {
  const a = s.newShop();
  const shop2 = createShop(s.store, a.merchantId, 'Second shop', undefined, Date.now());
  const key2 = createKey(s.store, shop2.id, 'test', undefined, Date.now()).secret;
  assert.equal((await create(a.key, 'merchant-wide', { amount: 10000 })).status, 201);
  const r = await create(key2, 'merchant-wide', { amount: 10000 });
  assert.equal(r.status, 409);
  assert.equal(r.body.error.code, 'idempotent_conflict');
});

test('a refused create stores no record: the key can be used again with a valid body', async () => {
  const shop = s.newShop();
  const bad = await create(shop.key, 'k-retry', { amount: -5 });
  assert.equal(bad.status, 400);
  const good = await create(shop.key, 'k-retry', { amount: 10000 });
  assert.equal(good.status, 201);
});

test('concurrent identical requests make one object; the others are replays of it', async () => {
  const shop = s.newShop();
  const results = await Promise.all(Array.from({ length: 6 }, () => create(shop.key, 'k-race', { amount: 25000 })));
  const statuses = results.map((r) => r.status).sort();
  assert.deepEqual(statuses, [200, 200, 200, 200, 200, 201]);
  assert.equal(new Set(results.map((r) => r.body.payment.id)).size, 1);
  assert.equal(await paymentCount(shop), 1);
});

test('without an Idempotency-Key identical requests make separate objects', async () => {
  const shop = s.newShop();
  const [x, y] = await Promise.all([create(shop.key, undefined, { amount: 10000 }), create(shop.key, undefined, { amount: 10000 })]);
  assert.equal(x.status, 201);
  assert.equal(y.status, 201);
  assert.notEqual(x.body.payment.id, y.body.payment.id);
  assert.equal(await paymentCount(shop), 2);
});

test('the record survives a restart', async () => {
  const shop = s.newShop();
  const first = await create(shop.key, 'k-durable', { amount: 10000 });
  await s.restart();
  const again = await create(shop.key, 'k-durable', { amount: 10000 });
  assert.equal(again.status, 200);
  assert.equal(again.body.payment.id, first.body.payment.id);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { createPayment, eventsOf, getPayment, succeededPayment } from '../helpers/payments';
import { createPaymentTx } from '../../src/money/payments/create';

let s: TestServer;
before(async () => {
  // The test bank answers only when the clock passes a minute, so the helpers drive each move.
  s = await startTestServer({ simDelaySeconds: 60 });
});
after(() => s.close());

test('create answers 201 with the creation response, defaults applied and the simulator block', async () => {
  const r = await s.request('POST', '/v1/public/payments', { body: { amount: 150000 } });
  assert.equal(r.status, 201);
  const p = r.body.payment;
  assert.equal(p.status, 'pending');
  assert.equal(p.currency, 'RUB');
  assert.equal(p.method, 'any');
  assert.match(p.order_id, /^ord_\d+$/);
  assert.match(p.public_id, /^P-\d+$/);
  assert.equal(Date.parse(p.expires_at) - Date.parse(p.created_at), 60 * 60_000);
  assert.equal(r.body.payment_url, `${s.url}/pay/${p.id}`);
  assert.equal(r.body.mode, 'test');
  assert.deepEqual(p.metadata, { mode: 'test', simulator_outcome: 'succeeded', simulator_failure_code: '' });
  assert.equal(r.body.simulator.outcome, 'succeeded');
  assert.equal(r.body.simulator.actions.simulate, `${s.url}/v1/test/payments/${p.id}/simulate`);
  assert.equal(r.body.idempotent, undefined);
});

test('every field is stored; reserved metadata keys overwrite the merchant\'s; description stays out of the bank purpose', async () => {
  const c = await createPayment(s, {
    amount: 777,
    currency: 'RUB',
    method: 'cards',
    order_id: 'order-42',
    customer_id: 'cust-7',
    return_url: 'https://shop.example/done?x=1',
    description: 'Secret gift',
    webhook_url: 'http://127.0.0.1:9/hook',
    ttl_minutes: 5,
    metadata: { color: 'red', mode: 'live', failure_code: 'mine', customer_id: 'other', kind: 'token_binding' },
  });
  const p = await getPayment(s, c.payment.id);
  assert.equal(p.method, 'cards');
  assert.equal(p.order_id, 'order-42');
  assert.equal(p.return_url, 'https://shop.example/done?x=1');
  assert.equal(p.description, 'Secret gift');
  assert.equal(p.purpose, `Оплата заказа ${p.public_id}`);
  assert.ok(!p.purpose.includes('Secret'));
  assert.equal(Date.parse(p.expires_at) - Date.parse(p.created_at), 5 * 60_000);
  assert.deepEqual(p.metadata, {
    color: 'red',
    mode: 'test',
    customer_id: 'cust-7',
    webhook_url: 'http://127.0.0.1:9/hook',
    simulator_outcome: 'succeeded',
    simulator_failure_code: '',
  });
  assert.equal(p.shop_name, 'Demo shop');
  assert.equal(p.processing_until, null);
  assert.equal(p.captured_at, null);
  assert.equal(p.rrn, '');
  assert.deepEqual(p.refunds, []);
});

test('public_id is unique and increasing', async () => {
  const ids: number[] = [];
  for (let i = 0; i < 5; i++) ids.push(Number((await createPayment(s, { amount: 100 })).payment.public_id.slice(2)));
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], `${ids}`);
});

test('payment.created is appended in the creating transaction', async () => {
  const c = await createPayment(s, { amount: 555 });
  const ev = await eventsOf(s, c.payment.id);
  assert.deepEqual(ev.map((e) => e.kind), ['payment.created']);
  assert.deepEqual(ev[0].payload, { id: c.payment.id, amount: 555, status: 'pending' });
  assert.equal(ev[0].webhook_event, null);
});

const BAD: Array<[string, Record<string, unknown>, string]> = [
  ['amount missing', {}, 'amount'],
  ['amount zero', { amount: 0 }, 'amount'],
  ['amount negative', { amount: -5 }, 'amount'],
  ['amount float', { amount: 10.5 }, 'amount'],
  ['amount string', { amount: '100' }, 'amount'],
  ['amount over 10^12', { amount: 1_000_000_000_001 }, 'amount'],
  ['amount beyond 2^53', { amount: 2 ** 53 + 2 }, 'amount'],
  ['currency USD', { amount: 100, currency: 'USD' }, 'currency'],
  ['method unknown', { amount: 100, method: 'cash' }, 'method'],
  ['order_id number', { amount: 100, order_id: 5 }, 'order_id'],
  ['order_id too long', { amount: 100, order_id: 'x'.repeat(129) }, 'order_id'],
  ['customer_id object', { amount: 100, customer_id: {} }, 'customer_id'],
  ['return_url http to a public host', { amount: 100, return_url: 'http://shop.example/' }, 'return_url'],
  ['return_url not a URL', { amount: 100, return_url: 'shop' }, 'return_url'],
  ['return_url ftp', { amount: 100, return_url: 'ftp://shop.example/' }, 'return_url'],
  ['description number', { amount: 100, description: 1 }, 'description'],
  ['webhook_url ftp', { amount: 100, webhook_url: 'ftp://x.example/' }, 'webhook_url'],
  ['ttl_minutes zero', { amount: 100, ttl_minutes: 0 }, 'ttl_minutes'],
  ['ttl_minutes over 7 days', { amount: 100, ttl_minutes: 10081 }, 'ttl_minutes'],
  ['ttl_minutes string', { amount: 100, ttl_minutes: '5' }, 'ttl_minutes'],
  ['metadata array', { amount: 100, metadata: ['a'] }, 'metadata'],
  ['metadata number value', { amount: 100, metadata: { n: 42 } }, 'metadata.n'],
  ['unknown field', { amount: 100, amout: 5 }, 'amout'],
];

/** Rows a refused create must not have written: payments, events and jobs. */
async function writtenRows(): Promise<number[]> {
  const out: number[] = [];
  for (const t of ['payments', 'events', 'jobs']) out.push((await s.store.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${t}`))!.n);
  return out;
}

for (const [name, body, param] of BAD) {
  test(`create rejects ${name}: 400 naming ${param}, nothing written`, async () => {
    const before = await writtenRows();
    const r = await s.request('POST', '/v1/public/payments', { body });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error.code, 'bad_request');
    assert.equal(r.body.error.param, param);
    assert.equal(typeof r.body.error.message, 'string');
    assert.deepEqual(await writtenRows(), before);
  });
}

test('return_url may be loopback http for test keys only; live keys need https everywhere', async () => {
  for (const u of ['http://localhost:3000/r', 'http://127.0.0.1/r', 'http://[::1]:8/r']) {
    await createPayment(s, { amount: 100, return_url: u });
  }
  const live = await s.newShop({ mode: 'live' });
  await s.store.write(async (tx) => tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', live.merchantId));
  const r = await s.request('POST', '/v1/public/payments', { key: live.key, body: { amount: 100, return_url: 'http://localhost/r' } });
  assert.equal(r.status, 400);
  assert.equal(r.body.error.param, 'return_url');
  const w = await s.request('POST', '/v1/public/payments', { key: live.key, body: { amount: 100, webhook_url: 'http://hooks.example/' } });
  assert.equal(w.status, 400);
  assert.equal(w.body.error.param, 'webhook_url');
});

test('malformed JSON and a non-object body are 400 bad_request, nothing written', async () => {
  const before = await writtenRows();
  const r = await s.request('POST', '/v1/public/payments', { body: '{"amount": 1', noSchemaCheck: true });
  assert.equal(r.status, 400);
  assert.equal(r.body.error.code, 'bad_request');
  const a = await s.request('POST', '/v1/public/payments', { body: [1] });
  assert.equal(a.status, 400);
  assert.equal(a.body.error.code, 'bad_request');
  assert.deepEqual(await writtenRows(), before);
});

test('Idempotency-Key: same body replays 200 with idempotent true and creates nothing; different body is 409', async () => {
  const headers = { 'Idempotency-Key': 'order-1-attempt' };
  const first = await s.request('POST', '/v1/public/payments', { body: { amount: 4200, order_id: 'o1' }, headers });
  assert.equal(first.status, 201);
  const again = await s.request('POST', '/v1/public/payments', { body: { order_id: 'o1', amount: 4200 }, headers });
  assert.equal(again.status, 200);
  assert.equal(again.body.idempotent, true);
  assert.equal(again.body.payment.id, first.body.payment.id);
  const count = (await s.store.get<{ n: number }>(`SELECT COUNT(*) AS n FROM payments WHERE order_id = 'o1'`))!;
  assert.equal(count.n, 1);
  const conflict = await s.request('POST', '/v1/public/payments', { body: { amount: 4300, order_id: 'o1' }, headers });
  assert.equal(conflict.status, 409);
  assert.equal(conflict.body.error.code, 'idempotent_conflict');
});

test('a replay of a payment that has failed carries failure_code and failure_message', async () => {
  const headers = { 'Idempotency-Key': 'fails-later' };
  const first = await s.request('POST', '/v1/public/payments', { body: { amount: 1001 }, headers });
  const id = first.body.payment.id;
  await s.request('POST', `/v1/test/payments/${id}/simulate`, { body: { action: 'open_session', method: 'cards' } });
  const f = await s.request('POST', `/v1/test/payments/${id}/simulate`, { body: { action: 'fail' } });
  assert.equal(f.body.metadata.failure_code, 'do_not_honor');
  const again = await s.request('POST', '/v1/public/payments', { body: { amount: 1001 }, headers });
  assert.equal(again.status, 200);
  assert.equal(again.body.failure_code, 'do_not_honor');
  assert.match(again.body.failure_message, /declined/);
});

test('GET of an unknown, malformed or other shop\'s id is 404; the other shop sees its own', async () => {
  const mine = await succeededPayment(s, 10000);
  await s.request('POST', `/v1/public/payments/${mine.id}/refund`, { body: { amount: 100 } });
  const other = await s.newShop();
  const paths: Array<[string, string, unknown?]> = [
    ['GET', `/v1/public/payments/${mine.id}`],
    ['POST', `/v1/public/payments/${mine.id}/cancel`],
    ['POST', `/v1/public/payments/${mine.id}/refund`, { amount: 1 }],
    ['POST', `/v1/test/payments/${mine.id}/simulate`, { action: 'expire' }],
  ];
  for (const [method, path, body] of paths) {
    const r = await s.request(method, path, { key: other.key, body });
    assert.equal(r.status, 404, `${method} ${path}: ${r.text}`);
    assert.equal(r.body.error.code, 'not_found');
  }
  const reg = await s.request('GET', '/v1/public/payments', { key: other.key });
  assert.deepEqual(reg.body.items, []);
  const refs = await s.request('GET', '/v1/public/refunds', { key: other.key });
  assert.deepEqual(refs.body.items, []);
  for (const id of ['not-a-uuid', '00000000-0000-4000-8000-000000000000']) {
    const r = await s.request('GET', `/v1/public/payments/${id}`);
    assert.equal(r.status, 404);
  }
});

test('the row a create hands on (built, not read back) equals the row stored, defaults and key order included', async () => {
  const app = s.running.app;
  const input = { merchantId: s.demo.merchantId, shopId: s.demo.shopId, mode: 'test' as const, amount: 12345, currency: 'RUB', method: 'cards' as const, description: 'd', orderId: 'o-1', metadata: { a: 'b' } };
  const made = await app.store.tx(async (tx) => createPaymentTx(app, tx, input));
  const stored = (await app.store.get<Record<string, unknown>>('SELECT * FROM payments WHERE id = ?', made.id))!;
  assert.deepEqual(Object.keys(made), Object.keys(stored));
  assert.deepEqual({ ...made }, stored);
});

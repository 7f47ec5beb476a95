import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer, type TestShop } from '../helpers/server';
import { receiverPool, type Receiver } from '../helpers/webhooks';
import { addEndpoint } from '../../src/money/webhooks/store';

// POST /v1/test/trigger with `set`: the fields of the triggered object, checked as the object's own create checks
// them, over real HTTP against a real server and database. The test bank answers only after 600 s: every trigger
// finishes without it.

let s: TestServer;
let shop: TestShop;
let rcv: Receiver;
const pool = receiverPool();

before(async () => {
  s = await startTestServer({ simDelaySeconds: 600 });
  shop = await s.newShop();
  rcv = await pool.receiver();
  await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url + '/hook' }, Date.now());
});
after(async () => {
  await pool.closeAll();
  await s.close();
});

async function trigger(event: string, set: unknown, key = shop.key) {
  return s.request('POST', '/v1/test/trigger', { key, body: { event, set } });
}

/** The webhook body the shop's endpoint received for `eventId` (waits for its delivery). */
async function delivered(eventId: string): Promise<any> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const hit = rcv.received.map((x) => JSON.parse(x.body)).find((b) => b.id === eventId);
    if (hit) return hit;
    if (Date.now() > deadline) assert.fail(`no delivery of ${eventId}`);
    await new Promise((res) => setTimeout(res, 20));
  }
}

async function countRows(table: string, shopId: string): Promise<number> {
  return (await s.store.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table} WHERE shop_id = ?`, shopId))!.n;
}

test("set gives the triggered payment its amount, order_id, description and metadata; the API and the webhook show them", async () => {
  const r = await trigger('payment.succeeded', { amount: 25_000, order_id: 'A-1001', description: 'Two teas', metadata: { cart: '42', kopek_trigger: 'mine' } });
  assert.equal(r.status, 201, r.text);
  const p = r.body.payment;
  assert.deepEqual([p.status, p.amount, p.order_id, p.description, p.metadata.cart], ['succeeded', 25_000, 'A-1001', 'Two teas', '42']);
  // The trigger's own mark stays, so a handler can still tell a triggered payment.
  assert.equal(p.metadata.kopek_trigger, 'payment.succeeded');
  const got = await s.request('GET', `/v1/public/payments/${p.id}`, { key: shop.key });
  assert.deepEqual([got.body.amount, got.body.order_id, got.body.metadata.cart], [25_000, 'A-1001', '42']);
  const hook = await delivered(r.body.event_id);
  assert.equal(hook.event, 'payment.succeeded');
  assert.deepEqual([hook.data.amount, hook.data.order_id, hook.data.metadata.cart], [25_000, 'A-1001', '42']);
});

test('set on every kind of object: a refund of the set amount, a payout, a subscription and a token', async () => {
  const refunded = await trigger('payment.refunded', { amount: 7_700, order_id: 'R-1' });
  assert.equal(refunded.status, 201, refunded.text);
  assert.deepEqual([refunded.body.payment.amount, refunded.body.payment.order_id, refunded.body.refund.amount], [7_700, 'R-1', 7_700]);
  assert.equal((await delivered(refunded.body.event_id)).data.amount_refunded, 7_700);

  const payout = await trigger('payout.succeeded', { amount: 123_400, phone: '+79991112233', full_name: '  Ivan Petrov ' });
  assert.equal(payout.status, 201, payout.text);
  assert.equal(payout.body.payout.amount, 123_400);
  assert.deepEqual(payout.body.payout.recipient, { phone: '+79991112233', bank_id: '100000000004', full_name: 'Ivan Petrov' });
  // The payment that funds it is the trigger's own, with none of the payout's fields.
  assert.equal(payout.body.payment.description, 'kopek trigger payout.succeeded');
  assert.equal((await delivered(payout.body.event_id)).data.amount, 123_400);

  const sub = await trigger('subscription.charge_succeeded', { amount: 4_900, plan_name: 'Gold', customer_ref: 'cust-9', customer_email: 'buyer@example.com' });
  assert.equal(sub.status, 201, sub.text);
  const v = sub.body.subscription;
  assert.deepEqual([v.amount, v.plan_name, v.customer_ref, v.customer_email, sub.body.payment.amount], [4_900, 'Gold', 'cust-9', 'buyer@example.com', 4_900]);
  const subHook = (await delivered(sub.body.event_id)).data;
  assert.deepEqual([subHook.amount, subHook.plan_name, subHook.customer_ref, subHook.latest_charge.amount], [4_900, 'Gold', 'cust-9', 4_900]);

  const token = await trigger('token.cancelled', { customer_ref: 'cust-10' });
  assert.equal(token.status, 201, token.text);
  assert.equal(token.body.token.customer_ref, 'cust-10');
  assert.equal((await delivered(token.body.event_id)).data.customer_ref, 'cust-10');
});

test('an amount picks the failure the test bank gives: payment.failed with 02, payout.failed with 02', async () => {
  const p = await trigger('payment.failed', { amount: 10_002 });
  assert.equal(p.status, 201, p.text);
  assert.equal(p.body.payment.metadata.failure_code, 'insufficient_funds');
  const po = await trigger('payout.failed', { amount: 10_002 });
  assert.equal(po.status, 201, po.text);
  assert.equal(po.body.payout.fail_reason, 'recipient_not_in_sbp');
  // A null field is not set, as the creates read it; so is a null set.
  const plain = await trigger('payment.cancelled', { amount: null });
  assert.equal(plain.status, 201, plain.text);
  assert.equal(plain.body.payment.amount, 10_000);
  assert.equal((await trigger('payment.cancelled', null)).status, 201);
});

test("a bad value gets the 400 the object's own create gives, its param under set", async () => {
  const fresh = await s.newShop();
  const cases: Array<[string, Record<string, unknown>, string, string]> = [
    ['/v1/public/payments', { amount: 0 }, 'payment.succeeded', 'amount'],
    ['/v1/public/payments', { amount: '25000' }, 'payment.cancelled', 'amount'],
    ['/v1/public/payments', { amount: 100, order_id: 'x'.repeat(129) }, 'payment.expired', 'order_id'],
    ['/v1/public/payments', { amount: 100, metadata: { n: 5 } }, 'payment.succeeded', 'metadata.n'],
    ['/v1/public/payouts', { method: 'payouts_sbp', amount: 100, phone: '8999', bank_id: '100000000004', full_name: 'A' }, 'payout.succeeded', 'phone'],
    ['/v1/public/tokens', { customer_ref: 'c', customer_email: 'not-an-address' }, 'token.activated', 'customer_email'],
  ];
  for (const [route, createBody, event, field] of cases) {
    const create = await s.request('POST', route, { key: fresh.key, body: createBody });
    assert.equal(create.status, 400, create.text);
    assert.equal(create.body.error.param, field);
    const { method: _m, bank_id: _b, ...set } = createBody;
    if (field !== 'amount' && route === '/v1/public/payments') delete set.amount;
    const r = await trigger(event, set, fresh.key);
    assert.equal(r.status, 400, `${event} ${JSON.stringify(set)}: ${r.text}`);
    assert.equal(r.body.error.code, create.body.error.code);
    assert.equal(r.body.error.param, `set.${field}`);
    const said = (m: string) => m.replace(/^Cannot POST \S+: /, '');
    assert.equal(said(r.body.error.message), said(create.body.error.message));
  }
  assert.equal(await countRows('payments', fresh.shopId), 0);
  assert.equal(await countRows('events', fresh.shopId), 0);
});

test('a field the event\'s object does not take, a set that is not an object, or an amount that leads elsewhere: 400 naming it, nothing written', async () => {
  const fresh = await s.newShop();
  const cases: Array<[string, unknown, string, string]> = [
    ['payment.succeeded', { currency: 'USD' }, 'set.currency', 'Cannot trigger payment.succeeded with "currency" set: the payment it makes takes amount, order_id, description, metadata'],
    ['payout.failed', { order_id: 'A-1' }, 'set.order_id', 'Cannot trigger payout.failed with "order_id" set: the payout it makes takes amount, phone, full_name'],
    ['token.activated', { amount: 500 }, 'set.amount', 'Cannot trigger token.activated with "amount" set: the token it makes takes customer_ref, customer_email'],
    ['subscription.activated', { trial_days: 7 }, 'set.trial_days', 'Cannot trigger subscription.activated with "trial_days" set: the subscription it makes takes amount, plan_name, customer_ref, customer_email'],
    ['payment.succeeded', 'amount=5', 'set', 'Cannot POST /v1/test/trigger: field "set" must be an object of the fields to set, got "amount=5"'],
    ['payment.succeeded', { amount: 10_001 }, 'set.amount', 'Cannot trigger payment.succeeded with amount 10001: its kopeck part is 01 and the test bank refuses it (do_not_honor); give an amount whose kopeck part is 00 or 05 to 99'],
    ['payment.failed', { amount: 10_000 }, 'set.amount', 'Cannot trigger payment.failed with amount 10000: its kopeck part is 00 and the test bank confirms it; give an amount whose kopeck part is 01 (do_not_honor) or 02 (insufficient_funds)'],
    ['subscription.past_due', { amount: 5_003 }, 'set.amount', 'Cannot trigger subscription.past_due with amount 5003: its kopeck part is 03 and the test bank asks the buyer to confirm it; give an amount whose kopeck part is 00 or 05 to 99'],
    ['payout.succeeded', { amount: 10_003 }, 'set.amount', 'Cannot trigger payout.succeeded with amount 10003: its kopeck part is 03 and the payout router refuses it; give an amount whose kopeck part is 00 or 04 to 99'],
  ];
  for (const [event, set, param, message] of cases) {
    const r = await trigger(event, set, fresh.key);
    assert.equal(r.status, 400, `${event}: ${r.text}`);
    assert.equal(r.body.error.code, 'bad_request');
    assert.equal(r.body.error.param, param);
    assert.equal(r.body.error.message, message);
  }
  for (const table of ['payments', 'payouts', 'subscriptions', 'tokens', 'events']) assert.equal(await countRows(table, fresh.shopId), 0, table);
});

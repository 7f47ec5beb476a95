import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer, type TestShop } from '../helpers/server';
import { startReceiver, waitForLog, type Receiver } from '../helpers/webhooks';
import { addEndpoint } from '../../src/money/webhooks/store';
import { advanceDays, advanceTo, createSubscription, get, payThroughHelper, webhooksOf } from '../helpers/recurrent';

let s: TestServer;
let rcv: Receiver;
before(async () => {
  s = await startTestServer();
  rcv = await startReceiver();
});
after(async () => {
  await rcv.close();
  await s.close();
});

const DAY = 86_400_000;

async function activeSubscription(shop: TestShop, body: Record<string, unknown> = {}): Promise<any> {
  const c = await createSubscription(s, { amount: 20000, customer_ref: 'cust-life', ...body }, shop.key);
  await payThroughHelper(s, c.initial_payment.id, shop.key);
  const sub = await get(s, `/v1/public/subscriptions/${c.subscription.id}`, shop.key);
  assert.equal(sub.status, 'active');
  return sub;
}

function cancel(shop: TestShop, id: string, body?: Record<string, unknown>) {
  return s.request('POST', `/v1/public/subscriptions/${id}/cancel`, { key: shop.key, body });
}

test('three failed charges in a row cancel it: T, T + 1 day, T + 4 days, with every webhook delivered', async () => {
  const shop = await s.newShop();
  await addEndpoint(s.store, { shopId: shop.shopId, url: `${rcv.url}/hooks` }, Date.now());
  const sub = await activeSubscription(shop);
  await s.request('POST', `/v1/test/tokens/${sub.token_id}/outcomes`, { body: { outcomes: ['fail:insufficient_funds', 'fail', 'fail:limit_exceeded'] }, key: shop.key });
  const T = Date.parse(sub.next_charge_at);
  await advanceTo(s, T, shop.key);
  let now = await get(s, `/v1/public/subscriptions/${sub.id}`, shop.key);
  assert.equal(now.status, 'past_due');
  assert.equal(now.next_charge_at, new Date(T + DAY).toISOString());
  await advanceDays(s, 1, shop.key);
  now = await get(s, `/v1/public/subscriptions/${sub.id}`, shop.key);
  assert.equal(now.status, 'past_due');
  assert.equal(now.failed_charges, 2);
  assert.equal(now.next_charge_at, new Date(T + 4 * DAY).toISOString());
  await advanceDays(s, 3, shop.key);
  now = await get(s, `/v1/public/subscriptions/${sub.id}`, shop.key);
  assert.equal(now.status, 'cancelled');
  assert.equal(now.cancel_reason, 'charge_failed');
  assert.equal(now.next_charge_at, null);
  assert.equal(now.failed_charges, 3);
  const sched = await get(s, `/v1/public/subscriptions/${sub.id}/schedule`, shop.key);
  assert.deepEqual(sched.charges.slice(1).map((c: any) => [c.attempt, c.status, c.failure_code, c.created_at]), [
    [1, 'failed', 'insufficient_funds', new Date(T).toISOString()],
    [2, 'failed', 'do_not_honor', new Date(T + DAY).toISOString()],
    [3, 'failed', 'limit_exceeded', new Date(T + 4 * DAY).toISOString()],
  ]);
  assert.deepEqual(sched.upcoming, []);
  const expected = [
    'subscription.activated',
    'subscription.charge_failed',
    'subscription.past_due',
    'subscription.charge_failed',
    'subscription.charge_failed',
    'subscription.cancelled',
  ];
  assert.deepEqual(await webhooksOf(s, sub.id), expected);
  const items = await waitForLog(s, '', (xs) => xs.filter((x) => x.event.startsWith('subscription.') && x.status === 'succeeded').length === expected.length, { key: shop.key });
  // Each was delivered. The webhooks of one change are attempted side by side and the log lists attempts by
  // their start, so two of them may stand in either order there (the event log above keeps theirs).
  assert.deepEqual(items.filter((x) => x.event.startsWith('subscription.')).map((x) => x.event).sort(), [...expected].sort());
  const bodies = rcv.received.map((r) => JSON.parse(r.body)).filter((b) => b.data?.id === sub.id);
  const last = bodies.find((b) => b.event === 'subscription.cancelled');
  assert.equal(last.data.status, 'cancelled');
  assert.equal(last.data.latest_charge.failure_code, 'limit_exceeded');
  // The webhook's latest charge is the one GET shows, field for field.
  assert.deepEqual(last.data.latest_charge, now.latest_charge);
  const failed = bodies.filter((b) => b.event === 'subscription.charge_failed');
  assert.deepEqual(
    failed.map((b) => b.data.latest_charge),
    sched.charges.slice(1),
  );
  // Nothing is charged after the cancellation.
  await advanceDays(s, 40, shop.key);
  assert.equal((await get(s, `/v1/public/subscriptions/${sub.id}/schedule`, shop.key)).charges.length, 4);
});

test('cancel while pending closes the initial payment and the unbound token', async () => {
  const shop = await s.newShop();
  const c = await createSubscription(s, { amount: 20000, customer_ref: 'cust-p' }, shop.key);
  const r = await cancel(shop, c.subscription.id, { reason: 'changed my mind' });
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, { status: 'cancelled' });
  const sub = await get(s, `/v1/public/subscriptions/${c.subscription.id}`, shop.key);
  assert.equal(sub.status, 'cancelled');
  assert.equal(sub.cancel_reason, 'changed my mind');
  assert.equal((await get(s, `/v1/public/payments/${c.initial_payment.id}`, shop.key)).status, 'cancelled');
  assert.equal((await get(s, `/v1/public/tokens/${sub.token_id}`, shop.key)).status, 'cancelled');
  assert.deepEqual(await webhooksOf(s, sub.id), ['subscription.cancelled']);
});

test('cancel while active stops the charges; the bound token stays usable', async () => {
  const shop = await s.newShop();
  const sub = await activeSubscription(shop);
  const r = await cancel(shop, sub.id);
  assert.deepEqual(r.body, { status: 'cancelled' });
  const got = await get(s, `/v1/public/subscriptions/${sub.id}`, shop.key);
  assert.equal(got.cancel_reason, 'merchant_request');
  assert.equal(got.next_charge_at, null);
  await advanceDays(s, 70, shop.key);
  assert.equal((await get(s, `/v1/public/subscriptions/${sub.id}/schedule`, shop.key)).charges.length, 1);
  assert.equal((await get(s, `/v1/public/tokens/${sub.token_id}`, shop.key)).status, 'active');
  assert.deepEqual(await webhooksOf(s, sub.id), ['subscription.activated', 'subscription.cancelled']);
});

test('cancel while past_due stops the retries', async () => {
  const shop = await s.newShop();
  const sub = await activeSubscription(shop);
  await s.request('POST', `/v1/test/tokens/${sub.token_id}/outcomes`, { body: { outcomes: ['fail'] }, key: shop.key });
  await advanceTo(s, Date.parse(sub.next_charge_at), shop.key);
  assert.equal((await get(s, `/v1/public/subscriptions/${sub.id}`, shop.key)).status, 'past_due');
  assert.deepEqual((await cancel(shop, sub.id)).body, { status: 'cancelled' });
  await advanceDays(s, 5, shop.key);
  assert.equal((await get(s, `/v1/public/subscriptions/${sub.id}/schedule`, shop.key)).charges.length, 2, 'no retry after the cancel');
});

test('cancel when already cancelled answers cancelled again and sends nothing new', async () => {
  const shop = await s.newShop();
  const sub = await activeSubscription(shop);
  await cancel(shop, sub.id, { reason: 'first' });
  const again = await cancel(shop, sub.id, { reason: 'second' });
  assert.equal(again.status, 200);
  assert.deepEqual(again.body, { status: 'cancelled' });
  assert.equal((await get(s, `/v1/public/subscriptions/${sub.id}`, shop.key)).cancel_reason, 'first');
  assert.equal((await webhooksOf(s, sub.id)).filter((e) => e === 'subscription.cancelled').length, 1);
});

test("cancelling the subscription's token cancels the subscription", async () => {
  const shop = await s.newShop();
  const sub = await activeSubscription(shop);
  const r = await s.request('POST', `/v1/public/tokens/${sub.token_id}/cancel`, { key: shop.key });
  assert.deepEqual(r.body, { status: 'cancelled' });
  const got = await get(s, `/v1/public/subscriptions/${sub.id}`, shop.key);
  assert.equal(got.status, 'cancelled');
  assert.equal(got.cancel_reason, 'token_cancelled');
});

test('create validates its fields; tpay takes no trial', async () => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ customer_ref: 'c' }, 'amount'],
    [{ amount: 100 }, 'customer_ref'],
    [{ amount: 100, customer_ref: 'c', method: 'tpay', trial_days: 7 }, 'trial_days'],
    [{ amount: 100, customer_ref: 'c', trial_days: 366 }, 'trial_days'],
    [{ amount: 100, customer_ref: 'c', period: 'fortnight' }, 'period'],
    [{ amount: 100, customer_ref: 'c', interval_count: 0 }, 'interval_count'],
    [{ amount: 100, customer_ref: 'c', interval_count: 366 }, 'interval_count'],
    [{ amount: 100, customer_ref: 'c', method: 'bankpay' }, 'method'],
    [{ amount: 100, customer_ref: 'c', currency: 'USD' }, 'currency'],
    [{ amount: 100, customer_ref: 'c', plan: 'typo' }, 'plan'],
  ];
  const shop = await s.newShop();
  const written = async () => {
    const counts: number[] = [];
    for (const t of ['subscriptions', 'tokens', 'payments', 'events', 'jobs']) {
      counts.push((await s.store.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${t} WHERE shop_id = ?`, shop.shopId))!.n);
    }
    return counts;
  };
  const before = await written();
  for (const [body, param] of cases) {
    const r = await s.request('POST', '/v1/public/subscriptions', { body, key: shop.key });
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.body.error.code, 'bad_request');
    assert.equal(r.body.error.param, param, JSON.stringify(body));
  }
  assert.deepEqual(await written(), before, 'a refused subscription writes nothing');
  const ok = await createSubscription(s, { amount: 100, customer_ref: 'c', method: 'tpay' });
  assert.equal(ok.subscription.method, 'tpay');
  assert.equal(ok.subscription.period, 'month');
  assert.equal(ok.subscription.interval_count, 1);
});

test('scopes: a key or shop without api:recurrent:bind gets 403 scope_required naming it', async () => {
  const chargeOnly = await s.newKey(s.demo.shopId, 'test', 'api:recurrent:charge');
  const r = await s.request('POST', '/v1/public/subscriptions', { body: { amount: 100, customer_ref: 'c' }, key: chargeOnly.key });
  assert.equal(r.status, 403);
  assert.equal(r.body.error.code, 'scope_required');
  assert.match(r.body.error.message, /api:recurrent:bind/);
  const shop = await s.newShop({ shopScopes: 'api:recurrent:charge' });
  const key = await s.newKey(shop.shopId, 'test', 'api:recurrent:bind,api:recurrent:charge');
  assert.equal((await s.request('GET', '/v1/public/subscriptions', { key: key.key })).status, 403);
});

test('creating a subscription needs api:recurrent:charge too, on the key and on the shop: it charges on its own later', async () => {
  const bindOnly = await s.newKey(s.demo.shopId, 'test', 'api:recurrent:bind');
  const r = await s.request('POST', '/v1/public/subscriptions', { body: { amount: 100, customer_ref: 'c' }, key: bindOnly.key });
  assert.equal(r.status, 403);
  assert.equal(r.body.error.code, 'scope_required');
  assert.match(r.body.error.message, /api:recurrent:charge/);
  const shop = await s.newShop({ shopScopes: 'api:recurrent:bind' });
  const key = await s.newKey(shop.shopId, 'test', 'api:recurrent:bind,api:recurrent:charge');
  const refused = await s.request('POST', '/v1/public/subscriptions', { body: { amount: 100, customer_ref: 'c' }, key: key.key });
  assert.equal(refused.status, 403);
  assert.match(refused.body.error.message, /api:recurrent:charge/);
  assert.equal((await s.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM subscriptions WHERE shop_id = ?', shop.shopId))!.n, 0);
  // Reading and cancelling stay with api:recurrent:bind alone.
  assert.equal((await s.request('GET', '/v1/public/subscriptions', { key: key.key })).status, 200);
});

test('list and get: register envelope, customer_ref filter, another shop sees nothing', async () => {
  const shop = await s.newShop();
  const a = await createSubscription(s, { amount: 100, customer_ref: 'alice' }, shop.key);
  const b = await createSubscription(s, { amount: 200, customer_ref: 'bob' }, shop.key);
  const all = await get(s, '/v1/public/subscriptions', shop.key);
  assert.deepEqual(all.items.map((x: any) => x.id), [b.subscription.id, a.subscription.id]);
  assert.equal(all.next_cursor, null);
  const alice = await get(s, '/v1/public/subscriptions?customer_ref=alice&status=pending', shop.key);
  assert.deepEqual(alice.items.map((x: any) => x.id), [a.subscription.id]);
  const page = await get(s, '/v1/public/subscriptions?limit=1', shop.key);
  assert.ok(page.next_cursor);
  const other = await s.newShop();
  assert.equal((await s.request('GET', `/v1/public/subscriptions/${a.subscription.id}`, { key: other.key })).status, 404);
  assert.equal((await s.request('GET', `/v1/public/subscriptions/${a.subscription.id}/schedule`, { key: other.key })).status, 404);
  assert.equal((await cancel(other, a.subscription.id)).status, 404);
  const sched = await get(s, `/v1/public/subscriptions/${a.subscription.id}/schedule`, shop.key);
  assert.deepEqual(sched.upcoming, [], 'a pending subscription has no charges planned');
});

test('create is idempotent with a key: one subscription, one initial payment', async () => {
  const shop = await s.newShop();
  const headers = { 'Idempotency-Key': 'sub-create-1' };
  const body = { amount: 4500, customer_ref: 'cust-idem', plan_name: 'Basic' };
  const first = await s.request('POST', '/v1/public/subscriptions', { body, headers, key: shop.key });
  assert.equal(first.status, 201);
  const again = await s.request('POST', '/v1/public/subscriptions', { body, headers, key: shop.key });
  assert.equal(again.status, 200);
  assert.equal(again.body.idempotent, true);
  assert.equal(again.body.subscription.id, first.body.subscription.id);
  assert.equal(again.body.initial_payment.id, first.body.initial_payment.id);
  assert.equal((await get(s, '/v1/public/subscriptions', shop.key)).items.length, 1);
});

test('test reset deletes the shop’s test subscriptions, tokens and their charges', async () => {
  const shop = await s.newShop();
  const sub = await activeSubscription(shop);
  const r = await s.request('POST', '/v1/test/reset', { key: shop.key });
  assert.equal(r.status, 200);
  assert.equal(r.body.deleted.subscriptions, 1);
  assert.equal(r.body.deleted.tokens, 1);
  assert.equal(r.body.deleted.recurrent_payments, 1);
  assert.equal((await s.request('GET', `/v1/public/subscriptions/${sub.id}`, { key: shop.key })).status, 404);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { payWith, postForm } from '../helpers/pay-page';
import { activeToken, advanceSeconds, createToken, get, payThroughHelper, streamOf, webhooksOf } from '../helpers/recurrent';

let s: TestServer;
/** The test bank answers 5 s after a session opens, so a buyer has time to enter a card on the page. */
const SIM_DELAY_S = 5;

before(async () => {
  s = await startTestServer({ simDelaySeconds: SIM_DELAY_S });
});
after(() => s.close());

test('a card token binds with a 1 RUB verification on its hosted page and keeps brand and last 4 only', async () => {
  const c = await createToken(s, { customer_ref: 'cust-card', customer_email: 'buyer@example.com', amount: 99900 });
  assert.equal(c.card.status, 'pending');
  assert.equal(c.card.customer_ref, 'cust-card');
  assert.equal(c.pay_url, `${s.url}/pay/${c.binding_payment_id}`);
  const payment = await get(s, `/v1/public/payments/${c.binding_payment_id}`);
  assert.equal(payment.amount, 100, 'cards ignore amount: 1 RUB verification');
  assert.equal(payment.method, 'cards');
  assert.equal(payment.metadata.token_id, c.card.id);
  assert.equal(payment.metadata.kind, 'token_binding');

  const page = await payWith(s, c.binding_payment_id, 'cards');
  assert.equal(page.status, 200);
  assert.match(page.text, /Привязка карты/);
  const posted = await postForm(s, `/pay/${c.binding_payment_id}/card`, { number: '4111 1111 1111 1111', exp: '12/40', cvc: '123', holder: 'IVAN PETROV' });
  assert.equal(posted.status, 303);

  const t = await get(s, `/v1/public/tokens/${c.card.id}`);
  assert.equal(t.status, 'active');
  assert.equal(t.card_brand, 'visa');
  assert.equal(t.card_mask, '1111');
  // A token bound when the mask was stored as "**** 1111" answers the same one format.
  await s.store.write(async (tx) => {
    await tx.run('UPDATE tokens SET card_mask = ? WHERE id = ?', '**** 1111', c.card.id);
  });
  assert.equal((await get(s, `/v1/public/tokens/${c.card.id}`)).card_mask, '1111');
  assert.equal(t.customer_email, 'buyer@example.com');
  assert.equal(t.last_charged_at, null);
  assert.deepEqual(await webhooksOf(s, c.card.id), ['token.activated']);
  assert.deepEqual(
    (await streamOf(s, c.card.id)).map((e) => e.payload.status),
    ['pending', 'active'],
  );
  const data = JSON.parse(
    (await s.store.get<{ webhook_data: string }>(`SELECT webhook_data FROM events WHERE webhook_event = 'token.activated' AND ${s.store.engine === 'postgres' ? `(payload::json ->> 'id')` : `json_extract(payload, '$.id')`} = ?`, c.card.id))!.webhook_data,
  );
  assert.deepEqual(data, t, 'the webhook carries the token as GET shows it');
  const verified = await get(s, `/v1/public/payments/${c.binding_payment_id}`);
  assert.deepEqual(
    verified.refunds.map((r: any) => [r.amount, r.reason]),
    [[100, 'Verification payment returned']],
    'the 1 RUB verification goes back to the buyer',
  );
});

test('sbp and tpay tokens need amount and bind with that first charge', async () => {
  const missing = await s.request('POST', '/v1/public/tokens', { body: { customer_ref: 'c', method: 'sbp' } });
  assert.equal(missing.status, 400);
  assert.equal(missing.body.error.param, 'amount');
  const c = await createToken(s, { customer_ref: 'cust-sbp', method: 'tpay', amount: 50000 });
  const payment = await get(s, `/v1/public/payments/${c.binding_payment_id}`);
  assert.equal(payment.amount, 50000);
  assert.equal(payment.method, 'tpay');
  await payThroughHelper(s, c.binding_payment_id);
  const t = await get(s, `/v1/public/tokens/${c.card.id}`);
  assert.equal(t.status, 'active');
  assert.equal(t.card_mask, '');
});

test('create validates every field', async () => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{}, 'customer_ref'],
    [{ customer_ref: '   ' }, 'customer_ref'],
    [{ customer_ref: 'c', method: 'bankpay' }, 'method'],
    [{ customer_ref: 'c', customer_email: 'not-an-email' }, 'customer_email'],
    [{ customer_ref: 'c', return_url: 'http://shop.example/back' }, 'return_url'],
    [{ customer_ref: 'c', method: 'sbp', amount: '100' }, 'amount'],
    [{ customer_ref: 'c', cutsomer: 'typo' }, 'cutsomer'],
  ];
  const shop = await s.newShop();
  const written = async (): Promise<number[]> => {
    const counts: number[] = [];
    for (const t of ['tokens', 'payments', 'events']) counts.push((await s.store.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${t} WHERE shop_id = ?`, shop.shopId))!.n);
    return counts;
  };
  const before = await written();
  for (const [body, param] of cases) {
    const r = await s.request('POST', '/v1/public/tokens', { body, key: shop.key });
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.body.error.code, 'bad_request');
    assert.equal(r.body.error.param, param, JSON.stringify(body));
  }
  assert.deepEqual(await written(), before, 'a refused token writes no token, payment or event');
});

test('a charge opens its session at once, settles through the simulator and is kept as last_charged_at', async () => {
  const t = await activeToken(s, { customer_ref: 'cust-charge' });
  const r = await s.request('POST', `/v1/public/tokens/${t.id}/charge`, { body: { amount: 25000, order_id: 'renewal-7', description: 'Renewal' } });
  assert.equal(r.status, 201, r.text);
  assert.deepEqual(Object.keys(r.body).sort(), ['amount', 'id', 'status']);
  assert.equal(r.body.amount, 25000);
  assert.equal(r.body.status, 'processing');
  await advanceSeconds(s, SIM_DELAY_S);
  const p = await get(s, `/v1/public/payments/${r.body.id}`);
  assert.equal(p.status, 'succeeded');
  assert.equal(p.method, 'recurrent');
  assert.equal(p.order_id, 'renewal-7');
  assert.equal(p.metadata.kind, 'token_charge');
  assert.equal(p.metadata.token_id, t.id);
  const after = await get(s, `/v1/public/tokens/${t.id}`);
  assert.equal(after.last_charged_at, p.captured_at);

  const failed = await s.request('POST', `/v1/public/tokens/${t.id}/charge`, { body: { amount: 25002 } });
  assert.equal(failed.status, 201);
  await advanceSeconds(s, SIM_DELAY_S);
  const fp = await get(s, `/v1/public/payments/${failed.body.id}`);
  assert.equal(fp.status, 'failed', 'magic amounts apply to charges');
  assert.equal(fp.metadata.failure_code, 'insufficient_funds');
  assert.equal((await get(s, `/v1/public/tokens/${t.id}`)).last_charged_at, p.captured_at, 'a failed charge is not a charge');
});

test('a charge is idempotent with a key; a replay tells the current status', async () => {
  const t = await activeToken(s, { customer_ref: 'cust-idem' });
  const headers = { 'Idempotency-Key': `charge-${t.id}` };
  const first = await s.request('POST', `/v1/public/tokens/${t.id}/charge`, { body: { amount: 7000 }, headers });
  assert.equal(first.status, 201);
  await advanceSeconds(s, SIM_DELAY_S);
  const again = await s.request('POST', `/v1/public/tokens/${t.id}/charge`, { body: { amount: 7000 }, headers });
  assert.equal(again.status, 200);
  assert.deepEqual(again.body, { id: first.body.id, status: 'succeeded', amount: 7000, idempotent: true });
  const other = await s.request('POST', `/v1/public/tokens/${t.id}/charge`, { body: { amount: 7001 }, headers });
  assert.equal(other.status, 409);
  assert.equal(other.body.error.code, 'idempotent_conflict');
  const n = (await s.store.get<{ n: number }>(`SELECT COUNT(*) AS n FROM recurrent_payments WHERE token_id = ? AND kind = 'token_charge'`, t.id))!;
  assert.equal(n.n, 1);
});

test('the outcome queue decides the next charges before magic amounts, then magic amounts apply again', async () => {
  const t = await activeToken(s, { customer_ref: 'cust-queue' });
  const set = await s.request('POST', `/v1/test/tokens/${t.id}/outcomes`, { body: { outcomes: ['fail:card_expired', 'succeed'] } });
  assert.equal(set.status, 200, set.text);
  assert.deepEqual(set.body.outcomes, ['fail:card_expired', 'succeed']);
  assert.equal(set.body.id, t.id);
  const statuses: string[] = [];
  // 10002 would fail insufficient_funds by its magic amount: the queue wins twice, then the amount decides.
  for (let i = 0; i < 3; i++) {
    const r = await s.request('POST', `/v1/public/tokens/${t.id}/charge`, { body: { amount: 10002 } });
    assert.equal(r.status, 201);
    await advanceSeconds(s, SIM_DELAY_S);
    const p = await get(s, `/v1/public/payments/${r.body.id}`);
    statuses.push(`${p.status}:${p.metadata.failure_code ?? ''}`);
  }
  assert.deepEqual(statuses, ['failed:card_expired', 'succeeded:', 'failed:insufficient_funds']);
  const bad = await s.request('POST', `/v1/test/tokens/${t.id}/outcomes`, { body: { outcomes: ['fail:nope'] } });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.param, 'outcomes');
  const notArray = await s.request('POST', `/v1/test/tokens/${t.id}/outcomes`, { body: { outcomes: 'succeed' } });
  assert.equal(notArray.status, 400);
});

test('cancel: pending and active tokens cancel (webhook token.cancelled); charging or cancelling again is 409', async () => {
  const pending = await createToken(s, { customer_ref: 'cust-cancel' });
  const r1 = await s.request('POST', `/v1/public/tokens/${pending.card.id}/cancel`);
  assert.equal(r1.status, 200);
  assert.deepEqual(r1.body, { status: 'cancelled' });
  assert.equal((await get(s, `/v1/public/payments/${pending.binding_payment_id}`)).status, 'cancelled', 'the binding page closes');

  const t = await activeToken(s, { customer_ref: 'cust-cancel' });
  const r2 = await s.request('POST', `/v1/public/tokens/${t.id}/cancel`);
  assert.deepEqual(r2.body, { status: 'cancelled' });
  assert.deepEqual(await webhooksOf(s, t.id), ['token.activated', 'token.cancelled']);
  const charge = await s.request('POST', `/v1/public/tokens/${t.id}/charge`, { body: { amount: 1000 } });
  assert.equal(charge.status, 409);
  assert.equal(charge.body.error.code, 'invalid_state');
  assert.match(charge.body.error.message, /cancelled/);
  const again = await s.request('POST', `/v1/public/tokens/${t.id}/cancel`);
  assert.equal(again.status, 409);
  const outcomes = await s.request('POST', `/v1/test/tokens/${t.id}/outcomes`, { body: { outcomes: ['succeed'] } });
  assert.equal(outcomes.status, 409, 'no outcome queue for a token that is never charged again');
  assert.equal(outcomes.body.error.code, 'invalid_state');
  assert.match(outcomes.body.error.message, /cancelled/);
  assert.equal((await s.store.get<{ outcomes: string }>('SELECT outcomes FROM tokens WHERE id = ?', t.id))!.outcomes, '[]');
  const pendingCharge = await createToken(s, { customer_ref: 'cust-cancel' });
  const r3 = await s.request('POST', `/v1/public/tokens/${pendingCharge.card.id}/charge`, { body: { amount: 1000 } });
  assert.equal(r3.status, 409);
  assert.match(r3.body.error.message, /pending/);
});

test('list: customer_ref filter, status filter, register pagination, newest first', async () => {
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push((await createToken(s, { customer_ref: 'cust-list' })).card.id);
  const p1 = await get(s, '/v1/public/tokens?customer_ref=cust-list&limit=2');
  assert.deepEqual(p1.items.map((t: any) => t.id), [ids[2], ids[1]]);
  assert.ok(p1.next_cursor);
  const p2 = await get(s, `/v1/public/tokens?customer_ref=cust-list&limit=2&cursor=${p1.next_cursor}`);
  assert.deepEqual(p2.items.map((t: any) => t.id), [ids[0]]);
  assert.equal(p2.next_cursor, null);
  const active = await get(s, '/v1/public/tokens?status=active');
  assert.ok(active.items.length > 0 && active.items.every((t: any) => t.status === 'active'));
  const bad = await s.request('GET', '/v1/public/tokens?status=bound');
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.param, 'status');
});

test('scopes: bind to create, read and cancel, charge to charge; on the key and on the shop', async () => {
  const t = await activeToken(s, { customer_ref: 'cust-scope' });
  const bindOnly = await s.newKey(s.demo.shopId, 'test', 'api:recurrent:bind');
  const charge = await s.request('POST', `/v1/public/tokens/${t.id}/charge`, { body: { amount: 1000 }, key: bindOnly.key });
  assert.equal(charge.status, 403);
  assert.equal(charge.body.error.code, 'scope_required');
  assert.match(charge.body.error.message, /api:recurrent:charge/);
  const chargeOnly = await s.newKey(s.demo.shopId, 'test', 'api:recurrent:charge');
  const create = await s.request('POST', '/v1/public/tokens', { body: { customer_ref: 'x' }, key: chargeOnly.key });
  assert.equal(create.status, 403);
  assert.match(create.body.error.message, /api:recurrent:bind/);
  assert.equal((await s.request('POST', `/v1/public/tokens/${t.id}/charge`, { body: { amount: 1000 }, key: chargeOnly.key })).status, 201);
  // The key asks for the scope, but its shop does not have it.
  const shop = await s.newShop({ shopScopes: 'api:reports:read', keyScopes: 'api:reports:read' });
  const key = await s.newKey(shop.shopId, 'test', 'api:recurrent:bind,api:recurrent:charge');
  const noShopScope = await s.request('POST', '/v1/public/tokens', { body: { customer_ref: 'x' }, key: key.key });
  assert.equal(noShopScope.status, 403);
  assert.equal(noShopScope.body.error.code, 'scope_required');
});

test("another shop's token is not found", async () => {
  const t = await activeToken(s, { customer_ref: 'cust-iso' });
  const other = await s.newShop();
  for (const [method, path] of [
    ['GET', `/v1/public/tokens/${t.id}`],
    ['POST', `/v1/public/tokens/${t.id}/cancel`],
    ['POST', `/v1/public/tokens/${t.id}/charge`],
  ]) {
    const r = await s.request(method, path, { key: other.key, body: method === 'POST' && path.endsWith('charge') ? { amount: 100 } : undefined });
    assert.equal(r.status, 404, `${method} ${path}`);
  }
  assert.equal((await get(s, '/v1/public/tokens?customer_ref=cust-iso', other.key)).items.length, 0);
});

test('a not-found message quotes at most 64 characters of the id, for tokens, subscriptions and payments alike', async () => {
  const long = 'x'.repeat(300);
  for (const path of [`/v1/public/tokens/${long}`, `/v1/public/subscriptions/${long}`, `/v1/public/payments/${long}`]) {
    const r = await s.request('GET', path);
    assert.equal(r.status, 404, path.slice(0, 30));
    assert.ok(r.body.error.message.includes(`"${'x'.repeat(64)}"`), r.body.error.message.slice(0, 120));
  }
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { advance, createPayment, eventsOf, getPayment, simulate } from '../helpers/payments';
import { buyerRedirectUrl, findPaymentForPage, payWithMethod } from '../../src/money/payments/handlers';
import { buyerResolve } from '../../src/banks/simulator/test-bank';

let s: TestServer;
before(async () => {
  // The test bank answers only when the clock passes a minute, so the helpers drive each move.
  s = await startTestServer({ simDelaySeconds: 60 });
});
after(() => s.close());

test('any → choose method (pending, no webhook) → open session (processing, TTL) → succeed (webhook)', async () => {
  const c = await createPayment(s, { amount: 10000, webhook_url: 'http://127.0.0.1:9/hook' });
  const id = c.payment.id;
  const chosen = await simulate(s, id, { action: 'choose_method', method: 'sbp' });
  assert.equal(chosen.status, 200);
  assert.equal(chosen.body.status, 'pending');
  assert.equal(chosen.body.method, 'sbp');
  assert.equal(chosen.body.processing_until, null);
  const open = await simulate(s, id, { action: 'open_session' });
  assert.equal(open.body.status, 'processing');
  const clock = await s.request('GET', '/v1/test/clock');
  const ttl_ms = Date.parse(open.body.processing_until) - Date.parse(clock.body.now);
  assert.ok(ttl_ms > 19 * 60_000 && ttl_ms <= 20 * 60_000, `sbp session ttl ${ttl_ms}`);
  const ok = await simulate(s, id, { action: 'succeed' });
  assert.equal(ok.body.status, 'succeeded');
  assert.match(ok.body.rrn, /^\d{12}$/);
  assert.ok(ok.body.captured_at && ok.body.finalized_at);
  const ev = await eventsOf(s, id);
  assert.deepEqual(
    ev.map((e) => [e.kind, e.webhook_event]),
    [
      ['payment.created', null],
      ['payment.method_chosen', null],
      ['payment.status_changed', null],
      ['payment.status_changed', 'payment.succeeded'],
    ],
  );
  assert.deepEqual(ev[2].payload, { id, status: 'processing' });
  assert.deepEqual(ev[3].payload, { id, status: 'succeeded' });
  assert.equal(ev[3].webhook_url, 'http://127.0.0.1:9/hook');
  assert.deepEqual(ev[3].webhook_data, await getPayment(s, id));
});

test('session lifetimes per method', async () => {
  const ttl: Record<string, number> = { sbp: 20, cards: 15, tpay: 20, bankpay: 20, recurrent: 5 };
  for (const [method, minutes] of Object.entries(ttl)) {
    const c = await createPayment(s, { amount: 10004, method });
    const open = await simulate(s, c.payment.id, { action: 'open_session' });
    const clock = await s.request('GET', '/v1/test/clock');
    const got = Date.parse(open.body.processing_until) - Date.parse(clock.body.now);
    assert.ok(got > (minutes - 1) * 60_000 && got <= minutes * 60_000, `${method}: ${got}`);
  }
});

test('fail stores failure_code and bank_failure_code and sends payment.failed', async () => {
  const c = await createPayment(s, { amount: 10003, method: 'cards' });
  await simulate(s, c.payment.id, { action: 'open_session' });
  const f = await simulate(s, c.payment.id, { action: 'fail', failure_code: 'card_expired' });
  assert.equal(f.body.status, 'failed');
  assert.equal(f.body.metadata.failure_code, 'card_expired');
  assert.equal(f.body.metadata.bank_failure_code, '54');
  assert.equal((await eventsOf(s, c.payment.id)).at(-1)!.webhook_event, 'payment.failed');
});

test('invalid transitions are 409 invalid_state naming the status; bad actions are 400', async () => {
  const c = await createPayment(s, { amount: 10000 });
  const id = c.payment.id;
  const noMethod = await simulate(s, id, { action: 'open_session' });
  assert.equal(noMethod.status, 409);
  assert.match(noMethod.body.error.message, /pending/);
  const early = await simulate(s, id, { action: 'succeed' });
  assert.equal(early.status, 409);
  assert.equal(early.body.error.code, 'invalid_state');
  assert.equal((await simulate(s, id, { action: 'dance' })).body.error.param, 'action');
  assert.equal((await simulate(s, id, {})).body.error.param, 'action');
  assert.equal((await simulate(s, id, { action: 'choose_method' })).body.error.param, 'method');
  assert.equal((await simulate(s, id, { action: 'fail', failure_code: 'nope' })).body.error.param, 'failure_code');
  const untouched = await getPayment(s, id);
  assert.equal(untouched.status, 'pending');
  assert.equal(untouched.method, 'any', 'refused actions change nothing');
  assert.deepEqual((await eventsOf(s, id)).map((e) => e.kind), ['payment.created']);
  const fixed = await createPayment(s, { amount: 10000, method: 'cards' });
  const change = await simulate(s, fixed.payment.id, { action: 'choose_method', method: 'sbp' });
  assert.equal(change.status, 409);
  await simulate(s, id, { action: 'open_session', method: 'tpay' });
  await simulate(s, id, { action: 'succeed' });
  const again = await simulate(s, id, { action: 'fail' });
  assert.equal(again.status, 409);
  assert.match(again.body.error.message, /succeeded/);
});

test('cancel: pending → cancelled with webhook; anything else 409 naming the status', async () => {
  const c = await createPayment(s, { amount: 10000 });
  const r = await s.request('POST', `/v1/public/payments/${c.payment.id}/cancel`);
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, { status: 'cancelled' });
  assert.equal((await getPayment(s, c.payment.id)).status, 'cancelled');
  assert.equal((await eventsOf(s, c.payment.id)).at(-1)!.webhook_event, 'payment.cancelled');
  const twice = await s.request('POST', `/v1/public/payments/${c.payment.id}/cancel`);
  assert.equal(twice.status, 409);
  assert.match(twice.body.error.message, /cancelled/);
  const p = await createPayment(s, { amount: 10000, method: 'sbp' });
  await simulate(s, p.payment.id, { action: 'open_session' });
  const proc = await s.request('POST', `/v1/public/payments/${p.payment.id}/cancel`);
  assert.equal(proc.status, 409);
  assert.match(proc.body.error.message, /processing/);
  const body = await s.request('POST', `/v1/public/payments/${p.payment.id}/cancel`, { body: { why: 'x' } });
  assert.equal(body.status, 400);
  assert.equal(body.body.error.param, 'why');
});

test('link lifetime ends on the test clock: pending → expired link_expired', async () => {
  const shop = await s.newShop();
  const c = await createPayment(s, { amount: 10000, ttl_minutes: 2 }, shop.key);
  await advance(s, 100, shop.key);
  assert.equal((await getPayment(s, c.payment.id, shop.key)).status, 'pending');
  await advance(s, 30, shop.key);
  const p = await getPayment(s, c.payment.id, shop.key);
  assert.equal(p.status, 'expired');
  assert.equal(p.metadata.failure_code, 'link_expired');
  assert.equal((await eventsOf(s, c.payment.id)).at(-1)!.webhook_event, 'payment.expired');
});

test('session lifetime ends on the test clock: processing → expired session_expired (pending outcome 04)', async () => {
  const shop = await s.newShop();
  const c = await createPayment(s, { amount: 10004, method: 'cards' }, shop.key);
  await simulate(s, c.payment.id, { action: 'open_session' }, shop.key);
  await advance(s, 14 * 60, shop.key);
  assert.equal((await getPayment(s, c.payment.id, shop.key)).status, 'processing');
  await advance(s, 61, shop.key);
  const p = await getPayment(s, c.payment.id, shop.key);
  assert.equal(p.status, 'expired');
  assert.equal(p.metadata.failure_code, 'session_expired');
});

test('a session opened before the link ends is not expired by the link lifetime', async () => {
  const shop = await s.newShop();
  const c = await createPayment(s, { amount: 10003, method: 'sbp', ttl_minutes: 1 }, shop.key);
  await simulate(s, c.payment.id, { action: 'open_session' }, shop.key);
  await advance(s, 120, shop.key);
  assert.equal((await getPayment(s, c.payment.id, shop.key)).status, 'processing');
});

test('expire helper: pending → link_expired, processing → session_expired', async () => {
  const a = await createPayment(s, { amount: 10000 });
  assert.equal((await simulate(s, a.payment.id, { action: 'expire' })).body.metadata.failure_code, 'link_expired');
  const b = await createPayment(s, { amount: 10003, method: 'sbp' });
  await simulate(s, b.payment.id, { action: 'open_session' });
  assert.equal((await simulate(s, b.payment.id, { action: 'expire' })).body.metadata.failure_code, 'session_expired');
});

test('the simulate helper is for test keys only: a live key gets 404', async () => {
  const live = await s.newShop({ mode: 'live' });
  await s.store.write(async (tx) => tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', live.merchantId));
  const c = await createPayment(s, { amount: 10000 }, live.key);
  const r = await simulate(s, c.payment.id, { action: 'expire' }, live.key);
  assert.equal(r.status, 404);
  assert.equal(r.body.error.code, 'not_found');
  assert.equal((await getPayment(s, c.payment.id, live.key)).status, 'pending');
  assert.deepEqual((await eventsOf(s, c.payment.id)).map((e) => e.kind), ['payment.created']);
});

test('buyer functions drive the page flow and keep only the card mask', async () => {
  const app = s.running.app;
  const c = await createPayment(s, { amount: 10003, return_url: 'https://shop.example/back?order=7' });
  const id = c.payment.id;
  assert.equal(await findPaymentForPage(app.store, 'nope'), undefined);
  assert.equal((await findPaymentForPage(app.store, id))!.status, 'pending');
  await assert.rejects(payWithMethod(app, '00000000-0000-4000-8000-000000000000', 'sbp'), { status: 404 });
  await assert.rejects(payWithMethod(app, id, 'recurrent'), { status: 400 });
  const paying = await payWithMethod(app, id, 'sbp');
  assert.equal(paying.status, 'processing');
  assert.equal(paying.method, 'sbp');
  assert.equal((await payWithMethod(app, id, 'sbp')).status, 'processing', 'paying twice with the open method is harmless');
  await assert.rejects(payWithMethod(app, id, 'cards'), { status: 409, code: 'invalid_state' });
  await assert.rejects(
    buyerResolve(app, id, { outcome: 'succeeded', card: { brand: 'visa', mask: '4111111111111111', holder: 'A B' } }),
    { status: 400 },
  );
  const done = await buyerResolve(app, id, { outcome: 'succeeded', card: { brand: 'visa', mask: '411111******1111', holder: 'IVAN PETROV' } });
  assert.equal(done.status, 'succeeded');
  assert.equal(done.customer_card_mask, '411111******1111');
  assert.equal(done.customer_card_holder, 'IVAN PETROV');
  await assert.rejects(buyerResolve(app, id, { outcome: 'failed' }), { status: 409 });
  const url = new URL(buyerRedirectUrl(done)!);
  assert.equal(url.origin + url.pathname, 'https://shop.example/back');
  assert.equal(url.searchParams.get('order'), '7');
  assert.equal(url.searchParams.get('payment_id'), id);
  assert.equal(url.searchParams.get('status'), 'succeeded');
  assert.equal(buyerRedirectUrl({ id, status: 'processing', return_url: 'https://x.example/' }), null);
  assert.equal(buyerRedirectUrl({ id, status: 'failed', return_url: '' }), null);
});

test('a buyer decline fails with the planned code of the magic amount', async () => {
  const app = s.running.app;
  const c = await createPayment(s, { amount: 10002, method: 'cards' });
  await payWithMethod(app, c.payment.id, 'cards');
  const f = await buyerResolve(app, c.payment.id, { outcome: 'failed' });
  assert.equal(f.metadata.failure_code, 'insufficient_funds');
  assert.equal(f.metadata.bank_failure_code, '51');
});

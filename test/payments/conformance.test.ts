import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { advance, createPayment, getPayment, simulate, succeededPayment } from '../helpers/payments';

// Regression tests of the contract audit: each is named after what broke.

let s: TestServer;
before(async () => {
  // The test bank and refunds answer only when the clock passes a minute, so pending states can be seen.
  s = await startTestServer({ simDelaySeconds: 60 });
});
after(() => s.close());

test('a refund when pending refunds already hold the whole amount says nothing is left instead of "amount 0 exceeds refundable 0"', async () => {
  const p = await succeededPayment(s, 10000);
  const first = await s.request('POST', `/v1/public/payments/${p.id}/refund`, { body: {} });
  assert.equal(first.status, 201);
  assert.equal(first.body.status, 'pending');
  for (const body of [{}, { amount: 0 }, { amount: 1 }]) {
    const r = await s.request('POST', `/v1/public/payments/${p.id}/refund`, { body });
    assert.equal(r.status, 422, JSON.stringify(body));
    assert.equal(r.body.error.code, 'amount_exceeds_refundable');
    assert.equal(r.body.error.param, 'amount');
    assert.match(r.body.error.message, /^Cannot refund payment ".+": nothing is left to refund/);
  }
  // A partial refund still names both numbers.
  const q = await succeededPayment(s, 5000);
  await s.request('POST', `/v1/public/payments/${q.id}/refund`, { body: { amount: 3000 } });
  const over = await s.request('POST', `/v1/public/payments/${q.id}/refund`, { body: { amount: 2500 } });
  assert.equal(over.status, 422);
  assert.match(over.body.error.message, /amount 2500 exceeds refundable 2000/);
});

test('simulate fail with an expiry or payout code is 400: a failed payment never carries session_expired', async () => {
  const c = await createPayment(s, { amount: 10000, method: 'sbp' });
  const id = c.payment.id;
  assert.equal((await simulate(s, id, { action: 'open_session' })).status, 200);
  for (const code of ['session_expired', 'link_expired', 'bank_unknown', 'recipient_not_in_sbp', 'nonsense']) {
    const r = await simulate(s, id, { action: 'fail', failure_code: code });
    assert.equal(r.status, 400, code);
    assert.equal(r.body.error.param, 'failure_code');
    assert.match(r.body.error.message, /must be one of do_not_honor, insufficient_funds, card_expired, invalid_card, limit_exceeded, three_ds_failed, processing_error/);
  }
  assert.equal((await getPayment(s, id)).status, 'processing');
  const ok = await simulate(s, id, { action: 'fail', failure_code: 'card_expired' });
  assert.equal(ok.status, 200);
  assert.equal(ok.body.metadata.failure_code, 'card_expired');
});

test('a payment replay carries failure_code and failure_message even before the payment fails', async () => {
  const headers = { 'Idempotency-Key': 'replay-shape' };
  const first = await s.request('POST', '/v1/public/payments', { body: { amount: 10001, method: 'sbp' }, headers });
  assert.equal(first.status, 201);
  assert.equal('failure_code' in first.body, false, 'the first answer has no refusal');
  const again = await s.request('POST', '/v1/public/payments', { body: { amount: 10001, method: 'sbp' }, headers });
  assert.equal(again.status, 200);
  assert.deepEqual(again.body, { ...first.body, idempotent: true, failure_code: '', failure_message: '' });
  await simulate(s, first.body.payment.id, { action: 'open_session' });
  await advance(s, 61);
  const failed = await s.request('POST', '/v1/public/payments', { body: { amount: 10001, method: 'sbp' }, headers });
  assert.deepEqual(failed.body, {
    ...first.body,
    idempotent: true,
    failure_code: 'do_not_honor',
    failure_message: 'The bank declined the operation without giving a reason',
  });
});

test('a live key paging with include_test=1 never sees a payment created after the first page', async () => {
  const live = await s.newShop({ mode: 'live' });
  await s.store.write(async (tx) => tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', live.merchantId));
  const testKey = await s.newKey(live.shopId, 'test');
  // Test payments live a day ahead on the shop's test clock, so a new live payment sorts behind them.
  await advance(s, 86_400, testKey.key);
  const before: string[] = [];
  for (let i = 0; i < 3; i++) before.push((await createPayment(s, { amount: 100 + i }, testKey.key)).payment.id);
  for (let i = 0; i < 2; i++) before.push((await createPayment(s, { amount: 200 + i }, live.key)).payment.id);
  const seen: string[] = [];
  let late = '';
  let cursor: string | null = null;
  for (let n = 0; n < 10; n++) {
    const r = await s.request('GET', `/v1/public/payments?include_test=1&limit=2${cursor ? `&cursor=${cursor}` : ''}`, { key: live.key });
    assert.equal(r.status, 200, r.text);
    seen.push(...r.body.items.map((i: { id: string }) => i.id));
    if (n === 0) late = (await createPayment(s, { amount: 300 }, live.key)).payment.id;
    cursor = r.body.next_cursor;
    if (!cursor) break;
  }
  assert.equal(new Set(seen).size, seen.length, 'no repeats');
  assert.deepEqual(new Set(seen), new Set(before), 'every row of the first page\'s time, and not the one created after it');
  assert.ok(!seen.includes(late));
  const fresh = await s.request('GET', '/v1/public/payments?include_test=1', { key: live.key });
  assert.ok(fresh.body.items.some((i: { id: string }) => i.id === late), 'a new first page shows it');
});

test('cancel with a body field names it and says the request takes none (not "allowed: ")', async () => {
  const c = await createPayment(s, { amount: 10000 });
  const r = await s.request('POST', `/v1/public/payments/${c.payment.id}/cancel`, { body: { reason: 'changed mind' } });
  assert.equal(r.status, 400);
  assert.equal(r.body.error.param, 'reason');
  assert.equal(r.body.error.message, 'Cannot POST /v1/public/payments/:id/cancel: unknown field "reason"; this request takes no body fields');
  assert.equal((await getPayment(s, c.payment.id)).status, 'pending');
});

test('a payment created with method recurrent opens its bank session at once and the test bank answers it', async () => {
  const c = await s.request('POST', '/v1/public/payments', { body: { amount: 4200, method: 'recurrent' } });
  assert.equal(c.status, 201, c.text);
  assert.equal(c.body.payment.status, 'processing');
  const g = await s.request('GET', `/v1/public/payments/${c.body.payment.id}`);
  assert.equal(g.body.status, 'processing');
  assert.ok(g.body.processing_until, 'processing_until is set once the session opens');
  // Written once, already processing, yet the stream still tells both steps in order.
  const events = await s.store.all<{ kind: string; payload: string }>(`SELECT kind, payload FROM events WHERE payment_id = ? ORDER BY seq`, c.body.payment.id);
  assert.deepEqual(
    events.map((e) => [e.kind, JSON.parse(e.payload).status]),
    [
      ['payment.created', 'pending'],
      ['payment.status_changed', 'processing'],
    ],
  );
  const adv = await s.request('POST', '/v1/test/clock/advance', { body: { seconds: 120 } });
  assert.equal(adv.status, 200);
  const after = await s.request('GET', `/v1/public/payments/${c.body.payment.id}`);
  assert.equal(after.body.status, 'succeeded');
});

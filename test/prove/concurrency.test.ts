import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer, type TestResponse } from '../helpers/server';
import { balanceOf, ledgerCheck, paidPayment } from '../helpers/money';
import { sbpBody } from '../helpers/payouts';
import { startReceiver, type Receiver } from '../helpers/webhooks';
import { addEndpoint } from '../../src/money/webhooks/store';

// Races the domain tests do not already run: 50 partial refunds, 100 payouts on one balance and 6 identical
// payment creates are covered in test/payments, test/payouts and test/auth. These cross the domains.
let s: TestServer;
let rcv: Receiver;
before(async () => {
  s = await startTestServer({ simDelaySeconds: 30 });
  rcv = await startReceiver();
});
after(async () => {
  await rcv.close();
  await s.close();
});

async function count(sql: string, ...args: unknown[]): Promise<number> {
  return (await s.store.get<{ n: number }>(sql, ...args))!.n;
}

function refund(key: string, id: string, body: unknown, headers?: Record<string, string>): Promise<TestResponse> {
  return s.request('POST', `/v1/public/payments/${id}/refund`, { key, body, headers });
}

test('refunds and payouts racing for one balance: exactly what was there is reserved, never more, and the ledger proves it', async () => {
  const shop = await s.newShop();
  const p1 = await paidPayment(s, shop.key, 100_000);
  const p2 = await paidPayment(s, shop.key, 100_000);
  // 600 000 asked of 200 000 in 10 000 pieces, interleaved: refunds reserve from `available` as payouts do.
  const asks: Array<Promise<TestResponse>> = [];
  for (let i = 0; i < 20; i++) {
    asks.push(refund(shop.key, p1, { amount: 10_000 }));
    asks.push(s.request('POST', '/v1/public/payouts', { key: shop.key, body: sbpBody(10_000) }));
    asks.push(refund(shop.key, p2, { amount: 10_000 }));
  }
  const replies = await Promise.all(asks);
  const won = replies.filter((r) => r.status === 201);
  for (const r of replies.filter((x) => x.status !== 201)) {
    assert.equal(r.status, 422, r.text);
    assert.ok(['insufficient_funds', 'amount_exceeds_refundable'].includes(r.body.error.code), r.text);
  }
  // Every refusal came when a 10 000 piece no longer fitted, and what was left only shrank: nothing is left.
  assert.equal(won.length, 20, `${won.length} of 60 asks won`);
  const bal = await balanceOf(s, shop.key);
  assert.deepEqual([bal.balance, bal.available], [200_000, 0]);
  assert.equal(await count(`SELECT count(*) AS n FROM refunds WHERE payment_id IN (?, ?)`, p1, p2) + await count(`SELECT count(*) AS n FROM payouts WHERE shop_id = ?`, shop.shopId), 20);
  for (const p of [p1, p2]) {
    assert.ok(await count(`SELECT COALESCE(sum(amount), 0) AS n FROM refunds WHERE payment_id = ?`, p) <= 100_000);
  }

  await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: 60 } });
  const settled = await balanceOf(s, shop.key);
  assert.deepEqual([settled.balance, settled.available], [0, 0]);
  const c = await ledgerCheck(s.dbPath);
  assert.equal(c.code, 0, c.stdout);
});

test('full refunds (no amount) racing on one payment: exactly one wins, one payment.refunded', async () => {
  const shop = await s.newShop();
  const p = await paidPayment(s, shop.key, 50_000);
  const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => refund(shop.key, p, i % 2 ? {} : { amount: 0 })));
  const won = replies.filter((r) => r.status === 201);
  assert.equal(won.length, 1, replies.map((r) => r.status).join(','));
  assert.equal(won[0].body.amount, 50_000);
  for (const r of replies.filter((x) => x.status !== 201)) assert.equal(r.body.error.code, 'amount_exceeds_refundable');
  await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: 60 } });
  const g = await s.request('GET', `/v1/public/payments/${p}`, { key: shop.key });
  assert.deepEqual([g.body.status, g.body.amount_refunded, g.body.refunds.length], ['refunded', 50_000, 1]);
  assert.equal(await count(`SELECT count(*) AS n FROM events WHERE payment_id = ? AND webhook_event = 'payment.refunded'`, p), 1);
});

test('one Idempotency-Key sent concurrently to refund, payout and batch creates makes exactly one object each', async () => {
  const shop = await s.newShop();
  const p = await paidPayment(s, shop.key, 90_000);
  const same = (n: number, f: () => Promise<TestResponse>) => Promise.all(Array.from({ length: n }, f));

  const refunds = await same(6, () => refund(shop.key, p, { amount: 1_000 }, { 'Idempotency-Key': 'race-refund' }));
  assert.deepEqual(refunds.map((r) => r.status).sort(), [200, 200, 200, 200, 200, 201]);
  assert.equal(new Set(refunds.map((r) => r.body.id)).size, 1);
  assert.equal(await count(`SELECT count(*) AS n FROM refunds WHERE payment_id = ?`, p), 1);

  const payouts = await same(6, () => s.request('POST', '/v1/public/payouts', { key: shop.key, body: sbpBody(2_000), headers: { 'Idempotency-Key': 'race-payout' } }));
  assert.deepEqual(payouts.map((r) => r.status).sort(), [200, 200, 200, 200, 200, 201]);
  assert.equal(new Set(payouts.map((r) => r.body.payout.id)).size, 1);

  const items = [sbpBody(3_000), sbpBody(4_000)].map(({ method: _m, ...rest }) => rest);
  const batches = await same(6, () =>
    s.request('POST', '/v1/public/payouts/batch', { key: shop.key, body: { method: 'payouts_sbp', items }, headers: { 'Idempotency-Key': 'race-batch' } }),
  );
  assert.deepEqual(batches.map((r) => r.status).sort(), [200, 200, 200, 200, 200, 201]);
  assert.equal(await count(`SELECT count(*) AS n FROM payouts WHERE shop_id = ?`, shop.shopId), 3);
  const bal = await balanceOf(s, shop.key);
  assert.equal(bal.available, 90_000 - 1_000 - 2_000 - 3_000 - 4_000);
});

test('one Idempotency-Key with different bodies at once: one object, every other answer is 409 or a replay of it', async () => {
  const shop = await s.newShop();
  const replies = await Promise.all(
    [10_000, 20_000, 30_000, 10_000, 20_000, 30_000].map((amount) =>
      s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount }, headers: { 'Idempotency-Key': 'race-mixed' } }),
    ),
  );
  const created = replies.filter((r) => r.status === 201);
  assert.equal(created.length, 1);
  const winner = created[0].body.payment;
  for (const r of replies.filter((x) => x.status !== 201)) {
    if (r.status === 200) assert.equal(r.body.payment.id, winner.id);
    else assert.deepEqual([r.status, r.body.error.code], [409, 'idempotent_conflict']);
  }
  assert.equal(replies.filter((r) => r.status === 200).length, 1, 'exactly the one request with the same amount replays');
  assert.equal(await count(`SELECT count(*) AS n FROM payments WHERE shop_id = ?`, shop.shopId), 1);
});

test('cancel racing link expiry: each payment ends in exactly one final state with exactly one webhook', async () => {
  const shop = await s.newShop();
  await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url + '/race' }, Date.now());
  const ids: string[] = [];
  for (let i = 0; i < 12; i++) {
    const c = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 10_000, method: 'sbp', ttl_minutes: 1 } });
    ids.push(c.body.payment.id);
  }
  // Half the cancels are queued before the advance arrives, half after: both orders happen.
  const cancel = (id: string) => s.request('POST', `/v1/public/payments/${id}/cancel`, { key: shop.key });
  const first = ids.slice(0, 6).map(cancel);
  const adv = s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: 61 } });
  const second = ids.slice(6).map(cancel);
  const answers = await Promise.all([...first, ...second]);
  assert.equal((await adv).status, 200);

  const finals: string[] = [];
  for (let i = 0; i < ids.length; i++) {
    const g = await s.request('GET', `/v1/public/payments/${ids[i]}`, { key: shop.key });
    const a = answers[i];
    if (a.status === 200) assert.equal(g.body.status, 'cancelled');
    else {
      assert.deepEqual([a.status, a.body.error.code, g.body.status], [409, 'invalid_state', 'expired']);
      assert.match(a.body.error.message, /expired/);
    }
    finals.push(g.body.status);
    const hooks = await s.store.all<{ webhook_event: string }>(`SELECT webhook_event FROM events WHERE payment_id = ? AND webhook_event IS NOT NULL`, ids[i]);
    assert.deepEqual(hooks.map((h) => h.webhook_event), [g.body.status === 'cancelled' ? 'payment.cancelled' : 'payment.expired']);
    assert.equal(await count(`SELECT count(*) AS n FROM webhook_deliveries WHERE payment_id = ?`, ids[i]), 1);
  }
  await rcv.waitFor(ids.length);
  const delivered = rcv.received.filter((r) => r.path === '/race').map((r) => JSON.parse(r.body).data.id as string);
  assert.deepEqual([...delivered].sort(), [...ids].sort());
  assert.ok(finals.includes('cancelled'), finals.join(','));
});

test('bank answer racing session expiry and the expire helper: one final state, one webhook', async () => {
  const shop = await s.newShop();
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) {
    const c = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 10_004, method: 'sbp' } });
    await s.request('POST', `/v1/test/payments/${c.body.payment.id}/simulate`, { key: shop.key, body: { action: 'open_session' } });
    ids.push(c.body.payment.id);
  }
  const sim = (id: string, action: string) => s.request('POST', `/v1/test/payments/${id}/simulate`, { key: shop.key, body: { action } });
  const racing = ids.flatMap((id, i) => [sim(id, i % 2 ? 'succeed' : 'fail'), sim(id, 'expire')]);
  racing.splice(6, 0, s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: 21 * 60 } }));
  const answers = await Promise.all(racing);
  for (const a of answers) assert.ok(a.status === 200 || (a.status === 409 && a.body.error.code === 'invalid_state'), a.text);
  for (const id of ids) {
    const g = await s.request('GET', `/v1/public/payments/${id}`, { key: shop.key });
    assert.ok(['succeeded', 'failed', 'expired'].includes(g.body.status), g.body.status);
    const hooks = await s.store.all<{ webhook_event: string }>(`SELECT webhook_event FROM events WHERE payment_id = ? AND webhook_event IS NOT NULL`, id);
    assert.deepEqual(hooks.map((h) => h.webhook_event), [`payment.${g.body.status}`]);
  }
});

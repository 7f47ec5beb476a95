import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { createKey, createShop } from '../../src/money/shops/store';
import { balanceOf, ledgerCheck, paidLivePayment, paidPayment } from '../helpers/money';
import { KNOWN_BANK, UNKNOWN_BANK, accountBody, cardBody, sbpBody } from '../helpers/payouts';
import { storedText } from '../helpers/stored-text';

let s: TestServer;
before(async () => {
  s = await startTestServer({ simDelaySeconds: 5 });
  await paidPayment(s, s.demo.key, 5_000_000);
});
after(() => s.close());

async function advance(seconds: number, key = s.demo.key): Promise<void> {
  const r = await s.request('POST', '/v1/test/clock/advance', { key, body: { seconds } });
  assert.equal(r.status, 200, r.text);
}

async function getPayout(id: string, key = s.demo.key) {
  const r = await s.request('GET', `/v1/public/payouts/${id}`, { key });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.mode, key.startsWith('sk_live_') ? 'live' : 'test', 'a payout tells its mode (webhook receivers get both)');
  return r.body;
}

async function eventsOf(payoutId: string): Promise<Array<{ kind: string; payload: any; webhook_event: string | null; webhook_data: any }>> {
  return (await s.store.all<any>('SELECT kind, payload, webhook_event, webhook_data FROM events WHERE payout_id = ? ORDER BY seq', payoutId)).map((e) => ({
    ...e,
    payload: JSON.parse(e.payload),
    webhook_data: e.webhook_data ? JSON.parse(e.webhook_data) : null,
  }));
}

test('an SBP payout answers 201 with the creation response, reserves, and succeeds after --sim-delay on the shop clock', async () => {
  const before = await balanceOf(s, s.demo.key);
  const r = await s.request('POST', '/v1/public/payouts', { body: sbpBody(150_000) });
  assert.equal(r.status, 201, r.text);
  const p = r.body.payout;
  assert.equal(p.status, 'pending');
  assert.equal(p.amount, 150_000);
  assert.equal(p.currency, 'RUB');
  assert.equal(p.method, 'payouts_sbp');
  assert.equal(p.merchant_id, s.demo.merchantId);
  assert.equal(p.shop_id, s.demo.shopId);
  assert.deepEqual(p.recipient, { phone: '+79001234567', bank_id: KNOWN_BANK, full_name: 'Ivan Petrov' });
  assert.equal(p.fail_reason, '');
  assert.equal(p.completed_at, null);
  assert.equal(r.body.mode, 'test');
  assert.equal(r.body.bank, 'Т-Банк');
  assert.equal(r.body.bank_ref, p.bank_ref);
  assert.ok(p.bank_ref.length > 0);
  assert.equal(r.body.failure_reason, undefined);
  assert.deepEqual({ outcome: r.body.simulator.outcome, failure_code: r.body.simulator.failure_code }, { outcome: 'succeeded', failure_code: '' });
  assert.ok(r.body.simulator.actions.simulate.endsWith(`/v1/test/payouts/${p.id}/simulate`));

  const held = await balanceOf(s, s.demo.key);
  assert.equal(held.balance, before.balance);
  assert.equal(held.available, before.available - 150_000);

  await advance(4);
  assert.equal((await getPayout(p.id)).status, 'pending', 'not before the delay');
  await advance(1);
  const done = await getPayout(p.id);
  assert.equal(done.status, 'succeeded');
  assert.equal(done.fail_reason, '');
  assert.ok(done.completed_at);
  const after = await balanceOf(s, s.demo.key);
  assert.equal(after.balance, before.balance - 150_000);
  assert.equal(after.available, before.available - 150_000);

  const ev = await eventsOf(p.id);
  assert.deepEqual(ev.map((e) => e.kind), ['payout.created', 'payout.status_changed']);
  assert.deepEqual(ev[0].payload, { id: p.id, amount: 150_000, method: 'payouts_sbp', status: 'pending' });
  assert.equal(ev[0].webhook_event, null);
  assert.deepEqual(ev[1].payload, { id: p.id, status: 'succeeded', fail_reason: '' });
  assert.equal(ev[1].webhook_event, 'payout.succeeded');
  assert.deepEqual(ev[1].webhook_data, done);
});

test('magic amounts: 01 fails do_not_honor, 02 recipient_not_in_sbp, and the reserve comes back', async () => {
  for (const [amount, code] of [[10_001, 'do_not_honor'], [10_002, 'recipient_not_in_sbp']] as const) {
    const before = await balanceOf(s, s.demo.key);
    const r = await s.request('POST', '/v1/public/payouts', { body: sbpBody(amount) });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual({ outcome: r.body.simulator.outcome, failure_code: r.body.simulator.failure_code }, { outcome: 'failed', failure_code: code });
    assert.equal((await balanceOf(s, s.demo.key)).available, before.available - amount);
    await advance(5);
    const p = await getPayout(r.body.payout.id);
    assert.equal(p.status, 'failed');
    assert.equal(p.fail_reason, code);
    const after = await balanceOf(s, s.demo.key);
    assert.deepEqual([after.balance, after.available], [before.balance, before.available]);
    const last = (await eventsOf(p.id)).at(-1)!;
    assert.equal(last.webhook_event, 'payout.failed');
    assert.deepEqual(last.payload, { id: p.id, status: 'failed', fail_reason: code });
  }
});

test('magic 03 is 502 router_error and creates and reserves nothing', async () => {
  const before = await balanceOf(s, s.demo.key);
  const count = (await s.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM payouts'))!.n;
  const r = await s.request('POST', '/v1/public/payouts', { body: sbpBody(10_003) });
  assert.equal(r.status, 502);
  assert.equal(r.body.error.code, 'router_error');
  assert.equal((await s.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM payouts'))!.n, count);
  assert.deepEqual(await balanceOf(s, s.demo.key), before);
});

test('a well-formed bank_id absent from the directory is created and fails bank_unknown at once', async () => {
  const before = await balanceOf(s, s.demo.key);
  const r = await s.request('POST', '/v1/public/payouts', { body: sbpBody(20_000, { bank_id: UNKNOWN_BANK }) });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.payout.status, 'failed');
  assert.equal(r.body.payout.fail_reason, 'bank_unknown');
  assert.equal(r.body.failure_reason, 'bank_unknown');
  assert.equal(r.body.bank, undefined);
  assert.deepEqual(await balanceOf(s, s.demo.key), before);
  assert.equal((await eventsOf(r.body.payout.id)).at(-1)!.webhook_event, 'payout.failed');
  // 03 wins over an unknown bank: the router refuses before anything is created.
  const r3 = await s.request('POST', '/v1/public/payouts', { body: sbpBody(20_003, { bank_id: UNKNOWN_BANK }) });
  assert.equal(r3.status, 502);
});

test('a payout above available is 422 insufficient_funds; exactly available is accepted', async () => {
  const shop = await s.newShop();
  await paidPayment(s, shop.key, 30_000);
  const over = await s.request('POST', '/v1/public/payouts', { key: shop.key, body: sbpBody(30_100) });
  assert.equal(over.status, 422);
  assert.equal(over.body.error.code, 'insufficient_funds');
  assert.match(over.body.error.message, /30000/);
  const exact = await s.request('POST', '/v1/public/payouts', { key: shop.key, body: sbpBody(30_000) });
  assert.equal(exact.status, 201, exact.text);
  const one = await s.request('POST', '/v1/public/payouts', { key: shop.key, body: cardBody(100) });
  assert.equal(one.status, 422);
  assert.equal((await balanceOf(s, shop.key)).available, 0);
});

test("a payout draws on its own shop's available, not on another shop of the same merchant", async () => {
  const second = await createShop(s.store, s.demo.merchantId, 'Second shop', undefined, Date.now());
  const key = (await createKey(s.store, second.id, 'test', undefined, Date.now())).secret;
  const merchant = await balanceOf(s, key);
  assert.ok(merchant.available > 100, 'the merchant has money in its first shop');
  const r = await s.request('POST', '/v1/public/payouts', { key, body: sbpBody(100) });
  assert.equal(r.status, 422);
  assert.equal(r.body.error.code, 'insufficient_funds');
});

test('card payouts keep only the last 4 digits; the recipient echo is empty', async () => {
  const r = await s.request('POST', '/v1/public/payouts', { body: cardBody(40_000, { full_name: 'Ivan Petrov' }) });
  assert.equal(r.status, 201, r.text);
  assert.deepEqual(r.body.payout.recipient, {});
  assert.equal(r.body.payout.recipient_card_mask, '9999');
  assert.equal(r.body.bank, undefined);
  const got = await getPayout(r.body.payout.id);
  assert.equal(got.recipient_card_mask, '9999');
  assert.equal((await getPayout((await s.request('POST', '/v1/public/payouts', { body: sbpBody(100) })).body.payout.id)).recipient_card_mask, undefined);
});

test('account payouts echo account_number, bik, inn and full_name', async () => {
  const r = await s.request('POST', '/v1/public/payouts', { body: accountBody(50_000, { inn: '7707083893' }) });
  assert.equal(r.status, 201, r.text);
  assert.deepEqual(r.body.payout.recipient, { account_number: '40817810099910004312', bik: '044525225', inn: '7707083893', full_name: 'Ivan Petrov' });
  assert.equal(r.body.payout.method, 'payouts_account');
});

test('Idempotency-Key: a replay answers 200 with the first body and reserves once; another body is 409', async () => {
  const headers = { 'Idempotency-Key': 'payout-idem-1' };
  const first = await s.request('POST', '/v1/public/payouts', { body: sbpBody(60_000), headers });
  assert.equal(first.status, 201);
  const mid = await balanceOf(s, s.demo.key);
  const again = await s.request('POST', '/v1/public/payouts', { body: sbpBody(60_000), headers });
  assert.equal(again.status, 200);
  assert.equal(again.body.idempotent, true);
  assert.equal(again.body.payout.id, first.body.payout.id);
  assert.deepEqual(await balanceOf(s, s.demo.key), mid);
  const other = await s.request('POST', '/v1/public/payouts', { body: sbpBody(60_100), headers });
  assert.equal(other.status, 409);
  assert.equal(other.body.error.code, 'idempotent_conflict');
});

test('POST /v1/test/payouts/{id}/simulate settles now; a settled payout is 409; the planned job then does nothing', async () => {
  const a = await s.request('POST', '/v1/public/payouts', { body: sbpBody(70_000) });
  const failed = await s.request('POST', `/v1/test/payouts/${a.body.payout.id}/simulate`, { body: { action: 'fail', failure_code: 'limit_exceeded' } });
  assert.equal(failed.status, 200, failed.text);
  assert.equal(failed.body.status, 'failed');
  assert.equal(failed.body.fail_reason, 'limit_exceeded');
  const twice = await s.request('POST', `/v1/test/payouts/${a.body.payout.id}/simulate`, { body: { action: 'succeed' } });
  assert.equal(twice.status, 409);
  assert.equal(twice.body.error.code, 'invalid_state');
  assert.match(twice.body.error.message, /failed/);
  await advance(10);
  assert.equal((await getPayout(a.body.payout.id)).status, 'failed');
  assert.equal((await eventsOf(a.body.payout.id)).length, 2);

  const b = await s.request('POST', '/v1/public/payouts', { body: sbpBody(70_001) });
  const ok = await s.request('POST', `/v1/test/payouts/${b.body.payout.id}/simulate`, { body: { action: 'succeed' } });
  assert.equal(ok.body.status, 'succeeded', 'simulate overrides the planned failure');
  const c = await s.request('POST', '/v1/public/payouts', { body: sbpBody(70_100) });
  const dflt = await s.request('POST', `/v1/test/payouts/${c.body.payout.id}/simulate`, { body: { action: 'fail' } });
  assert.equal(dflt.body.fail_reason, 'do_not_honor');
});

test('a bad simulate body is 400 naming the field and leaves the payout pending', async () => {
  const d = await s.request('POST', '/v1/public/payouts', { body: sbpBody(70_200) });
  const id = d.body.payout.id;
  const cases: Array<[unknown, string | undefined]> = [
    [{ action: 'fail', failure_code: 'nope' }, 'failure_code'],
    [{ action: 'succeed', failure_code: 'limit_exceeded' }, 'failure_code'],
    [{}, 'action'],
    [{ action: 'refund' }, 'action'],
    [{ action: 'succeed', note: 'x' }, 'note'],
    [[1], undefined],
  ];
  for (const [body, param] of cases) {
    const r = await s.request('POST', `/v1/test/payouts/${id}/simulate`, { body });
    assert.equal(r.status, 400, `${JSON.stringify(body)} → ${r.text}`);
    assert.equal(r.body.error.code, 'bad_request');
    assert.equal(r.body.error.param, param, JSON.stringify(body));
  }
  assert.equal((await getPayout(id)).status, 'pending');
  assert.deepEqual((await eventsOf(id)).map((e) => e.kind), ['payout.created']);
});

test('payouts of another shop, of the other mode or unknown ids are 404; a live key gets 404 on the test helper', async () => {
  const mine = await s.request('POST', '/v1/public/payouts', { body: sbpBody(100) });
  const other = await s.newShop();
  const r = await s.request('GET', `/v1/public/payouts/${mine.body.payout.id}`, { key: other.key });
  assert.equal(r.status, 404);
  const sim = await s.request('POST', `/v1/test/payouts/${mine.body.payout.id}/simulate`, { key: other.key, body: { action: 'succeed' } });
  assert.equal(sim.status, 404);
  assert.equal((await s.request('GET', '/v1/public/payouts/8c2d1b8e-0000-4000-8000-000000000000')).status, 404);
  assert.equal((await s.request('GET', '/v1/public/payouts/not-a-uuid')).status, 404);
  await s.store.write(async (tx) => tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', s.demo.merchantId));
  const live = await s.newKey(s.demo.shopId, 'live');
  assert.equal((await s.request('GET', `/v1/public/payouts/${mine.body.payout.id}`, { key: live.key })).status, 404);
  assert.equal((await s.request('POST', `/v1/test/payouts/${mine.body.payout.id}/simulate`, { key: live.key, body: { action: 'succeed' } })).status, 404);
});

test('reading one payout needs a payout scope or api:reports:read', async () => {
  const p = await s.request('POST', '/v1/public/payouts', { body: sbpBody(100) });
  const path = `/v1/public/payouts/${p.body.payout.id}`;
  for (const scope of ['api:payouts:sbp', 'api:payouts:card', 'api:payouts:account', 'api:reports:read']) {
    const k = await s.newKey(s.demo.shopId, 'test', scope);
    assert.equal((await s.request('GET', path, { key: k.key })).status, 200, scope);
  }
  const none = await s.newKey(s.demo.shopId, 'test', 'api:balance:read');
  const r = await s.request('GET', path, { key: none.key });
  assert.equal(r.status, 403);
  assert.equal(r.body.error.code, 'scope_required');
});

test('live payouts answer 403 payouts_not_configured and create nothing: the acquirer sends no payouts', async () => {
  const m = await s.newShop({ mode: 'live' });
  await s.store.write(async (tx) => tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', m.merchantId));
  const before = (await s.store.get<{ n: number }>('SELECT count(*) AS n FROM payouts'))!.n;
  const empty = await s.request('POST', '/v1/public/payouts', { key: m.key, body: sbpBody(100) });
  assert.equal(empty.status, 403, 'refused before the balance is even looked at');
  assert.equal(empty.body.error.code, 'payouts_not_configured');
  await paidLivePayment(s, m, 50_000);
  const r = await s.request('POST', '/v1/public/payouts', { key: m.key, body: sbpBody(20_001, { bank_id: UNKNOWN_BANK }) });
  assert.equal(r.status, 403, r.text);
  assert.equal(r.body.error.code, 'payouts_not_configured');
  assert.equal((await s.store.get<{ n: number }>('SELECT count(*) AS n FROM payouts'))!.n, before);
  const bal = await balanceOf(s, m.key);
  assert.deepEqual([bal.balance, bal.available], [50_000, 50_000], 'nothing reserved');
});

test('the full card number is never written to the database files or the logs', async () => {
  const pan = '2200701234567890';
  const r = await s.request('POST', '/v1/public/payouts', { body: cardBody(80_000, { card_pan: pan }), headers: { 'Idempotency-Key': 'card-pan-scan' } });
  assert.equal(r.status, 201, r.text);
  await s.request('POST', '/v1/public/payouts/batch', { body: { method: 'payouts_card', items: [{ amount: 1_000, card_pan: pan }, { amount: 1_000, card_pan: pan }] } });
  await advance(10);
  assert.ok(!r.text.includes(pan));
  assert.ok(!(await storedText(s)).includes(pan), 'the database holds the card number');
  assert.ok(!s.logs.some((l) => l.includes(pan)), 'a log line holds the card number');
  assert.equal((await s.store.get<{ card_last4: string }>('SELECT card_last4 FROM payouts WHERE id = ?', r.body.payout.id))!.card_last4, '7890');
});

test('kopek ledger check passes after these scenarios', async () => {
  await advance(10);
  const c = await ledgerCheck(s.dbPath);
  assert.equal(c.code, 0, c.stdout + c.stderr);
  assert.equal(c.json.ok, true);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer, type TestShop } from '../helpers/server';
import { fakeTime } from '../helpers/fake-time';
import { balanceOf, ledgerCheck } from '../helpers/money';
import { postForm } from '../helpers/pay-page';
import { sbpBody } from '../helpers/payouts';
import { putShopAcquirer } from '../../src/money/bank-port/store';
import { UNSURE, UNSURE_SECRET, UnsureBank } from './unsure-bank';

// Every live path of payments, refunds, tokens, subscriptions and payouts, over real HTTP, through a bank
// registered behind the port like any other, which answers `unknown` to every request: the domain must
// fail nothing, keep each operation open, and settle it when a status check or a notification tells.

const SYNC_AFTER_S = 60;
const time = fakeTime();
let s: TestServer;
let bank: UnsureBank;
let shop: TestShop;

before(async () => {
  s = await startTestServer({ acquirerSyncAfterSeconds: SYNC_AFTER_S }, { realNow: time.now, modules: [(core) => (bank = new UnsureBank(core)).module()] });
  shop = await liveShop();
});
after(() => s.close());

/** A live-enabled shop whose acquirer is the unsure bank, with a live key of every scope. */
async function liveShop(): Promise<TestShop> {
  const sh = await s.newShop({ mode: 'live' });
  await s.store.write(async (tx) => {
    await tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', sh.merchantId);
  });
  await s.store.write((tx) => putShopAcquirer(tx, { shop_id: sh.shopId, provider: UNSURE, settings: '{}', updated_at: time.now() }));
  return sh;
}

/** Move real (fake) time and run what became due. */
async function pass(seconds: number): Promise<void> {
  time.advance(seconds * 1000);
  await s.running.app.scheduler.runDue();
}

async function get(path: string): Promise<any> {
  const r = await s.request('GET', path, { key: shop.key });
  assert.equal(r.status, 200, r.text);
  return r.body;
}

/** A live payment the buyer started paying on the page: its session is open at the unsure bank. */
async function paying(amount: number, method = 'sbp'): Promise<string> {
  const c = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount, method } });
  assert.equal(c.status, 201, c.text);
  const id = c.body.payment.id as string;
  assert.equal(c.body.simulator, undefined, 'a live payment has no simulator block');
  assert.equal((await postForm(s, `/pay/${id}/method`, { method })).status, 303);
  return id;
}

/** A live payment settled as succeeded through one unknown answer and one status check. */
async function paid(amount: number): Promise<string> {
  const id = await paying(amount);
  await pass(0);
  await pass(SYNC_AFTER_S);
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'succeeded');
  return id;
}

async function webhooksOf(objectId: string): Promise<string[]> {
  return (
    await s.store.all<{ webhook_event: string }>(
      `SELECT webhook_event FROM events WHERE (payment_id = ? OR payout_id = ?) AND webhook_event IS NOT NULL ORDER BY seq`,
      objectId,
      objectId,
    )
  ).map((r) => r.webhook_event);
}

test('an unknown answer leaves a payment processing; the status check settles it, later and later while the bank stays silent', async () => {
  const id = await paying(10_000);
  assert.deepEqual(bank.calls.slice(-1), [`payment ${id}`], 'the buyer\'s POST reached the bank');
  await pass(0);
  const waiting = await get(`/v1/public/payments/${id}`);
  assert.equal(waiting.status, 'processing', 'unknown fails nothing');
  assert.deepEqual(await webhooksOf(id), []);

  bank.silentChecks = 2;
  const checks = (): number => bank.calls.filter((c) => c === `check payment ${id}`).length;
  // Checks come at --acquirer-sync-after, then each as long after the payment began as it had waited: 60, 120, 240 s.
  for (const [wait_s, want] of [[SYNC_AFTER_S - 1, 0], [1, 1], [SYNC_AFTER_S - 1, 1], [1, 2], [SYNC_AFTER_S * 2 - 1, 2], [1, 3]]) {
    await pass(wait_s);
    assert.equal(checks(), want, `checks after ${time.now()}`);
    if (want < 3) assert.equal((await get(`/v1/public/payments/${id}`)).status, 'processing', 'a silent check changes nothing either');
  }
  const done = await get(`/v1/public/payments/${id}`);
  assert.equal(done.status, 'succeeded');
  assert.equal(done.rrn, '123456789012');
  assert.equal(done.bank_name, 'Unsure Bank');
  assert.deepEqual(await webhooksOf(id), ['payment.succeeded']);
  await pass(SYNC_AFTER_S * 10);
  assert.equal(checks(), 3, 'a final payment is not checked again');
});

test('a refusal learned by a status check fails the payment with the unified and the bank code', async () => {
  const id = await paying(10_001, 'cards');
  await pass(0);
  await pass(SYNC_AFTER_S);
  const p = await get(`/v1/public/payments/${id}`);
  assert.equal(p.status, 'failed');
  assert.equal(p.metadata.failure_code, 'do_not_honor');
  assert.equal(p.metadata.bank_failure_code, '05');
  assert.deepEqual(await webhooksOf(id), ['payment.failed']);
});

test('a bank that never answers fails nothing before the session ends; then the payment expires', async () => {
  const id = await paying(10_000, 'cards');
  bank.silentChecks = 1000;
  await pass(0);
  for (let i = 0; i < 7; i++) await pass(120);
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'processing', '14 minutes of silence');
  await pass(120);
  const p = await get(`/v1/public/payments/${id}`);
  assert.equal(p.status, 'expired');
  assert.equal(p.metadata.failure_code, 'session_expired');
  bank.silentChecks = 0;
});

test('refunds: pending through an unknown answer, settled by the status check; a refused one gives its reserve back', async () => {
  const id = await paid(30_000);
  const before = await balanceOf(s, shop.key);
  const r = await s.request('POST', `/v1/public/payments/${id}/refund`, { key: shop.key, body: { amount: 10_000 } });
  assert.equal(r.status, 201, r.text);
  const refundId = r.body.id as string;
  assert.equal(r.body.status, 'pending');
  assert.ok(bank.calls.includes(`refund ${refundId}`));
  await pass(0);
  assert.equal((await get(`/v1/public/payments/${id}`)).refunds[0].status, 'pending');
  assert.equal((await balanceOf(s, shop.key)).available, before.available - 10_000, 'the refund is reserved meanwhile');
  await pass(SYNC_AFTER_S);
  const after = await get(`/v1/public/payments/${id}`);
  assert.equal(after.refunds[0].status, 'succeeded');
  assert.equal(after.amount_refunded, 10_000);
  assert.equal((await balanceOf(s, shop.key)).balance, before.balance - 10_000);

  const refused = await s.request('POST', `/v1/public/payments/${id}/refund`, { key: shop.key, body: { amount: 5_001 } });
  await pass(0);
  await pass(SYNC_AFTER_S);
  const r2 = (await get(`/v1/public/payments/${id}`)).refunds.find((x: any) => x.id === refused.body.id);
  assert.equal(r2.status, 'failed');
  assert.equal((await balanceOf(s, shop.key)).available, before.available - 10_000, 'the failed refund gave its reserve back');
});

test('cancel of a pending live payment tells the bank', async () => {
  const c = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 10_000 } });
  const id = c.body.payment.id as string;
  const r = await s.request('POST', `/v1/public/payments/${id}/cancel`, { key: shop.key });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.status, 'cancelled');
  assert.ok(bank.calls.includes(`cancel ${id}`));
});

test('tokens: a card binds through unknown answers, a merchant charge of it settles the same way', async () => {
  const t = await s.request('POST', '/v1/public/tokens', { key: shop.key, body: { customer_ref: 'unsure-cust', method: 'cards' } });
  assert.equal(t.status, 201, t.text);
  const tokenId = t.body.card.id as string;
  assert.equal((await postForm(s, `/pay/${t.body.binding_payment_id}/method`, { method: 'cards' })).status, 303);
  await pass(0);
  assert.equal((await get(`/v1/public/tokens/${tokenId}`)).status, 'pending');
  await pass(SYNC_AFTER_S);
  assert.equal((await get(`/v1/public/tokens/${tokenId}`)).status, 'active');

  const ch = await s.request('POST', `/v1/public/tokens/${tokenId}/charge`, { key: shop.key, body: { amount: 45_000 } });
  assert.equal(ch.status, 201, ch.text);
  assert.equal(ch.body.status, 'processing');
  assert.ok(bank.calls.includes(`charge ${tokenId}`));
  await pass(0);
  assert.equal((await get(`/v1/public/payments/${ch.body.id}`)).status, 'processing');
  await pass(SYNC_AFTER_S);
  assert.equal((await get(`/v1/public/payments/${ch.body.id}`)).status, 'succeeded');
  assert.ok((await get(`/v1/public/tokens/${tokenId}`)).last_charged_at);
});

test('subscriptions: the first payment and the scheduled charge settle through status checks', async () => {
  const c = await s.request('POST', '/v1/public/subscriptions', { key: shop.key, body: { amount: 20_000, customer_ref: 'unsure-sub', method: 'sbp' } });
  assert.equal(c.status, 201, c.text);
  const subId = c.body.subscription.id as string;
  await postForm(s, `/pay/${c.body.initial_payment.id}/method`, { method: 'sbp' });
  await pass(0);
  await pass(SYNC_AFTER_S);
  const sub = await get(`/v1/public/subscriptions/${subId}`);
  assert.equal(sub.status, 'active');
  const due_ms = Date.parse(sub.next_charge_at) - time.now();
  await pass(due_ms / 1000);
  const charging = await get(`/v1/public/subscriptions/${subId}`);
  assert.equal(charging.status, 'active', 'a charge without an answer fails nothing');
  await pass(SYNC_AFTER_S);
  const after = await get(`/v1/public/subscriptions/${subId}`);
  assert.equal(after.status, 'active');
  assert.ok(Date.parse(after.next_charge_at) > Date.parse(sub.next_charge_at), 'the charge settled and the next one is planned');
});

test('payouts: pending through an unknown answer, settled by the status check', async () => {
  await paid(50_000);
  const r = await s.request('POST', '/v1/public/payouts', { key: shop.key, body: sbpBody(20_000) });
  assert.equal(r.status, 201, r.text);
  const id = r.body.payout.id as string;
  assert.equal(r.body.payout.status, 'pending');
  assert.match(r.body.payout.bank_ref, /^unsure-/);
  assert.equal(r.body.simulator, undefined);
  await pass(0);
  assert.equal((await get(`/v1/public/payouts/${id}`)).status, 'pending');
  await pass(SYNC_AFTER_S);
  assert.equal((await get(`/v1/public/payouts/${id}`)).status, 'succeeded');
  assert.deepEqual(await webhooksOf(id), ['payout.succeeded']);
});

test('notifications: a forged one is 403 and changes nothing; a wrong amount is not applied; late ones never move a payment back', async () => {
  const id = await paying(12_300);
  const url = `/v1/callbacks/${UNSURE}/${shop.shopId}`;
  const forged = await s.request('POST', url, { key: null, body: { secret: 'guess', payment_id: id, status: 'paid', amount: 12_300 } });
  assert.equal(forged.status, 403);
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'processing');

  const wrong = await s.request('POST', url, { key: null, body: { secret: UNSURE_SECRET, payment_id: id, status: 'paid', amount: 1 } });
  assert.equal(wrong.status, 200);
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'processing', 'an amount that does not match is not applied');
  assert.ok(s.logs.some((l) => l.includes('amount does not match') && l.includes(id)));

  const ok = await s.request('POST', url, { key: null, body: { secret: UNSURE_SECRET, payment_id: id, status: 'paid', amount: 12_300 } });
  assert.equal(ok.status, 200);
  assert.equal(ok.text, 'ACK');
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'succeeded');
  const late = await s.request('POST', url, { key: null, body: { secret: UNSURE_SECRET, payment_id: id, status: 'declined', amount: 12_300 } });
  assert.equal(late.status, 200);
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'succeeded', 'a late refusal does not move it back');
  assert.deepEqual(await webhooksOf(id), ['payment.succeeded']);

  const other = await s.newShop({ mode: 'live' });
  assert.equal((await s.request('POST', `/v1/callbacks/${UNSURE}/${other.shopId}`, { key: null, body: { secret: UNSURE_SECRET, payment_id: id, status: 'paid' } })).status, 404);
  assert.equal((await s.request('POST', `/v1/callbacks/simulator/${shop.shopId}`, { key: null, body: {} })).status, 404);
});

test('the books balance after every path above', async () => {
  const c = await ledgerCheck(s.dbPath);
  assert.equal(c.code, 0, c.stdout + c.stderr);
});

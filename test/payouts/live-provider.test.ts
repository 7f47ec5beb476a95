import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer, type TestShop } from '../helpers/server';
import { fakeTime } from '../helpers/fake-time';
import { balanceOf, ledgerCheck, paidLivePayment } from '../helpers/money';
import { accountBody, cardBody, sbpBody, KNOWN_BANK, TEST_PAN } from '../helpers/payouts';
import { storedText } from '../helpers/stored-text';
import { putShopPayoutProvider, removeShopAcquirer, removeShopPayoutProvider } from '../../src/money/bank-port/store';
import { payoutAnswered } from '../../src/money/payouts/bank-answers';
import type { PaymentsCore } from '../../src/money/payments/core';
import type { Module } from '../../src/money/core/module';
import type { Tx } from '../../src/platform/storage/store';
import type { BankPort, CallbackResult, OperationRef, PayoutRequest, PayoutStart } from '../../src/money/bank-port/port';

// A shop's payout provider, resolved apart from its acquirer: payouts (single, batch, status checks) go to the bank
// registered under the provider's name, with the recipient and the card number (in memory only) in the request;
// payments go to the acquirer, and a shop with only a payout provider gets 403 acquirer_not_configured for them.

/** The provider name of the fake payout bank of this file. */
const FAKE = 'fake-payouts';
const SYNC_AFTER_S = 60;
/** The fake's job: the reply to a payout request, which never says how it ended. */
const REPLY_JOB = 'fake-payouts.reply';

/** A payout-only bank behind the port: records each request, answers `unknown`, settles on a status check. */
class FakePayoutBank implements BankPort {
  readonly provider = FAKE;
  readonly sendsPayouts = true;
  readonly requests: PayoutRequest[] = [];
  readonly checks: string[] = [];

  constructor(private readonly core: PaymentsCore) {}

  module(): Module {
    const run = (tx: Tx, job: { subject_id: string }) => payoutAnswered(this.core, tx, job.subject_id, { outcome: 'unknown', reason: 'timeout' }).then(() => undefined);
    return { name: FAKE, banks: [this], jobs: [{ kind: REPLY_JOB, run }] };
  }

  async payout(tx: Tx, req: PayoutRequest): Promise<PayoutStart> {
    this.requests.push(structuredClone(req));
    // Its answer comes after the payout is written, as a network bank's job's does: unknown, so a status check follows.
    await this.core.scheduler.schedule(tx, { kind: REPLY_JOB, subjectId: req.id, shopId: req.shopId, mode: 'live', dueAt: req.at, payload: {} });
    return { accepted: true, bankRef: `fp-${req.id.slice(0, 8)}` };
  }

  async checkStatus(tx: Tx, op: OperationRef): Promise<void> {
    if (op.kind !== 'payout') throw new Error('cannot check a payment at a payout-only bank');
    this.checks.push(op.payoutId);
    await payoutAnswered(this.core, tx, op.payoutId, { outcome: 'succeeded' });
  }

  async callback(): Promise<CallbackResult> {
    return { valid: false, payments: [], refunds: [], reply: '' };
  }

  async describePayment(): Promise<Record<string, string>> {
    throw new Error('cannot take payments: a payout-only bank');
  }
  async openSession(): Promise<void> {
    throw new Error('cannot take payments: a payout-only bank');
  }
  async chargeSaved(): Promise<void> {
    throw new Error('cannot take payments: a payout-only bank');
  }
  async cancel(): Promise<void> {
    throw new Error('cannot take payments: a payout-only bank');
  }
  async refund(): Promise<void> {
    throw new Error('cannot take payments: a payout-only bank');
  }
  creationExtras(): undefined {
    return undefined;
  }
  async pageSession(): Promise<undefined> {
    return undefined;
  }
}

const time = fakeTime();
let s: TestServer;
let bank: FakePayoutBank;

before(async () => {
  s = await startTestServer({ acquirerSyncAfterSeconds: SYNC_AFTER_S }, { realNow: time.now, modules: [(core) => (bank = new FakePayoutBank(core)).module()] });
});
after(() => s.close());

/** A live-enabled shop with the helper's T-Bank acquirer, `funds` paid in live, and the fake payout provider. */
async function liveShop(funds: number): Promise<TestShop> {
  const sh = await s.newShop({ mode: 'live' });
  await s.store.write(async (tx) => {
    await tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', sh.merchantId);
  });
  if (funds > 0) await paidLivePayment(s, sh, funds);
  await s.store.write((tx) => putShopPayoutProvider(tx, { shop_id: sh.shopId, provider: FAKE, agent_id: '1', secret: 'sealed-elsewhere', api_url: 'http://127.0.0.1:9' }, time.now()));
  return sh;
}

async function pass(seconds: number): Promise<void> {
  time.advance(seconds * 1000);
  await s.running.app.scheduler.runDue();
}

async function payoutCount(shopId: string): Promise<number> {
  return (await s.store.get<{ n: number }>(`SELECT count(*) AS n FROM payouts WHERE shop_id = ? AND mode = 'live'`, shopId))!.n;
}

test('an SBP and a card payout go to the payout provider with their recipient; the card number only in the request; the status check asks the provider', async () => {
  const shop = await liveShop(100_000);
  const sbp = await s.request('POST', '/v1/public/payouts', { key: shop.key, body: sbpBody(20_000) });
  assert.equal(sbp.status, 201, sbp.text);
  assert.equal(sbp.body.mode, 'live');
  assert.equal(sbp.body.bank, FAKE, 'the response names the payout provider');
  assert.equal(sbp.body.payout.status, 'pending');
  assert.match(sbp.body.bank_ref, /^fp-/);
  assert.equal(sbp.body.simulator, undefined);
  const r1 = bank.requests.at(-1)!;
  assert.equal(r1.id, sbp.body.payout.id);
  assert.equal(r1.method, 'payouts_sbp');
  assert.equal(r1.amount, 20_000);
  assert.deepEqual(r1.recipient, { phone: '+79001234567', bankId: KNOWN_BANK });

  const card = await s.request('POST', '/v1/public/payouts', { key: shop.key, body: cardBody(30_000) });
  assert.equal(card.status, 201, card.text);
  assert.equal(card.body.payout.recipient_card_mask, TEST_PAN.slice(-4));
  const r2 = bank.requests.at(-1)!;
  assert.deepEqual(r2.recipient, { cardNumber: TEST_PAN }, 'the full number reaches the provider in the request');
  assert.ok(!card.text.includes(TEST_PAN));

  // Reserved as in test mode; the checks at --acquirer-sync-after go to the payout provider and settle both.
  assert.equal((await balanceOf(s, shop.key)).available, 50_000);
  await pass(0);
  await pass(SYNC_AFTER_S);
  assert.deepEqual(bank.checks.slice(-2).sort(), [sbp.body.payout.id, card.body.payout.id].sort());
  for (const id of [sbp.body.payout.id, card.body.payout.id]) {
    assert.equal((await s.request('GET', `/v1/public/payouts/${id}`, { key: shop.key })).body.status, 'succeeded');
  }
  assert.equal((await balanceOf(s, shop.key)).available, 50_000);
  assert.ok(!(await storedText(s)).includes(TEST_PAN), 'the card number is not in the database');
  assert.ok(!s.logs.join('\n').includes(TEST_PAN), 'nor in the logs');
});

test('a live batch goes to the payout provider item by item; payouts_account is 403 payout_method_not_supported and creates nothing', async () => {
  const shop = await liveShop(50_000);
  const before = bank.requests.length;
  const b = await s.request('POST', '/v1/public/payouts/batch', { key: shop.key, body: { method: 'payouts_sbp', items: [sbpBody(1_000, { method: undefined }), sbpBody(2_000, { method: undefined, phone: '+79001112233' })].map(({ method: _m, ...i }) => i) } });
  assert.equal(b.status, 201, b.text);
  assert.equal(b.body.created, 2);
  assert.deepEqual(bank.requests.slice(before).map((r) => [r.amount, r.recipient.phone]), [[1_000, '+79001234567'], [2_000, '+79001112233']]);

  const n = await payoutCount(shop.shopId);
  const one = await s.request('POST', '/v1/public/payouts', { key: shop.key, body: accountBody(1_000) });
  assert.equal(one.status, 403, one.text);
  assert.equal(one.body.error.code, 'payout_method_not_supported');
  const { method: _m, ...item } = accountBody(1_000);
  const batch = await s.request('POST', '/v1/public/payouts/batch', { key: shop.key, body: { method: 'payouts_account', items: [item] } });
  assert.equal(batch.status, 403, batch.text);
  assert.equal(batch.body.error.code, 'payout_method_not_supported');
  assert.equal(await payoutCount(shop.shopId), n, 'nothing created');
  assert.equal((await balanceOf(s, shop.key)).available, 47_000, 'nothing reserved');
  // Test mode keeps payouts_account.
  const test_ = await s.request('POST', '/v1/public/payouts', { body: accountBody(1_000) });
  assert.notEqual(test_.status, 403, test_.text);
});

test('acquirer and payout provider are independent: without the acquirer payments, refunds, tokens and subscriptions get 403 acquirer_not_configured while payouts work; without either the key is refused', async () => {
  const shop = await liveShop(40_000);
  const paid = (await s.store.get<{ id: string }>(`SELECT id FROM payments WHERE shop_id = ? AND status = 'succeeded'`, shop.shopId))!.id;
  await s.store.write((tx) => removeShopAcquirer(tx, shop.shopId));
  const refused: Array<[string, string, unknown]> = [
    ['POST', '/v1/public/payments', { amount: 10_000 }],
    ['POST', `/v1/public/payments/${paid}/refund`, { amount: 1_000 }],
    ['POST', '/v1/public/tokens', { customer_ref: 'c-1', method: 'cards' }],
    ['POST', '/v1/public/subscriptions', { amount: 20_000, customer_ref: 'sub-1', method: 'cards' }],
  ];
  for (const [method, path, body] of refused) {
    const r = await s.request(method, path, { key: shop.key, body });
    assert.equal(r.status, 403, `${path}: ${r.text}`);
    assert.equal(r.body.error.code, 'acquirer_not_configured', path);
  }
  assert.equal((await s.store.get<{ n: number }>(`SELECT count(*) AS n FROM payments WHERE shop_id = ?`, shop.shopId))!.n, 1, 'no payment was created');
  assert.equal((await s.store.get<{ n: number }>(`SELECT count(*) AS n FROM refunds WHERE shop_id = ?`, shop.shopId))!.n, 0, 'no refund was created');

  const p = await s.request('POST', '/v1/public/payouts', { key: shop.key, body: sbpBody(5_000) });
  assert.equal(p.status, 201, p.text);
  assert.equal(p.body.bank, FAKE);
  assert.equal((await s.request('GET', '/v1/public/balance', { key: shop.key })).status, 200);

  await s.store.write((tx) => removeShopPayoutProvider(tx, shop.shopId));
  const none = await s.request('GET', '/v1/public/payouts', { key: shop.key });
  assert.equal(none.status, 403);
  assert.equal(none.body.error.code, 'acquirer_not_configured');
});

test('a shop with an acquirer and no payout provider still answers 403 payouts_not_configured; the books balance', async () => {
  const shop = await s.newShop({ mode: 'live' });
  await s.store.write(async (tx) => {
    await tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', shop.merchantId);
  });
  const r = await s.request('POST', '/v1/public/payouts', { key: shop.key, body: sbpBody(1_000) });
  assert.equal(r.status, 403);
  assert.equal(r.body.error.code, 'payouts_not_configured');
  const c = await ledgerCheck(s.dbPath);
  assert.equal(c.code, 0, c.stdout + c.stderr);
});

import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { TestServer, TestShop } from '../helpers/server';
import { postForm } from '../helpers/pay-page';
import { sbpBody } from '../helpers/payouts';
import type { FakeTBank } from './fake-tbank';
import { tbankSuite } from '../helpers/tbank';
import { storedText } from '../helpers/stored-text';

// Saved methods and subscriptions in live mode (binding: Init with Recurrent=Y and CustomerKey; later
// charges: Init + Charge with the kept RebillId), live payouts (403: no payout connector), a live key
// without an acquirer (403), and secrets: nothing secret in the database files or the logs.

const TERMINAL = '1700000000RECUR';
const PASSWORD = 'recurring-terminal-pass-0c2d';
const SYNC_AFTER_S = 60;
const suite = tbankSuite({ terminalKey: TERMINAL, password: PASSWORD }, { acquirerSyncAfterSeconds: SYNC_AFTER_S, acquirerTimeoutSeconds: 0.5 });
const { time, pass, get } = suite;
let s: TestServer;
let fake: FakeTBank;
let shop: TestShop;
before(async () => void ({ s, fake, shop } = await suite.ready));

/** Bind a card: the buyer pays the binding payment at the bank, whose notification carries the RebillId. */
async function boundCard(customer: string): Promise<string> {
  const t = await s.request('POST', '/v1/public/tokens', { key: shop.key, body: { customer_ref: customer, method: 'cards' } });
  assert.equal(t.status, 201, t.text);
  const tokenId = t.body.card.id as string;
  assert.equal((await postForm(s, `/pay/${t.body.binding_payment_id}/method`, { method: 'cards' })).status, 303);
  await pass();
  const init = fake.calls('Init').at(-1)!.body;
  assert.equal(init.Recurrent, 'Y');
  assert.equal(init.CustomerKey, tokenId);
  await fake.settle(fake.last(), 'CONFIRMED');
  assert.equal((await get(`/v1/public/tokens/${tokenId}`)).status, 'active');
  return tokenId;
}

test('a saved card: binding keeps the RebillId encrypted; a charge is Init + Charge with it', async () => {
  const tokenId = await boundCard('cust-live-1');
  const binding = fake.last();
  const row = (await s.store.get<{ rebill_enc: string }>('SELECT rebill_enc FROM tbank_rebills WHERE token_id = ?', tokenId))!;
  assert.ok(row.rebill_enc.startsWith('enc:v1:'));
  assert.ok(!row.rebill_enc.includes(binding.rebillId), 'not in clear');

  const ch = await s.request('POST', `/v1/public/tokens/${tokenId}/charge`, { key: shop.key, body: { amount: 45_000 } });
  assert.equal(ch.status, 201, ch.text);
  assert.equal(ch.body.status, 'processing');
  await pass();
  const init = fake.calls('Init').at(-1)!.body;
  assert.equal(init.Amount, 45_000);
  assert.equal(init.SuccessURL, undefined, 'a merchant charge has no buyer to send back');
  const charge = fake.calls('Charge').at(-1)!.body;
  assert.equal(charge.RebillId, binding.rebillId);
  assert.equal(charge.PaymentId, fake.last().paymentId);
  const p = await get(`/v1/public/payments/${ch.body.id}`);
  assert.equal(p.status, 'succeeded');
  const rec = (await s.store.get<{ request: string }>(`SELECT request FROM bank_requests WHERE operation = 'Charge' ORDER BY id DESC`))!;
  assert.ok(!rec.request.includes(binding.rebillId), 'the recorded Charge holds no RebillId');

  fake.chargeOutcome = { status: 'REJECTED', errorCode: '1051' };
  const declined = await s.request('POST', `/v1/public/tokens/${tokenId}/charge`, { key: shop.key, body: { amount: 1_000 } });
  await pass();
  const d = await get(`/v1/public/payments/${declined.body.id}`);
  assert.equal(d.status, 'failed');
  assert.equal(d.metadata.failure_code, 'insufficient_funds');
  fake.chargeOutcome = { status: 'CONFIRMED', errorCode: '0' };
});

test('a charge whose Charge hangs stays processing; GetState settles it', async () => {
  const tokenId = await boundCard('cust-live-2');
  fake.next('Charge', 'lose');
  fake.notify = false;
  const ch = await s.request('POST', `/v1/public/tokens/${tokenId}/charge`, { key: shop.key, body: { amount: 2_500 } });
  await pass();
  assert.equal((await get(`/v1/public/payments/${ch.body.id}`)).status, 'processing');
  await pass(SYNC_AFTER_S);
  assert.equal((await get(`/v1/public/payments/${ch.body.id}`)).status, 'succeeded');
  fake.notify = true;
});

test('a charge whose Init answer is lost: CheckOrder finds the bank payment NEW, so the Charge is sent then, once', async () => {
  const tokenId = await boundCard('cust-live-3');
  fake.next('Init', 'lose');
  fake.notify = false;
  const charges = fake.calls('Charge').length;
  const ch = await s.request('POST', `/v1/public/tokens/${tokenId}/charge`, { key: shop.key, body: { amount: 3_300 } });
  await pass();
  assert.equal(fake.calls('Charge').length, charges, 'no Charge without the Init\'s PaymentId');
  assert.equal((await get(`/v1/public/payments/${ch.body.id}`)).status, 'processing');
  await pass(SYNC_AFTER_S);
  const ops = (await s.store.all<{ operation: string; state: string }>('SELECT operation, state FROM bank_requests WHERE subject_id = ? ORDER BY id', ch.body.id)).map((r) => `${r.operation}:${r.state}`);
  assert.deepEqual(ops, ['Init:unknown', 'CheckOrder:answered', 'Charge:answered']);
  assert.equal(fake.calls('Charge').length, charges + 1);
  assert.equal((await get(`/v1/public/payments/${ch.body.id}`)).status, 'succeeded');
  fake.notify = true;
});

test('a charge whose Init got a 5xx: CheckOrder finds no order, so the charge is sent again (Init + Charge) with a new OrderId', async () => {
  const tokenId = await boundCard('cust-live-5');
  fake.next('Init', '500');
  const ch = await s.request('POST', `/v1/public/tokens/${tokenId}/charge`, { key: shop.key, body: { amount: 6_600 } });
  await pass();
  await pass(SYNC_AFTER_S);
  const ops = (await s.store.all<{ operation: string; state: string }>('SELECT operation, state FROM bank_requests WHERE subject_id = ? ORDER BY id', ch.body.id)).map((r) => `${r.operation}:${r.state}`);
  assert.deepEqual(ops, ['Init:unknown', 'CheckOrder:answered', 'Init:answered', 'Charge:answered']);
  assert.equal(fake.calls('Init').at(-1)!.body.SuccessURL, undefined, 'still a merchant charge, not a buyer session');
  assert.equal((await get(`/v1/public/payments/${ch.body.id}`)).status, 'succeeded');
});

test('nothing to charge: a token without a RebillId and a "recurrent" payment without a token fail without reaching the bank', async () => {
  const tokenId = await boundCard('cust-live-4');
  await s.store.write(async (tx) => tx.run('DELETE FROM tbank_rebills WHERE token_id = ?', tokenId));
  const inits = fake.calls('Init').length;
  const ch = await s.request('POST', `/v1/public/tokens/${tokenId}/charge`, { key: shop.key, body: { amount: 4_400 } });
  assert.equal(ch.status, 201, ch.text);
  await pass();
  const p = await get(`/v1/public/payments/${ch.body.id}`);
  assert.equal(p.status, 'failed');
  assert.deepEqual([p.metadata.failure_code, p.metadata.bank_failure_code], ['processing_error', 'no_rebill_id']);
  const r = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 5_500, method: 'recurrent' } });
  assert.equal(r.status, 201, r.text);
  await pass();
  const q = await get(`/v1/public/payments/${r.body.payment.id}`);
  assert.equal(q.status, 'failed');
  assert.equal(q.metadata.bank_failure_code, 'no_saved_method');
  assert.equal(fake.calls('Init').length, inits, 'the bank was never asked');
});

test('a subscription: the first payment binds the card, the scheduled charge goes through Init + Charge', async () => {
  const c = await s.request('POST', '/v1/public/subscriptions', { key: shop.key, body: { amount: 20_000, customer_ref: 'sub-live', method: 'cards' } });
  assert.equal(c.status, 201, c.text);
  const subId = c.body.subscription.id as string;
  await postForm(s, `/pay/${c.body.initial_payment.id}/method`, { method: 'cards' });
  await pass();
  assert.equal(fake.calls('Init').at(-1)!.body.Recurrent, 'Y');
  await fake.settle(fake.last(), 'CONFIRMED');
  const sub = await get(`/v1/public/subscriptions/${subId}`);
  assert.equal(sub.status, 'active');
  const charges = fake.calls('Charge').length;
  await pass((Date.parse(sub.next_charge_at) - time.now()) / 1000);
  assert.equal(fake.calls('Charge').length, charges + 1, 'the scheduled charge reached the bank');
  const after = await get(`/v1/public/subscriptions/${subId}`);
  assert.equal(after.status, 'active');
  assert.ok(Date.parse(after.next_charge_at) > Date.parse(sub.next_charge_at), 'the charge settled and the next one is planned');
});

test('live payouts answer 403 payouts_not_configured and create nothing', async () => {
  const before = (await s.store.get<{ n: number }>('SELECT count(*) AS n FROM payouts'))!.n;
  const r = await s.request('POST', '/v1/public/payouts', { key: shop.key, body: sbpBody(1_000) });
  assert.equal(r.status, 403, r.text);
  assert.equal(r.body.error.code, 'payouts_not_configured');
  const b = await s.request('POST', '/v1/public/payouts/batch', { key: shop.key, body: { method: 'payouts_sbp', items: [{ ...sbpBody(1_000), method: undefined }] } });
  assert.equal(b.status, 403, b.text);
  assert.equal(b.body.error.code, 'payouts_not_configured');
  assert.equal((await s.store.get<{ n: number }>('SELECT count(*) AS n FROM payouts'))!.n, before);
});

test('a live key of a shop without an acquirer gets 403 acquirer_not_configured; with one it works', async () => {
  const bare = await s.newShop({ mode: 'live', acquirer: false });
  await s.store.write(async (tx) => tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', bare.merchantId));
  const r = await s.request('POST', '/v1/public/payments', { key: bare.key, body: { amount: 1_000 } });
  assert.equal(r.status, 403);
  assert.equal(r.body.error.code, 'acquirer_not_configured');
  const { giveTBankAcquirer } = await import('../helpers/tbank');
  await giveTBankAcquirer(s, bare.shopId, { terminalKey: TERMINAL, password: PASSWORD, apiUrl: fake.apiUrl });
  assert.equal((await s.request('POST', '/v1/public/payments', { key: bare.key, body: { amount: 1_000 } })).status, 201, 'the key cache saw the new acquirer');
});

test('secrets: no password, Token or RebillId in the database files or the logs; the key file is 0600', async () => {
  await s.running.app.store.flush();
  const tokens = fake.received.map((r) => String(r.body.Token));
  const rebills = [...fake.payments.values()].filter((p) => p.recurrent).map((p) => p.rebillId);
  assert.ok(tokens.length > 5 && rebills.length > 0);
  const files = readdirSync(s.dir).filter((f) => f.startsWith('kopek.db') && !f.endsWith('.key') && !f.endsWith('.lock'));
  const bytes = s.store.engine === 'postgres' ? await storedText(s) : files.map((f) => readFileSync(join(s.dir, f)).toString('latin1')).join('\n');
  const logs = s.logs.join('\n');
  for (const secret of [PASSWORD, ...tokens, ...rebills]) {
    assert.ok(!bytes.includes(secret), `a secret in the database files: ${secret.slice(0, 6)}…`);
    assert.ok(!logs.includes(secret), `a secret in the logs: ${secret.slice(0, 6)}…`);
  }
  // PostgreSQL takes the master key from KOPEK_MASTER_KEY alone: there is no key file.
  if (s.store.engine !== 'postgres') assert.equal(statSync(`${s.dbPath}.key`).mode & 0o777, 0o600);
});

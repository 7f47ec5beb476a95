import { test, before, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import type { TestServer, TestShop } from '../helpers/server';
import { balanceOf, ledgerCheck } from '../helpers/money';
import { postForm } from '../helpers/pay-page';
import type { FakeTBank } from './fake-tbank';
import { tbankSuite } from '../helpers/tbank';

// What the bank does not say: hangs past --acquirer-timeout, 5xx, unreadable bodies, cut connections and
// lost notifications never fail anything; status checks (GetState, or CheckOrder by OrderId when Init never
// answered) settle them at --acquirer-sync-after and then later and later. Refunds go through Cancel.

const TERMINAL = '1700000000UNKNOWN';
const PASSWORD = 'unknown-terminal-pass-77e0';
const SYNC_AFTER_S = 60;
const suite = tbankSuite({ terminalKey: TERMINAL, password: PASSWORD }, { acquirerSyncAfterSeconds: SYNC_AFTER_S, acquirerTimeoutSeconds: 0.3 });
const { pass, get } = suite;
let s: TestServer;
let fake: FakeTBank;
let shop: TestShop;
before(async () => void ({ s, fake, shop } = await suite.ready));

beforeEach(() => {
  fake.notify = true;
  fake.refundRefusal = '';
});

async function create(amount: number, method: string, extra: Record<string, unknown> = {}): Promise<string> {
  const c = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount, method, ...extra } });
  assert.equal(c.status, 201, c.text);
  return c.body.payment.id as string;
}

async function open(id: string, method: string): Promise<void> {
  assert.equal((await postForm(s, `/pay/${id}/method`, { method })).status, 303);
  await pass();
}

async function ops(id: string): Promise<string[]> {
  return (await s.store.all<{ operation: string; state: string }>('SELECT operation, state FROM bank_requests WHERE subject_id = ? ORDER BY id', id)).map((r) => `${r.operation}:${r.state}`);
}

/** A live card payment paid at the bank and known to kopek as succeeded. */
async function paid(amount: number): Promise<{ id: string; bankId: string }> {
  const id = await create(amount, 'cards');
  await open(id, 'cards');
  const bank = fake.last();
  await fake.settle(bank, 'CONFIRMED');
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'succeeded');
  return { id, bankId: bank.paymentId };
}

test('a hung Init is unknown after --acquirer-timeout; with the notification lost, CheckOrder by OrderId settles it at --acquirer-sync-after', async () => {
  fake.notify = false;
  fake.next('Init', 'lose');
  const id = await create(11_000, 'cards');
  await open(id, 'cards');
  assert.deepEqual(await ops(id), ['Init:unknown']);
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'processing', 'unknown fails nothing');
  // The bank did create the order before the answer was lost; the payer pays there.
  const bank = fake.last();
  await fake.settle(bank, 'CONFIRMED');
  await pass(SYNC_AFTER_S - 1);
  assert.deepEqual(await ops(id), ['Init:unknown'], 'no check before --acquirer-sync-after');
  await pass(1);
  assert.deepEqual(await ops(id), ['Init:unknown', 'CheckOrder:answered']);
  assert.equal(fake.calls('CheckOrder').at(-1)!.body.OrderId, bank.orderId);
  const p = await get(`/v1/public/payments/${id}`);
  assert.equal(p.status, 'succeeded');
  assert.equal(p.rrn, '301234567890', 'the RRN the bank gave');
  fake.notify = true;
});

test('a 5xx on Init: CheckOrder finds no order, so the session is opened again with a new OrderId', async () => {
  fake.next('Init', '500');
  const id = await create(12_000, 'cards');
  await open(id, 'cards');
  assert.deepEqual(await ops(id), ['Init:unknown']);
  const firstOrder = (await s.store.get<{ order_id: string }>('SELECT order_id FROM bank_requests WHERE subject_id = ?', id))!.order_id;
  await pass(SYNC_AFTER_S);
  assert.deepEqual(await ops(id), ['Init:unknown', 'CheckOrder:answered', 'Init:answered']);
  const bank = fake.last();
  assert.notEqual(bank.orderId, firstOrder, 'one OrderId per attempt');
  await fake.settle(bank, 'CONFIRMED');
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'succeeded');
});

test('unreadable answers and cut connections are unknown; the checks come later and later until one is final', async () => {
  fake.notify = false;
  const id = await create(13_000, 'sbp');
  await open(id, 'sbp');
  const bank = fake.last();
  const mine = (b: Record<string, unknown>) => b.PaymentId === bank.paymentId;
  fake.next('GetState', 'garbage', 1, mine);
  fake.next('GetState', 'drop', 1, mine);
  await pass(SYNC_AFTER_S);
  assert.deepEqual((await ops(id)).slice(-1), ['GetState:unknown']);
  await pass(SYNC_AFTER_S - 1);
  assert.equal((await ops(id)).filter((o) => o.startsWith('GetState')).length, 1, 'the second check waits as long again as the first');
  await pass(1);
  assert.deepEqual((await ops(id)).slice(-1), ['GetState:unknown']);
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'processing');
  await fake.settle(bank, 'CONFIRMED');
  await pass(SYNC_AFTER_S * 2);
  assert.deepEqual((await ops(id)).slice(-1), ['GetState:answered']);
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'succeeded');
  await pass(SYNC_AFTER_S * 8);
  assert.equal((await ops(id)).filter((o) => o.startsWith('GetState')).length, 3, 'a final payment is not checked again');
  fake.notify = true;
});

test('a link opened a day after it was made: the first check comes --acquirer-sync-after after the session opened, not a day later', async () => {
  fake.notify = false;
  const id = await create(16_000, 'cards', { ttl_minutes: 24 * 60 });
  await pass(23 * 3600);
  await open(id, 'cards');
  await fake.settle(fake.last(), 'CONFIRMED');
  await pass(SYNC_AFTER_S);
  assert.deepEqual(await ops(id), ['Init:answered', 'GetState:answered']);
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'succeeded');
});

test('a refused Init fails the payment with the unified and the bank code', async () => {
  fake.next('Init', 'refuse');
  const id = await create(14_000, 'cards');
  await open(id, 'cards');
  const p = await get(`/v1/public/payments/${id}`);
  assert.equal(p.status, 'failed');
  assert.equal(p.metadata.failure_code, 'insufficient_funds');
  assert.equal(p.metadata.bank_failure_code, '1051');
});

test('a bank that never answers fails nothing before the session ends; then the payment expires', async () => {
  fake.notify = false;
  const id = await create(15_000, 'cards');
  await open(id, 'cards');
  for (let i = 0; i < 7; i++) await pass(120);
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'processing');
  await pass(120);
  const p = await get(`/v1/public/payments/${id}`);
  assert.equal(p.status, 'expired');
  assert.equal(p.metadata.failure_code, 'session_expired');
  fake.notify = true;
  // The bank confirms it after all: kopek does not move it back, and doctor names it for the operator.
  await fake.settle(fake.last(), 'CONFIRMED');
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'expired');
  const { diagnose } = await import('../../src/cli/doctor');
  const f = (await diagnose(s.store)).find((x) => x.check === 'bank amounts')!;
  assert.equal(f.ok, false);
  assert.match(f.detail, new RegExp(`payment ${id} .*succeeded after expired`));
});

test('refunds: Cancel with Amount; PARTIAL_REFUNDED and REFUNDED settle them, a refusal fails one', async () => {
  const { id, bankId } = await paid(30_000);
  const before = await balanceOf(s, shop.key);
  const r1 = await s.request('POST', `/v1/public/payments/${id}/refund`, { key: shop.key, body: { amount: 10_000 } });
  assert.equal(r1.status, 201, r1.text);
  assert.equal(r1.body.status, 'pending');
  await pass();
  const cancel = fake.calls('Cancel').at(-1)!.body;
  assert.deepEqual([cancel.PaymentId, cancel.Amount, cancel.ExternalRequestId], [bankId, 10_000, r1.body.id]);
  let p = await get(`/v1/public/payments/${id}`);
  assert.equal(p.refunds[0].status, 'succeeded');
  assert.equal(p.amount_refunded, 10_000);
  assert.equal(fake.payments.get(bankId)!.status, 'PARTIAL_REFUNDED');

  fake.refundRefusal = '1091';
  const r2 = await s.request('POST', `/v1/public/payments/${id}/refund`, { key: shop.key, body: { amount: 5_000 } });
  await pass();
  p = await get(`/v1/public/payments/${id}`);
  assert.equal(p.refunds.find((x: any) => x.id === r2.body.id).status, 'failed');
  fake.refundRefusal = '';

  const r3 = await s.request('POST', `/v1/public/payments/${id}/refund`, { key: shop.key, body: { amount: 20_000 } });
  await pass();
  p = await get(`/v1/public/payments/${id}`);
  assert.equal(p.refunds.find((x: any) => x.id === r3.body.id).status, 'succeeded');
  assert.equal(p.status, 'refunded');
  assert.equal(fake.payments.get(bankId)!.status, 'REFUNDED');
  assert.equal((await balanceOf(s, shop.key)).balance, before.balance - 30_000);
});

test('a refund whose Cancel hangs stays pending; the check repeats the same ExternalRequestId and the bank refunds once', async () => {
  const { id, bankId } = await paid(40_000);
  fake.next('Cancel', 'hang');
  const r = await s.request('POST', `/v1/public/payments/${id}/refund`, { key: shop.key, body: { amount: 15_000 } });
  await pass();
  assert.deepEqual(await ops(r.body.id), ['Cancel:unknown']);
  assert.equal((await get(`/v1/public/payments/${id}`)).refunds[0].status, 'pending');
  await pass(SYNC_AFTER_S);
  assert.deepEqual(await ops(r.body.id), ['Cancel:unknown', 'Cancel:answered']);
  const sent = fake.calls('Cancel').slice(-2).map((c) => c.body.ExternalRequestId);
  assert.deepEqual(sent, [r.body.id, r.body.id]);
  assert.equal(fake.payments.get(bankId)!.refunded, 15_000, 'the bank refunded once');
  assert.equal((await get(`/v1/public/payments/${id}`)).refunds[0].status, 'succeeded');
});

test('cancel of a pending live payment sends nothing: no session is open at the bank', async () => {
  const id = await create(8_000, 'cards');
  const r = await s.request('POST', `/v1/public/payments/${id}/cancel`, { key: shop.key });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.status, 'cancelled');
  await pass();
  assert.deepEqual(await ops(id), []);
});

test('the books balance after every path above', async () => {
  const c = await ledgerCheck(s.dbPath);
  assert.equal(c.code, 0, c.stdout + c.stderr);
});

import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import type { TestServer, TestShop } from '../helpers/server';
import { postForm } from '../helpers/pay-page';
import { cabGet, cabPost, makeUser, signIn } from '../helpers/cabinet';
import type { FakeTBank, FakePayment } from './fake-tbank';
import { tbankSuite } from '../helpers/tbank';

// Regression: live payments never carried metadata.bank_ref, the key the API reserves for "the operation id at
// the acquiring bank". A payment that reached T-Bank shows the bank's PaymentId there: in GET, in the webhooks
// that follow, and in the payment register's export.

const TERMINAL = '1700000000BANKREF';
const PASSWORD = 'bank-ref-terminal-pass-77d2';
const SYNC_AFTER_S = 60;
const suite = tbankSuite({ terminalKey: TERMINAL, password: PASSWORD }, { acquirerSyncAfterSeconds: SYNC_AFTER_S, acquirerTimeoutSeconds: 0.5 });
const { pass, get } = suite;
let s: TestServer;
let fake: FakeTBank;
let shop: TestShop;
before(async () => void ({ s, fake, shop } = await suite.ready));

/** A live payment the buyer started paying on the page, with the bank's Init answered (or lost). */
async function paying(amount: number, orderId: string): Promise<{ id: string; bank: FakePayment }> {
  const c = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount, method: 'cards', order_id: orderId } });
  assert.equal(c.status, 201, c.text);
  assert.equal(c.body.payment.metadata.bank_ref, undefined, 'no bank knows the payment yet');
  const id = c.body.payment.id as string;
  assert.equal((await postForm(s, `/pay/${id}/method`, { method: 'cards' })).status, 303);
  await pass();
  return { id, bank: fake.last() };
}

/** The `data` of the payment's webhook of one kind, as the outbox holds it for delivery. */
async function webhookData(id: string, event: string): Promise<any> {
  const row = await s.store.get<{ webhook_data: string }>('SELECT webhook_data FROM events WHERE payment_id = ? AND webhook_event = ?', id, event);
  assert.ok(row, `a ${event} webhook was written`);
  return JSON.parse(row.webhook_data);
}

test('live payments never carried metadata.bank_ref: GET, the payment.succeeded webhook and the register export show the bank PaymentId', async () => {
  const { id, bank } = await paying(42_000, 'bank-ref-1');
  assert.match(bank.paymentId, /^\d+$/);
  assert.equal((await get(`/v1/public/payments/${id}`)).metadata.bank_ref, bank.paymentId, 'shown once Init answered');

  assert.equal((await fake.settle(bank, 'CONFIRMED'))?.text, 'OK');
  const done = await get(`/v1/public/payments/${id}`);
  assert.equal(done.status, 'succeeded');
  assert.equal(done.metadata.bank_ref, bank.paymentId);
  assert.equal(done.metadata.mode, 'live');
  assert.equal((await webhookData(id, 'payment.succeeded')).metadata.bank_ref, bank.paymentId);

  await makeUser(s, shop.merchantId, 'bank-ref@shop.example');
  const session = await signIn(s, 'bank-ref@shop.example');
  assert.equal((await cabPost(s, session, '/cabinet/prefs', { mode: 'live', back: '/cabinet/payments' })).status, 303);
  const csv = await cabGet(s, session, '/cabinet/payments.csv');
  assert.equal(csv.status, 200, csv.text);
  const [head, ...rows] = csv.text.trim().split('\r\n').map((l) => l.split(','));
  const col = head.indexOf('bank_ref');
  assert.ok(col >= 0, `the export has a bank_ref column: ${head.join(',')}`);
  const row = rows.find((r) => r[head.indexOf('order_id')] === 'bank-ref-1');
  assert.ok(row, 'the payment is in the export');
  assert.equal(row[col], bank.paymentId);
});

test('bank_ref of a refused payment is in its payment.failed webhook', async () => {
  const { id, bank } = await paying(43_000, 'bank-ref-2');
  await fake.settle(bank, 'REJECTED', '1051');
  const failed = await get(`/v1/public/payments/${id}`);
  assert.equal(failed.status, 'failed');
  assert.equal(failed.metadata.bank_ref, bank.paymentId);
  assert.equal((await webhookData(id, 'payment.failed')).metadata.bank_ref, bank.paymentId);
});

test('bank_ref when the Init answer was lost: the notification names the payment and its webhook carries it', async () => {
  fake.next('Init', 'lose');
  const { id, bank } = await paying(44_000, 'bank-ref-3');
  assert.equal((await get(`/v1/public/payments/${id}`)).metadata.bank_ref, undefined, 'kopek has not heard of the bank payment yet');
  assert.equal((await fake.settle(bank, 'CONFIRMED'))?.text, 'OK');
  const done = await get(`/v1/public/payments/${id}`);
  assert.equal(done.status, 'succeeded');
  assert.equal(done.metadata.bank_ref, bank.paymentId);
  assert.equal((await webhookData(id, 'payment.succeeded')).metadata.bank_ref, bank.paymentId);
});

test('bank_ref when the Init answer was lost and no notification came: the status check (CheckOrder) finds it', async () => {
  fake.next('Init', 'lose');
  fake.notify = false;
  try {
    const { id, bank } = await paying(45_000, 'bank-ref-4');
    bank.status = 'CONFIRMED';
    await pass(SYNC_AFTER_S);
    const done = await get(`/v1/public/payments/${id}`);
    assert.equal(done.status, 'succeeded');
    assert.equal(done.metadata.bank_ref, bank.paymentId);
  } finally {
    fake.notify = true;
  }
});

test('a test payment has no bank_ref: the simulator is no acquiring bank', async () => {
  const c = await s.request('POST', '/v1/public/payments', { body: { amount: 10_000 } });
  assert.equal(c.status, 201, c.text);
  assert.equal(c.body.payment.metadata.bank_ref, undefined);
});

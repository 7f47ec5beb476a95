import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import type { TestServer, TestShop } from '../helpers/server';
import { postForm } from '../helpers/pay-page';
import type { FakeTBank, FakePayment } from './fake-tbank';
import { tbankSuite } from '../helpers/tbank';
import { diagnose } from '../../src/cli/doctor';

// Regression: a T-Bank notification's Amount was compared as a parsed number, so "300000.00" passed for a
// payment of 300000 kopecks. The protocol states Amount as an integer of kopecks; anything else (a decimal
// string, a fraction, a string of digits, no Amount at all) is a mismatch: answered OK as the bank expects,
// never applied, kept in bank_mismatches for the operator. The same holds for the bank's answers.

const TERMINAL = '1700000000AMOUNTS';
const PASSWORD = 'amount-form-terminal-pass-3c9e';
const SYNC_AFTER_S = 60;
const suite = tbankSuite({ terminalKey: TERMINAL, password: PASSWORD }, { acquirerSyncAfterSeconds: SYNC_AFTER_S, acquirerTimeoutSeconds: 0.5 });
const { pass, get } = suite;
let s: TestServer;
let fake: FakeTBank;
let shop: TestShop;
before(async () => void ({ s, fake, shop } = await suite.ready));

async function paying(amount: number): Promise<{ id: string; bank: FakePayment }> {
  const c = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount, method: 'cards' } });
  assert.equal(c.status, 201, c.text);
  const id = c.body.payment.id as string;
  assert.equal((await postForm(s, `/pay/${id}/method`, { method: 'cards' })).status, 303);
  await pass();
  return { id, bank: fake.last() };
}

function mismatches(id: string) {
  return s.store.all<{ expected_amount: number; bank_amount: number; answer: string }>('SELECT expected_amount, bank_amount, answer FROM bank_mismatches WHERE subject_id = ? ORDER BY id', id);
}

test('a notification Amount of "300000.00" was taken for 300000 kopecks: every form but an integer is a mismatch, kept and not applied', async () => {
  const { id, bank } = await paying(300_000);
  bank.status = 'CONFIRMED';
  const forms: Array<[string, unknown]> = [
    ['a decimal string', '300000.00'],
    ['a string of digits', '300000'],
    ['a fraction', 300_000.5],
    ['rubles', 3000],
    ['no Amount at all', undefined],
  ];
  for (const [what, amount] of forms) {
    const r = await fake.send(bank, fake.notification(bank, { Amount: amount }));
    assert.equal(r.status, 200, `${what}: a signed notification is answered as the bank expects`);
    assert.equal(r.text, 'OK');
    assert.equal((await get(`/v1/public/payments/${id}`)).status, 'processing', `${what}: not applied`);
  }
  const kept = await mismatches(id);
  assert.equal(kept.length, forms.length, 'each one is kept for the operator');
  assert.ok(kept.every((m) => m.expected_amount === 300_000));
  assert.match(kept[0].answer, /^succeeded; Amount "300000\.00" is not an integer of kopecks$/);
  assert.match(kept[1].answer, /Amount "300000" is not an integer/);
  assert.match(kept[2].answer, /Amount 300000\.5 is not an integer/);
  assert.equal(kept[3].bank_amount, 3000, 'an integer of another amount is an ordinary mismatch');
  assert.match(kept[4].answer, /Amount \(none\) is not an integer/);
  assert.deepEqual(await s.store.all('SELECT 1 FROM events WHERE payment_id = ? AND webhook_event IS NOT NULL', id), [], 'no webhook');
  const finding = (await diagnose(s.store)).find((f) => f.check === 'bank amounts')!;
  assert.equal(finding.ok, false);
  assert.ok(finding.detail.includes('"300000.00"'), 'doctor shows the amount as the bank sent it');

  // The protocol's own form settles it.
  assert.equal((await fake.send(bank, fake.notification(bank))).text, 'OK');
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'succeeded');
});

test('a status check answer with Amount "45000.00" is a mismatch too: not applied, kept', async () => {
  fake.notify = false;
  try {
    const { id, bank } = await paying(45_000);
    bank.status = 'CONFIRMED';
    (bank as { amount: unknown }).amount = '45000.00';
    await pass(SYNC_AFTER_S);
    assert.ok(fake.calls('GetState').some((c) => c.body.PaymentId === bank.paymentId), 'the check asked the bank');
    assert.equal((await get(`/v1/public/payments/${id}`)).status, 'processing');
    const kept = await mismatches(id);
    assert.equal(kept.length, 1);
    assert.match(kept[0].answer, /Amount "45000\.00" is not an integer of kopecks/);
    bank.amount = 45_000;
    assert.equal((await fake.send(bank)).text, 'OK');
    assert.equal((await get(`/v1/public/payments/${id}`)).status, 'succeeded', 'the bank\'s word in kopecks settles it');
  } finally {
    fake.notify = true;
  }
});

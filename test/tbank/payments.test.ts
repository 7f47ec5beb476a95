import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import type { TestServer, TestShop } from '../helpers/server';
import { getPage, postForm } from '../helpers/pay-page';
import { FakeTBank, sign, type FakePayment } from './fake-tbank';
import { liveTBankShop, tbankSuite } from '../helpers/tbank';
import { storedText } from '../helpers/stored-text';

// Live card and SBP payments through the T-Bank connector against a local fake of the bank's API over real
// HTTP: the Init the contract asks for, the page's way to the bank, signed notifications and the status map.

const TERMINAL = '1700000000PAYMENTS';
const PASSWORD = 'payments-terminal-pass-5b1c';
const SYNC_AFTER_S = 60;
const suite = tbankSuite({ terminalKey: TERMINAL, password: PASSWORD }, { acquirerSyncAfterSeconds: SYNC_AFTER_S, acquirerTimeoutSeconds: 0.5 });
const { pass, get } = suite;
let s: TestServer;
let fake: FakeTBank;
let shop: TestShop;
before(async () => void ({ s, fake, shop } = await suite.ready));

/** A live payment the buyer started paying on the page; the bank's Init has answered. */
async function paying(amount: number, method: string, extra: Record<string, unknown> = {}): Promise<{ id: string; bank: FakePayment }> {
  const c = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount, method, ...extra } });
  assert.equal(c.status, 201, c.text);
  const id = c.body.payment.id as string;
  assert.equal(c.body.payment.status, 'pending');
  assert.equal((await postForm(s, `/pay/${id}/method`, { method })).status, 303);
  await pass();
  const bank = fake.last();
  return { id, bank };
}

async function webhooksOf(id: string): Promise<string[]> {
  return (await s.store.all<{ webhook_event: string }>('SELECT webhook_event FROM events WHERE payment_id = ? AND webhook_event IS NOT NULL ORDER BY seq', id)).map((r) => r.webhook_event);
}

async function requestsOf(id: string): Promise<Array<{ operation: string; state: string; request: string; answer: string; order_id: string }>> {
  return (await s.store.all('SELECT operation, state, request, answer, order_id FROM bank_requests WHERE subject_id = ? ORDER BY id', id)) as any;
}

test('a card payment: Init carries the contract fields, the page sends the buyer to PaymentURL, a signed notification settles it', async () => {
  const before = fake.calls('Init').length;
  const { id, bank } = await paying(15_000, 'cards', { description: 'Tea, 2 packs', return_url: 'https://shop.example/back?x=1' });
  assert.equal(fake.calls('Init').length, before + 1, 'one Init per POST');
  const init = fake.calls('Init').at(-1)!.body;
  assert.equal(init.TerminalKey, TERMINAL);
  assert.equal(init.Amount, 15_000);
  assert.equal(init.Description, 'Tea, 2 packs');
  assert.equal(init.NotificationURL, `${s.url}/v1/callbacks/tbank/${shop.shopId}`);
  assert.equal(init.SuccessURL, `${s.url}/pay/${id}?back=success`);
  assert.equal(init.FailURL, `${s.url}/pay/${id}?back=fail`);
  assert.equal(init.Token, sign(init, PASSWORD), 'the request is signed as the bank checks it');
  const p = await get(`/v1/public/payments/${id}`);
  assert.equal(p.status, 'processing');
  assert.equal(Date.parse(String(init.RedirectDueDate)), Math.floor(Date.parse(p.processing_until) / 1000) * 1000, 'RedirectDueDate is the session end');
  assert.equal(init.Recurrent, undefined, 'a one-off payment keeps no card');

  const rec = await requestsOf(id);
  assert.deepEqual(rec.map((r) => [r.operation, r.state]), [['Init', 'answered']]);
  assert.equal(rec[0].order_id, init.OrderId);
  assert.ok(!rec[0].request.includes(PASSWORD) && !rec[0].request.includes(String(init.Token)), 'the record holds neither the password nor the Token');

  const page = await getPage(s, `/pay/${id}`);
  assert.equal(page.status, 200);
  assert.ok(page.text.includes(`href="${fake.base}/pay/${bank.paymentId}"`), 'the page links the bank\'s PaymentURL');
  assert.ok(page.text.includes(`data-redirect="${fake.base}/pay/${bank.paymentId}"`), 'and goes there by itself');
  assert.ok(!page.text.includes('name="number"'), 'no card form in live mode');
  const back = await getPage(s, `/pay/${id}?back=success`);
  assert.ok(!back.text.includes(`${fake.base}/pay/`), 'back from the bank, the page waits instead of sending the buyer again');
  const status = await getPage(s, `/pay/${id}/status`);
  assert.equal(JSON.parse(status.text).step, 'bank_redirect');

  const r = await fake.settle(bank, 'CONFIRMED');
  assert.equal(r?.status, 200);
  assert.equal(r?.text, 'OK');
  const done = await get(`/v1/public/payments/${id}`);
  assert.equal(done.status, 'succeeded');
  assert.equal(done.customer_card_mask, '430000******0777');
  assert.deepEqual(await webhooksOf(id), ['payment.succeeded']);
  const final = await getPage(s, `/pay/${id}?back=success`);
  assert.equal(final.status, 200, 'success shows its screen, then returns to the shop');
  assert.ok(final.text.includes(`data-redirect="https://shop.example/back?x=1&amp;payment_id=${id}&amp;status=succeeded"`), final.text.slice(0, 400));
});

test('SBP: Init then GetQr; the page shows the bank\'s QR payload and waits; CONFIRMED settles it', async () => {
  const { id, bank } = await paying(9_900, 'sbp');
  assert.deepEqual((await requestsOf(id)).map((r) => r.operation), ['Init', 'GetQr']);
  const qr = fake.calls('GetQr').at(-1)!.body;
  assert.equal(qr.PaymentId, bank.paymentId);
  assert.equal(qr.DataType, 'PAYLOAD');
  const page = await getPage(s, `/pay/${id}`);
  assert.ok(page.text.includes(`data-qr-payload="https://qr.nspk.ru/AS1000${bank.paymentId}?type=02&amp;bank=100000000004&amp;sum=9900`), 'the QR code of the bank\'s payload');
  assert.ok(page.text.includes('<svg class="qr"'));
  assert.equal(JSON.parse((await getPage(s, `/pay/${id}/status`)).text).step, 'bank_qr');
  await fake.settle(bank, 'CONFIRMED');
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'succeeded');
});

test('statuses map as the contract says; statuses on the way change nothing', async () => {
  const cases: Array<[string, string, string, string?]> = [
    ['REJECTED', '1051', 'failed', 'insufficient_funds'],
    ['AUTH_FAIL', '1034', 'failed', 'three_ds_failed'],
    ['DEADLINE_EXPIRED', '0', 'expired'],
    ['CANCELED', '0', 'cancelled'],
    ['REVERSED', '0', 'cancelled'],
  ];
  for (const [status, code, want, failure] of cases) {
    const { id, bank } = await paying(20_000, 'cards');
    for (const onTheWay of ['NEW', 'FORM_SHOWED', 'AUTHORIZED']) {
      const r = await fake.settle(bank, onTheWay);
      assert.equal(r?.text, 'OK');
      assert.equal((await get(`/v1/public/payments/${id}`)).status, 'processing', `${onTheWay} moves nothing`);
    }
    await fake.settle(bank, status, code);
    const p = await get(`/v1/public/payments/${id}`);
    assert.equal(p.status, want, status);
    if (failure) {
      assert.equal(p.metadata.failure_code, failure);
      assert.equal(p.metadata.bank_failure_code, code);
    }
  }
});

test('notifications: a forged Token is 403 and changes nothing; a wrong amount is not applied and doctor names it; repeated and late ones never move back', async () => {
  const { id, bank } = await paying(12_300, 'cards');
  bank.status = 'CONFIRMED';
  const forged = fake.notification(bank);
  forged.Token = sign({ ...forged, Token: undefined }, 'guessed-password');
  assert.equal((await fake.send(bank, forged)).status, 403);
  const tampered = { ...fake.notification(bank), Amount: 1 };
  assert.equal((await fake.send(bank, tampered)).status, 403, 'a field changed after signing');
  const otherTerminal = fake.notification(bank, { TerminalKey: 'SOMEONE' });
  assert.equal((await fake.send(bank, otherTerminal)).status, 403);
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'processing');

  const wrong = await fake.send(bank, fake.notification(bank, { Amount: 100 }));
  assert.equal(wrong.status, 200);
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'processing', 'an amount that does not match is not applied');
  const mm = await s.store.all<any>('SELECT expected_amount, bank_amount FROM bank_mismatches WHERE subject_id = ?', id);
  assert.deepEqual(mm.map((r) => [r.expected_amount, r.bank_amount]), [[12_300, 100]]);
  const { diagnose } = await import('../../src/cli/doctor');
  const finding = (await diagnose(s.store)).find((f) => f.check === 'bank amounts')!;
  assert.equal(finding.ok, false);
  assert.ok(finding.detail.includes(id), 'doctor names the payment');

  const ok = await fake.send(bank, fake.notification(bank));
  assert.equal(ok.text, 'OK');
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'succeeded');
  assert.equal((await fake.send(bank, fake.notification(bank))).text, 'OK', 'a repeated notification is answered OK');
  bank.status = 'REJECTED';
  assert.equal((await fake.send(bank, fake.notification(bank, { ErrorCode: '1051' }))).text, 'OK');
  bank.status = 'CANCELED';
  await fake.send(bank, fake.notification(bank));
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'succeeded', 'late ones never move it back');
  assert.deepEqual(await webhooksOf(id), ['payment.succeeded']);

  const unsigned = fake.notification(bank);
  delete unsigned.Token;
  assert.equal((await fake.send(bank, unsigned)).status, 403);
  const notJson = await fetch(`${s.url}/v1/callbacks/tbank/${shop.shopId}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '[1,2]' });
  assert.equal(notJson.status, 403);
});

test('a notification for another shop\'s order changes nothing there', async () => {
  const { id, bank } = await paying(5_000, 'cards');
  const other = await liveTBankShop(s, { terminalKey: TERMINAL, password: PASSWORD, apiUrl: fake.apiUrl });
  bank.status = 'CONFIRMED';
  const r = await fake.send({ ...bank, notificationUrl: `${s.url}/v1/callbacks/tbank/${other.shopId}` }, fake.notification(bank));
  assert.equal(r.text, 'OK', 'valid for that terminal, but no order of that shop');
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'processing');
});

test('a live payment never reaches the test bank\'s screens: a posted card, the simulated bank app and its buttons change nothing', async () => {
  const { id } = await paying(8_800, 'cards');
  const card = await postForm(s, `/pay/${id}/card`, { number: '4111 1111 1111 1111', exp: '12/30', cvc: '123', holder: 'A B' });
  assert.equal(card.status, 303);
  const { id: sbpId } = await paying(8_900, 'sbp');
  assert.equal((await getPage(s, `/pay/${sbpId}/bank`)).status, 303, 'no simulated bank app');
  assert.equal((await postForm(s, `/pay/${sbpId}/bank`, { action: 'approve' })).status, 303);
  for (const x of [id, sbpId]) {
    const p = await get(`/v1/public/payments/${x}`);
    assert.equal(p.status, 'processing');
    assert.equal(p.customer_card_mask, '');
  }
  await s.running.app.store.flush();
  const { readdirSync, readFileSync } = await import('node:fs');
  const bytes =
    s.store.engine === 'postgres'
      ? await storedText(s)
      : readdirSync(s.dir).filter((f) => f.startsWith('kopek.db') && !f.endsWith('.lock')).map((f) => readFileSync(`${s.dir}/${f}`).toString('latin1')).join('');
  assert.ok(!bytes.includes('4111111111111111') && !bytes.includes('4111 1111 1111 1111'), 'the card number never touched the disk');
});

test('GET of a live page changes nothing: only the buyer\'s POST opens the session', async () => {
  const c = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 7_000 } });
  const id = c.body.payment.id as string;
  const inits = fake.calls('Init').length;
  for (let i = 0; i < 3; i++) assert.equal((await getPage(s, `/pay/${id}`)).status, 200);
  await pass();
  assert.equal(fake.calls('Init').length, inits);
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'pending');
  assert.deepEqual(await requestsOf(id), []);
  const page = await getPage(s, `/pay/${id}`);
  assert.ok(page.text.includes('value="cards"') && page.text.includes('value="sbp"'), 'the method choice as in test mode');
});

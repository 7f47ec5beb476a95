import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { startTestServer, type TestServer } from '../helpers/server';
import { createPayment, getPage, getPayment, payWith, postForm } from '../helpers/pay-page';
import { storedText } from '../helpers/stored-text';

let s: TestServer;
before(async () => {
  s = await startTestServer({ simDelaySeconds: 3600 });
});
after(() => s.close());

const EXP = '12/' + String(new Date().getUTCFullYear() + 2).slice(2);

/** A card payment with its card screen opened (session processing) by the buyer's "pay" step. */
async function cardPayment(amount: number): Promise<string> {
  const { id } = await createPayment(s, { amount, method: 'cards' });
  const r = await payWith(s, id, 'cards');
  assert.match(r.text, /id="card-form"/);
  return id;
}

test('the server repeats the script checks: Luhn, length, expiry, CVC length (4 for Amex), holder', async () => {
  const id = await cardPayment(10000);
  const bad: Array<[Record<string, string>, RegExp]> = [
    [{ number: '4111 1111 1111 1112', exp: EXP, cvc: '123' }, /Проверьте номер карты/],
    [{ number: '4111', exp: EXP, cvc: '123' }, /от 15 до 19 цифр/],
    [{ number: '4111111111111111', exp: '01/20', cvc: '123' }, /Срок действия карты истёк/],
    [{ number: '4111111111111111', exp: '13/40', cvc: '123' }, /в виде ММ\/ГГ/],
    [{ number: '4111111111111111', exp: EXP, cvc: '12' }, /3 цифры CVC/],
    [{ number: '378282246310005', exp: EXP, cvc: '123' }, /4 цифры CVC/],
    [{ number: '4111111111111111', exp: EXP, cvc: '123', holder: 'Иван' }, /только латинские буквы/],
  ];
  for (const [form, message] of bad) {
    const r = await postForm(s, `/pay/${id}/card`, form);
    assert.equal(r.status, 400, JSON.stringify(form));
    assert.match(r.text, message);
    assert.match(r.text, /aria-invalid="true"/);
    assert.match(r.text, /<input id="number" name="number" [^>]*value=""/, 'the number is not echoed back');
  }
  assert.equal((await getPayment(s, id)).status, 'processing');
});

test('test cards decide: success, do_not_honor, insufficient_funds', async () => {
  const cases: Array<[string, string, string]> = [
    ['2200 0000 0000 0004', 'succeeded', ''],
    ['4000000000000002', 'failed', 'do_not_honor'],
    ['2200000000000020', 'failed', 'insufficient_funds'],
  ];
  for (const [number, status, code] of cases) {
    // 10001 plans a decline: the test card wins over the magic amount.
    const id = await cardPayment(10001);
    const r = await postForm(s, `/pay/${id}/card`, { number, exp: EXP, cvc: '123', holder: 'Ivan Petrov' });
    assert.equal(r.status, 303);
    const p = await getPayment(s, id);
    assert.equal(p.status, status, number);
    assert.equal(p.metadata.failure_code ?? '', code);
    assert.equal(p.customer_card_holder, 'IVAN PETROV');
  }
});

test('any other valid card follows the magic amount plan', async () => {
  const ok = await cardPayment(10000);
  await postForm(s, `/pay/${ok}/card`, { number: '5105105105105100', exp: EXP, cvc: '123' });
  const p = await getPayment(s, ok);
  assert.equal(p.status, 'succeeded');
  assert.equal(p.customer_card_brand, 'mastercard');
  assert.equal(p.customer_card_mask, '510510******5100');
  const no = await cardPayment(10002);
  await postForm(s, `/pay/${no}/card`, { number: '5105105105105100', exp: EXP, cvc: '123' });
  assert.equal((await getPayment(s, no)).metadata.failure_code, 'insufficient_funds');
});

test('3-D Secure: the documented code passes, another code fails three_ds_failed', async () => {
  const pass = await cardPayment(10000);
  await postForm(s, `/pay/${pass}/card`, { number: '2200000000000038', exp: EXP, cvc: '123' });
  assert.equal((await getPayment(s, pass)).status, 'processing');
  const challenge = await getPage(s, `/pay/${pass}`);
  assert.match(challenge.text, /Подтверждение 3-D Secure[\s\S]*220000\*{6}0038/);
  await postForm(s, `/pay/${pass}/3ds`, { code: '123456' });
  assert.equal((await getPayment(s, pass)).status, 'succeeded');

  const fail = await cardPayment(10000);
  await postForm(s, `/pay/${fail}/card`, { number: '4000000000003220', exp: EXP, cvc: '123' });
  await postForm(s, `/pay/${fail}/3ds`, { code: '000000' });
  const p = await getPayment(s, fail);
  assert.equal(p.status, 'failed');
  assert.equal(p.metadata.failure_code, 'three_ds_failed');
  assert.match((await getPage(s, `/pay/${fail}`)).text, /неверный код 3-D Secure/);
});

test('requires_action (…03) challenges every card, then the card decides', async () => {
  const id = await cardPayment(10003);
  await postForm(s, `/pay/${id}/card`, { number: '4111111111111111', exp: EXP, cvc: '123' });
  assert.equal((await getPage(s, `/pay/${id}/status`)).body.step, 'challenge');
  await postForm(s, `/pay/${id}/3ds`, { code: '123456' });
  assert.equal((await getPayment(s, id)).status, 'succeeded');
});

test('the card number reaches neither the log nor the database file', async () => {
  const pan = '4000000000009995';
  const id = await cardPayment(10000);
  await postForm(s, `/pay/${id}/card`, { number: pan, exp: EXP, cvc: '321', holder: 'Anna' });
  const p = await getPayment(s, id);
  assert.equal(p.metadata.failure_code, 'insufficient_funds');
  assert.equal(p.customer_card_mask, '400000******9995');
  await s.store.flush();
  const logs = s.logs.join('\n');
  assert.ok(logs.includes(`/pay/${id}/card`), 'the access log saw the request');
  // The security code is searched as a field or a form value, not as bare digits: ids and times may end in 321.
  assert.ok(!logs.includes(pan) && !/cvc|"321"|=321\b/i.test(logs), 'no card data in the log');
  if (s.store.engine === 'postgres') assert.ok(!(await storedText(s)).includes(pan), 'the database holds the card number');
  for (const file of s.store.engine === 'postgres' ? [] : [s.dbPath, `${s.dbPath}-wal`]) {
    if (!existsSync(file)) continue;
    const bytes = readFileSync(file);
    assert.equal(bytes.indexOf(pan), -1, `${file} holds the card number`);
  }
});

test('after the answer the card form is gone: a second post changes nothing', async () => {
  const id = await cardPayment(10000);
  await postForm(s, `/pay/${id}/card`, { number: '4000000000000002', exp: EXP, cvc: '123' });
  const again = await postForm(s, `/pay/${id}/card`, { number: '4111111111111111', exp: EXP, cvc: '123' });
  assert.equal(again.status, 303);
  const p = await getPayment(s, id);
  assert.equal(p.status, 'failed');
  assert.equal(p.metadata.failure_code, 'do_not_honor');
  assert.equal(p.customer_card_mask, '400000******0002', 'the second card is not recorded');
});

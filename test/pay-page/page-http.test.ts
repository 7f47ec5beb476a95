import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTestServer, type TestServer } from '../helpers/server';
import { createPayment, getPage, getPayment, payWith, postForm } from '../helpers/pay-page';

let s: TestServer;
before(async () => {
  // The test bank never answers on its own here: every outcome comes from the page.
  s = await startTestServer({ simDelaySeconds: 3600 });
});
after(() => s.close());

const RETURN = 'http://127.0.0.1:9/done?x=1';

test('unknown payment id is a friendly HTML 404 page, for a UUID and for garbage', async () => {
  for (const id of [randomUUID(), 'not-a-payment']) {
    const r = await getPage(s, `/pay/${id}`);
    assert.equal(r.status, 404);
    assert.match(String(r.headers['content-type']), /^text\/html/);
    assert.match(r.text, /Платёж не найден/);
    assert.match(String(r.headers['content-security-policy']), /default-src 'none'/);
  }
  const st = await getPage(s, `/pay/${randomUUID()}/status`);
  assert.equal(st.status, 404);
  assert.equal(st.body.error.code, 'not_found');
});

test('every page carries a strict CSP with a fresh nonce, nosniff, no-referrer and no-store', async () => {
  const { id } = await createPayment(s, { amount: 10000, return_url: RETURN });
  const a = await getPage(s, `/pay/${id}`);
  const b = await getPage(s, `/pay/${id}`);
  assert.equal(a.status, 200);
  const csp = String(a.headers['content-security-policy']);
  const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1];
  assert.ok(nonce, csp);
  assert.match(csp, new RegExp(`style-src 'nonce-${nonce.replace(/[+/=]/g, '\\$&')}'`));
  for (const part of ["default-src 'none'", "img-src 'self' data:", "frame-ancestors 'none'", "form-action 'self' http://127.0.0.1:9"]) {
    assert.ok(csp.includes(part), `CSP lacks ${part}: ${csp}`);
  }
  assert.ok(a.text.includes(`<script nonce="${nonce}">`));
  assert.ok(a.text.includes(`<style nonce="${nonce}">`));
  assert.doesNotMatch(a.text, / style="/, 'inline style attributes would break under the CSP');
  assert.notEqual(/nonce-([^']+)/.exec(String(b.headers['content-security-policy']))?.[1], nonce);
  assert.equal(a.headers['x-content-type-options'], 'nosniff');
  assert.equal(a.headers['referrer-policy'], 'no-referrer');
  assert.equal(a.headers['cache-control'], 'no-store');
  assert.doesNotMatch(a.text, /https?:\/\/(?!127\.0\.0\.1)[a-z]/i, 'the page loads nothing from elsewhere');
});

test('Russian by default, English by Accept-Language, ?lang wins over both', async () => {
  const { id } = await createPayment(s, { amount: 10000 });
  assert.match((await getPage(s, `/pay/${id}`)).text, /<html lang="ru">[\s\S]*Выберите способ оплаты/);
  const en = await getPage(s, `/pay/${id}`, { 'accept-language': 'en-US,en;q=0.9,ru;q=0.5' });
  assert.match(en.text, /<html lang="en">[\s\S]*Choose how to pay/);
  assert.match(en.text, /href="\/pay\/[^"]+\?lang=ru"/, 'a visible switch back to Russian');
  const ru = await getPage(s, `/pay/${id}?lang=ru`, { 'accept-language': 'en' });
  assert.match(ru.text, /Выберите способ оплаты/);
});

test('opening the page changes nothing: a link preview or a prefetch cannot open a bank session', async () => {
  for (const method of ['any', 'sbp', 'cards', 'tpay', 'bankpay']) {
    const { id } = await createPayment(s, { amount: 10000, method });
    for (const path of [`/pay/${id}`, `/pay/${id}?lang=en`, `/pay/${id}/status`, `/pay/${id}/bank`]) await getPage(s, path);
    const p = await getPayment(s, id);
    assert.deepEqual([p.status, p.method, p.processing_until], ['pending', method, null], `GET changed a ${method} payment`);
  }
  const fixed = await createPayment(s, { amount: 10000, method: 'tpay' });
  const step = await getPage(s, `/pay/${fixed.id}?lang=en`);
  assert.match(step.text, /<h2>Pay with T-Pay<\/h2>[\s\S]*<button class="btn" type="submit" name="method" value="tpay">Continue<\/button>/);
  assert.doesNotMatch(step.text, /value="sbp"/, 'a method fixed at creation is the only one offered');
});

test('the buyer\'s POST of a method opens the session; choosing another one for a fixed method changes nothing', async () => {
  const { id } = await createPayment(s, { amount: 10000 });
  const r = await postForm(s, `/pay/${id}/method?lang=en`, { method: 'sbp' });
  assert.equal(r.status, 303);
  assert.equal(r.headers.location, `/pay/${id}?lang=en`);
  const p = await getPayment(s, id);
  assert.equal(p.status, 'processing');
  assert.equal(p.method, 'sbp');
  assert.ok(p.processing_until);
  const page = await getPage(s, `/pay/${id}?lang=en`);
  assert.match(page.text, /Pay with SBP/);
  assert.match(page.text, /<svg class="qr"/);
  const st = await getPage(s, `/pay/${id}/status`);
  assert.deepEqual(st.body, { status: 'processing', step: '', final: false, test: true });
  assert.equal((await postForm(s, `/pay/${id}/method`, { method: 'sbp' })).status, 303, 'a second POST is harmless');
  assert.equal((await getPayment(s, id)).processing_until, p.processing_until);

  const fixed = await createPayment(s, { amount: 10000, method: 'tpay' });
  await postForm(s, `/pay/${fixed.id}/method`, { method: 'cards' });
  const f = await getPayment(s, fixed.id);
  assert.deepEqual([f.status, f.method], ['pending', 'tpay']);
});

test('SBP approve follows the magic amount plan; decline fails do_not_honor', async () => {
  const cases: Array<[number, string, string]> = [
    [10000, 'approve', 'succeeded'],
    [10001, 'approve', 'failed:do_not_honor'],
    [10002, 'approve', 'failed:insufficient_funds'],
    [10000, 'decline', 'failed:do_not_honor'],
  ];
  for (const [amount, action, want] of cases) {
    const { id } = await createPayment(s, { amount, method: 'sbp' });
    await payWith(s, id, 'sbp');
    assert.equal((await postForm(s, `/pay/${id}/bank`, { action })).status, 303);
    const p = await getPayment(s, id);
    assert.equal(p.status === 'failed' ? `failed:${p.metadata.failure_code}` : p.status, want, `amount ${amount} ${action}`);
  }
});

test('requires_action (…03) asks for a confirmation; pending (…04) waits for the bank', async () => {
  const ra = await createPayment(s, { amount: 10003, method: 'tpay' });
  assert.match((await payWith(s, ra.id, 'tpay')).text, /Подтвердите оплату в приложении банка/);
  await postForm(s, `/pay/${ra.id}/bank`, { action: 'approve' });
  assert.equal((await getPayment(s, ra.id)).status, 'processing');
  assert.match((await getPage(s, `/pay/${ra.id}`)).text, /Банк просит подтвердить платёж/);
  assert.equal((await getPage(s, `/pay/${ra.id}/status`)).body.step, 'confirm');
  await postForm(s, `/pay/${ra.id}/bank`, { action: 'approve' });
  assert.equal((await getPayment(s, ra.id)).status, 'succeeded');

  const pend = await createPayment(s, { amount: 10004, method: 'bankpay' });
  await payWith(s, pend.id, 'bankpay');
  await postForm(s, `/pay/${pend.id}/bank`, { action: 'approve' });
  assert.match((await getPage(s, `/pay/${pend.id}`)).text, /Обрабатываем платёж/);
  await s.request('POST', '/v1/test/clock/advance', { body: { seconds: 21 * 60 } });
  const p = await getPayment(s, pend.id);
  assert.equal(p.status, 'expired');
  assert.equal(p.metadata.failure_code, 'session_expired');
});

test('a final status other than success redirects to return_url at once, its query kept', async () => {
  const { id } = await createPayment(s, { amount: 10001, method: 'sbp', return_url: RETURN });
  await payWith(s, id, 'sbp');
  await postForm(s, `/pay/${id}/bank`, { action: 'approve' });
  const r = await getPage(s, `/pay/${id}`);
  assert.equal(r.status, 303);
  const to = new URL(String(r.headers.location));
  assert.equal(to.origin + to.pathname, 'http://127.0.0.1:9/done');
  assert.deepEqual(Object.fromEntries(to.searchParams), { x: '1', payment_id: id, status: 'failed' });
});

test('success shows its screen with a link back and a 2 s redirect; without return_url the buyer stays', async () => {
  const a = await createPayment(s, { amount: 10000, method: 'sbp', return_url: RETURN });
  await payWith(s, a.id, 'sbp');
  await postForm(s, `/pay/${a.id}/bank`, { action: 'approve' });
  const r = await getPage(s, `/pay/${a.id}`);
  assert.equal(r.status, 200);
  const back = `http://127.0.0.1:9/done?x=1&amp;payment_id=${a.id}&amp;status=succeeded`;
  assert.ok(r.text.includes(`data-redirect="${back}"`), 'the script follows return_url');
  assert.ok(r.text.includes('data-redirect-ms="2000"'));
  assert.ok(r.text.includes(`href="${back}"`), 'a visible link as a fallback');
  assert.match(r.text, /Оплата прошла успешно/);

  const b = await createPayment(s, { amount: 10001, method: 'sbp' });
  await payWith(s, b.id, 'sbp');
  await postForm(s, `/pay/${b.id}/bank`, { action: 'approve' });
  const f = await getPage(s, `/pay/${b.id}`);
  assert.equal(f.status, 200);
  assert.match(f.text, /Платёж не прошёл[\s\S]*Банк отклонил операцию/);
  assert.doesNotMatch(f.text, /data-redirect=/);
});

test('the buyer can cancel before choosing a method, through the confirmation step', async () => {
  const { id } = await createPayment(s, { amount: 10000 });
  assert.equal((await postForm(s, `/pay/${id}/cancel`, { confirm: 'yes' })).status, 303);
  assert.equal((await getPayment(s, id)).status, 'cancelled');
  assert.match((await getPage(s, `/pay/${id}`)).text, /Платёж отменён/);
});

test('expired link shows the expired page', async () => {
  const other = await s.newShop();
  const { id } = await createPayment(s, { amount: 10000, ttl_minutes: 5 }, other.key);
  await s.request('POST', '/v1/test/clock/advance', { key: other.key, body: { seconds: 301 } });
  const r = await getPage(s, `/pay/${id}`);
  assert.equal(r.status, 200);
  assert.match(r.text, /Время на оплату истекло[\s\S]*Ссылка на оплату больше не действует/);
});

test('a card binding payment is titled as one; a merchant cannot title a plain payment so', async () => {
  const plain = await createPayment(s, { amount: 100, method: 'cards', metadata: { kind: 'token_binding' } });
  assert.equal(plain.view.payment.metadata.kind, undefined, 'kind is reserved metadata');
  assert.match((await getPage(s, `/pay/${plain.id}`)).text, /<h1>Оплата заказа<\/h1>/);
  const { id } = await createPayment(s, { amount: 100, method: 'cards' });
  await s.store.write(async (tx) => {
    const set = tx.engine === 'postgres' ? `jsonb_set(metadata::jsonb, '{kind}', '"token_binding"')::text` : `json_set(metadata, '$.kind', 'token_binding')`;
    await tx.run(`UPDATE payments SET metadata = ${set} WHERE id = ?`, id);
  });
  const r = await payWith(s, id, 'cards');
  assert.match(r.text, /<h1>Привязка карты<\/h1>/);
  assert.match(r.text, /Привязать карту/);
});

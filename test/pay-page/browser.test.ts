import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startTestServer, type TestServer } from '../helpers/server';
import { browserSkipReason, CHROMIUM, CHROMIUM_ARGS, createPayment, getPayment, screenshotDir, startReturnServer, type ReturnServer, openPage, payOnPage } from '../helpers/pay-page';

const skip = browserSkipReason();
if (skip) console.log(`# skipping browser tests: ${skip}`);

let s: TestServer;
let browser: Browser;
let shop: ReturnServer;
const EXP = '12' + String(new Date().getUTCFullYear() + 2).slice(2);

before(async () => {
  if (skip) return;
  // The test bank never answers on its own: the buyer's clicks decide.
  s = await startTestServer({ simDelaySeconds: 3600 });
  shop = await startReturnServer();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});
after(async () => {
  if (skip) return;
  await browser.close();
  await shop.close();
  await s.close();
});

/** A page in a fresh context that fails the test on any console error. */
function open(o: { width?: number; locale?: string } = {}): Promise<{ page: Page; done: () => Promise<void> }> {
  return openPage(browser, o);
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(screenshotDir(), `${name}.png`), fullPage: true });
}

async function noHorizontalScroll(page: Page, what: string): Promise<void> {
  const width = Number(await page.evaluate('document.documentElement.scrollWidth'));
  assert.ok(width <= 360, `${what}: scrollWidth ${width} > 360`);
}

async function fillCard(page: Page, number: string): Promise<void> {
  await page.getByLabel('Номер карты').fill(number);
  await page.getByLabel('Срок действия').fill(EXP);
  await page.getByLabel('CVC').fill('123');
}

test('any → SBP by keyboard → approve → success → back at return_url with its query kept', { skip }, async () => {
  const { id, url } = await createPayment(s, { amount: 125000, return_url: `${shop.url}/done?x=1` });
  const { page, done } = await open();
  await page.goto(url);
  await shot(page, 'method-choice');
  for (let i = 0; i < 15; i++) {
    await page.keyboard.press('Tab');
    if ((await page.evaluate("document.activeElement?.getAttribute('value')")) === 'sbp') break;
  }
  assert.equal(await page.evaluate("document.activeElement?.getAttribute('value')"), 'sbp', 'SBP is reachable by Tab');
  await page.keyboard.press('Enter');
  // The choice shows SBP's pay step and changes nothing; its button opens the session.
  await page.getByRole('heading', { name: 'Оплата через СБП' }).waitFor();
  assert.equal((await getPayment(s, id)).status, 'pending');
  await page.getByRole('button', { name: 'Продолжить' }).click();
  await page.locator('svg.qr').waitFor();
  assert.equal((await getPayment(s, id)).status, 'processing');
  await shot(page, 'sbp');
  await page.getByRole('button', { name: 'Подтвердить оплату' }).click();
  await page.locator('[data-final="succeeded"]').waitFor();
  const shownAt = Date.now();
  await shot(page, 'final-success');
  assert.ok(await page.getByRole('link', { name: 'Вернуться в магазин' }).isVisible());
  await page.waitForURL((u) => u.pathname === '/done', { timeout: 10_000 });
  assert.ok(Date.now() - shownAt >= 1200, 'the success screen stays about 2 s');
  const back = new URL(page.url());
  assert.deepEqual(Object.fromEntries(back.searchParams), { x: '1', payment_id: id, status: 'succeeded' });
  assert.ok(shop.hits.some((h) => h.searchParams.get('payment_id') === id));
  await done();
});

test('card: the script stops a bad number; a decline shows the reason', { skip }, async () => {
  const { id, url } = await createPayment(s, { amount: 4990, method: 'cards' });
  const { page, done } = await open();
  await payOnPage(page, url);
  await fillCard(page, '4111 1111 1111 1112');
  await page.getByRole('button', { name: /Оплатить/ }).click();
  assert.match(await page.locator('#number-err').innerText(), /Проверьте номер карты/);
  assert.equal(await page.getByLabel('Номер карты').getAttribute('aria-invalid'), 'true');
  assert.equal(await page.evaluate('document.activeElement?.id'), 'number', 'focus moves to the bad field');
  assert.equal((await getPayment(s, id)).status, 'pending', 'nothing was posted');
  await shot(page, 'card-form-error');
  await page.getByLabel('Номер карты').fill('4000 0000 0000 0002');
  await page.getByRole('button', { name: /Оплатить/ }).click();
  await page.locator('[data-final="failed"]').waitFor();
  assert.match(await page.locator('.reason').innerText(), /Банк отклонил операцию/);
  await shot(page, 'final-card-declined');
  assert.equal((await getPayment(s, id)).metadata.failure_code, 'do_not_honor');
  await done();
});

test('3-D Secure challenge passes with the test code and fails with another', { skip }, async () => {
  const pass = await createPayment(s, { amount: 30000, method: 'cards' });
  const { page, done } = await open();
  await payOnPage(page, pass.url);
  await page.getByRole('button', { name: /2200000000000038/ }).click();
  await page.getByRole('button', { name: /Оплатить/ }).click();
  await page.getByLabel('Код из SMS').waitFor();
  await shot(page, '3ds-challenge');
  await page.getByLabel('Код из SMS').fill('123456');
  await page.getByRole('button', { name: 'Подтвердить' }).click();
  await page.locator('[data-final="succeeded"]').waitFor();
  await shot(page, 'final-3ds-passed');
  assert.equal((await getPayment(s, pass.id)).customer_card_mask, '220000******0038');

  const fail = await createPayment(s, { amount: 30000, method: 'cards' });
  await payOnPage(page, fail.url);
  await fillCard(page, '4000000000003220');
  await page.getByRole('button', { name: /Оплатить/ }).click();
  await page.getByLabel('Код из SMS').fill('111111');
  await page.keyboard.press('Enter');
  await page.locator('[data-final="failed"]').waitFor();
  assert.match(await page.locator('.reason').innerText(), /неверный код 3-D Secure/);
  await shot(page, 'final-3ds-failed');
  await done();
});

test('an expired link shows the expired page', { skip }, async () => {
  const other = await s.newShop();
  const { url } = await createPayment(s, { amount: 10000, ttl_minutes: 10 }, other.key);
  await s.request('POST', '/v1/test/clock/advance', { key: other.key, body: { seconds: 601 } });
  const { page, done } = await open();
  await page.goto(url);
  assert.equal(await page.locator('[data-final]').getAttribute('data-final'), 'expired');
  assert.match(await page.locator('h2').innerText(), /Время на оплату истекло/);
  await shot(page, 'final-expired');
  await done();
});

test('the waiting page updates itself when the bank answers', { skip }, async () => {
  const { id, url } = await createPayment(s, { amount: 10004, method: 'tpay' });
  const { page, done } = await open();
  await payOnPage(page, url);
  await page.getByRole('button', { name: 'Подтвердить оплату' }).click();
  await page.getByRole('heading', { name: 'Обрабатываем платёж' }).waitFor();
  await shot(page, 'processing');
  const r = await s.request('POST', `/v1/test/payments/${id}/simulate`, { body: { action: 'succeed' } });
  assert.equal(r.status, 200);
  await page.locator('[data-final="succeeded"]').waitFor({ timeout: 10_000 });
  await done();
});

test('at 360 px every screen fits without horizontal scroll', { skip }, async () => {
  const { page, done } = await open({ width: 360 });
  const any = await createPayment(s, { amount: 99999999, order_id: 'order-with-a-rather-long-identifier-0123456789' });
  await page.goto(any.url);
  await noHorizontalScroll(page, 'method choice');
  await page.getByRole('button', { name: /СБП/ }).click();
  await page.getByRole('heading', { name: 'Оплата через СБП' }).waitFor();
  await noHorizontalScroll(page, 'pay step');
  await shot(page, 'w360-pay-step');
  await page.getByRole('button', { name: 'Продолжить' }).click();
  await page.locator('svg.qr').waitFor();
  await noHorizontalScroll(page, 'sbp');
  await shot(page, 'w360-sbp');
  const card = await createPayment(s, { amount: 10003, method: 'cards' });
  await payOnPage(page, card.url);
  await noHorizontalScroll(page, 'card form');
  await shot(page, 'w360-card-form');
  await fillCard(page, '2200 0000 0000 0004');
  await page.getByRole('button', { name: /Оплатить/ }).click();
  await page.getByLabel('Код из SMS').waitFor();
  await noHorizontalScroll(page, '3-D Secure');
  await page.getByLabel('Код из SMS').fill('123456');
  await page.keyboard.press('Enter');
  await page.locator('[data-final="succeeded"]').waitFor();
  await noHorizontalScroll(page, 'success');
  await shot(page, 'w360-final-success');
  await done();
});

test('English by the browser language; the switch goes back to Russian and sticks', { skip }, async () => {
  const { url } = await createPayment(s, { amount: 10000 });
  const { page, done } = await open({ locale: 'en-US', width: 1024 });
  await page.goto(url);
  await page.getByRole('heading', { name: 'Choose how to pay' }).waitFor();
  await shot(page, 'method-choice-en');
  await page.getByRole('link', { name: 'Русский' }).click();
  await page.getByRole('button', { name: /Банковская карта/ }).click();
  await page.getByRole('heading', { name: 'Оплата картой' }).waitFor();
  assert.match(page.url(), /\?lang=ru(&|$)/);
  await done();
});

test('the largest amount is not broken across lines at 360 px', { skip }, async () => {
  const { url } = await createPayment(s, { amount: 1_000_000_000_000, method: 'cards' });
  for (const locale of ['ru-RU', 'en-US']) {
    const { page, done } = await open({ width: 360, locale });
    await page.goto(url);
    const [height, lineHeight] = (await page.evaluate(
      `(() => { const e = document.querySelector('.amount'); return [e.getBoundingClientRect().height, parseFloat(getComputedStyle(e).lineHeight)]; })()`,
    )) as [number, number];
    assert.ok(height < lineHeight * 1.5, `${locale}: the amount takes ${height}px, more than one line of ${lineHeight}px`);
    await noHorizontalScroll(page, `amount ${locale}`);
    await shot(page, `w360-largest-amount-${locale}`);
    await done();
  }
});

test('the hosted page shows the description the merchant gave (the buyer never saw "Teapot, cast iron")', { skip }, async () => {
  const { url } = await createPayment(s, { amount: 459000, description: 'Teapot, cast iron' });
  const { page, done } = await open({ width: 360 });
  await page.goto(url);
  assert.equal(await page.locator('.head .desc').innerText(), 'Teapot, cast iron');
  await noHorizontalScroll(page, 'description');
  await shot(page, 'w360-description');
  await done();
});

test('a buyer who tapped "Bank card" by mistake goes back and pays by SBP: no way back existed after the choice', { skip }, async () => {
  const { id, url } = await createPayment(s, { amount: 125000, description: 'Tea, 3 packs' });
  const { page, done } = await open();
  await page.goto(url);
  await page.getByRole('button', { name: /Банковская карта/ }).click();
  await page.getByRole('heading', { name: 'Оплата картой' }).waitFor();
  await shot(page, 'pay-step-chosen');
  await page.getByRole('link', { name: 'Другие способы оплаты' }).click();
  await page.getByRole('heading', { name: 'Выберите способ оплаты' }).waitFor();
  await page.getByRole('button', { name: /СБП/ }).click();
  await page.getByRole('button', { name: 'Продолжить' }).click();
  await page.locator('svg.qr').waitFor();
  const p = await getPayment(s, id);
  assert.deepEqual([p.status, p.method], ['processing', 'sbp']);
  await done();
});

test('a payment with a fixed method shows "Оплата картой" with its card form, not a method list of one', { skip }, async () => {
  const { url } = await createPayment(s, { amount: 4990, method: 'cards' });
  const { page, done } = await open();
  await page.goto(url);
  await page.getByRole('heading', { name: 'Оплата картой' }).waitFor();
  assert.equal(await page.locator('ul.methods').count(), 0);
  assert.equal(await page.getByRole('link', { name: 'Другие способы оплаты' }).count(), 0);
  assert.ok(await page.getByLabel('Номер карты').isVisible(), 'the card form is the first screen');
  await shot(page, 'pay-step-fixed');
  await done();
});

test('a foreign page that auto-submits POST /pay/{id}/cancel is refused with a clear page; the payment stays pending', { skip }, async () => {
  const { id } = await createPayment(s, { amount: 10000 });
  // The attacker's page: another origin (another port of the same host), a form that posts itself on load.
  const evil: Server = createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><form id="f" method="post" action="${s.url}/pay/${id}/cancel"></form><script>document.getElementById('f').submit()</script>`);
  });
  await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
  try {
    // Not open(): the refusal is a 403 document, which Chromium logs as a console error.
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, locale: 'ru-RU' });
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
    await page.getByRole('heading', { name: 'Форма пришла с другого сайта' }).waitFor();
    assert.equal(new URL(page.url()).pathname, `/pay/${id}/cancel`);
    await shot(page, 'foreign-form-refused');
    assert.equal((await getPayment(s, id)).status, 'pending');
    await page.getByRole('link', { name: 'Открыть страницу оплаты' }).click();
    await page.getByRole('heading', { name: 'Выберите способ оплаты' }).waitFor();
    await context.close();
  } finally {
    await new Promise<void>((resolve) => evil.close(() => resolve()));
  }
});

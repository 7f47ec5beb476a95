import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startTestServer, type TestServer } from '../helpers/server';
import { browserSkipReason, CHROMIUM, CHROMIUM_ARGS, screenshotDir, startReturnServer, type ReturnServer, openPage, payOnPage } from '../helpers/pay-page';
import { advanceSeconds, createSubscription, createToken, get } from '../helpers/recurrent';

const skip = browserSkipReason();
if (skip) console.log(`# skipping browser tests: ${skip}`);

/** The test bank answers 2 min after a session opens: the buyer's clicks decide first, and a charge still settles before its 5 min session ends. */
const SIM_DELAY_S = 120;

let s: TestServer;
let browser: Browser;
let shop: ReturnServer;

before(async () => {
  if (skip) return;
  s = await startTestServer({ simDelaySeconds: SIM_DELAY_S });
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
function open(): Promise<{ page: Page; done: () => Promise<void> }> {
  return openPage(browser);
}

test('card binding with 3-D Secure on the hosted page activates the token; the merchant then charges it', { skip }, async () => {
  const c = await createToken(s, { customer_ref: 'browser-card', return_url: `${shop.url}/saved` });
  const { page, done } = await open();
  await payOnPage(page, c.pay_url);
  await page.getByRole('heading', { name: 'Привязка карты' }).waitFor();
  await page.getByRole('button', { name: /2200000000000038/ }).click();
  await page.getByRole('button', { name: 'Привязать карту' }).click();
  await page.getByLabel('Код из SMS').fill('123456');
  await page.getByRole('button', { name: 'Подтвердить' }).click();
  await page.locator('[data-final="succeeded"]').waitFor();
  assert.match(await page.locator('h2').innerText(), /Карта привязана/);
  await page.screenshot({ path: join(screenshotDir(), 'token-card-bound.png'), fullPage: true });
  await page.waitForURL((u) => u.pathname === '/saved', { timeout: 10_000 });
  assert.equal(new URL(page.url()).searchParams.get('payment_id'), c.binding_payment_id);
  await done();

  const t = await get(s, `/v1/public/tokens/${c.card.id}`);
  assert.equal(t.status, 'active');
  assert.equal(t.card_brand, 'mir');
  assert.equal(t.card_mask, '0038');
  const charge = await s.request('POST', `/v1/public/tokens/${t.id}/charge`, { body: { amount: 15000 } });
  assert.equal(charge.status, 201);
  assert.equal(charge.body.status, 'processing', 'a saved card needs no buyer: the session opens at once');
  await advanceSeconds(s, SIM_DELAY_S);
  assert.equal((await get(s, `/v1/public/payments/${charge.body.id}`)).status, 'succeeded');
});

test('a failed 3-D Secure leaves the token pending', { skip }, async () => {
  const c = await createToken(s, { customer_ref: 'browser-card-fail' });
  const { page, done } = await open();
  await payOnPage(page, c.pay_url);
  await page.getByLabel('Номер карты').fill('4000 0000 0000 3220');
  await page.getByLabel('Срок действия').fill('12/40');
  await page.getByLabel('CVC').fill('123');
  await page.getByRole('button', { name: 'Привязать карту' }).click();
  await page.getByLabel('Код из SMS').fill('000000');
  await page.keyboard.press('Enter');
  await page.locator('[data-final="failed"]').waitFor();
  await done();
  assert.equal((await get(s, `/v1/public/tokens/${c.card.id}`)).status, 'pending');
});

test('an SBP subscription binds in the bank app on the hosted page and becomes active', { skip }, async () => {
  const c = await createSubscription(s, { amount: 39900, customer_ref: 'browser-sbp', method: 'sbp', plan_name: 'Music' });
  const { page, done } = await open();
  await payOnPage(page, c.pay_url);
  await page.getByRole('heading', { name: 'Подписка' }).waitFor();
  await page.locator('svg.qr').waitFor();
  await page.getByRole('button', { name: 'Подтвердить оплату' }).click();
  await page.locator('[data-final="succeeded"]').waitFor();
  assert.match(await page.locator('h2').innerText(), /Подписка оформлена/);
  await page.screenshot({ path: join(screenshotDir(), 'subscription-sbp-bound.png'), fullPage: true });
  await done();
  const sub = await get(s, `/v1/public/subscriptions/${c.subscription.id}`);
  assert.equal(sub.status, 'active');
  assert.equal((await get(s, `/v1/public/tokens/${sub.token_id}`)).status, 'active');
  assert.ok(sub.next_charge_at);
});

test('an SBP token binds with its first charge on the hosted page', { skip }, async () => {
  const c = await createToken(s, { customer_ref: 'browser-sbp-token', method: 'sbp', amount: 12300 });
  const { page, done } = await open();
  await payOnPage(page, c.pay_url);
  await page.getByRole('button', { name: 'Подтвердить оплату' }).click();
  await page.locator('[data-final="succeeded"]').waitFor();
  await done();
  const t = await get(s, `/v1/public/tokens/${c.card.id}`);
  assert.equal(t.status, 'active');
  assert.equal(t.card_mask, '');
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { startTestServer, type TestServer, type TestShop } from '../helpers/server';
import { browserSkipReason, CHROMIUM, CHROMIUM_ARGS, openPage, screenshotDir } from '../helpers/pay-page';
import { purpose } from '../../src/web/pay-page/i18n';
import { FakeTBank } from './fake-tbank';
import { liveTBankShop } from '../helpers/tbank';

// The live buyer's way in a real browser: the method on kopek's page, then the bank's own page (the fake's
// PaymentURL, which pays, notifies kopek and sends the buyer to SuccessURL), back to kopek's page with the
// outcome; and SBP, where kopek's page shows the bank's QR code and waits for the notification.

const skip = browserSkipReason();
if (skip) console.log(`# skipping browser tests: ${skip}`);

const TERMINAL = '1700000000BROWSER';
const PASSWORD = 'browser-terminal-pass-a41f';
let s: TestServer;
let fake: FakeTBank;
let shop: TestShop;
let browser: Browser;

before(async () => {
  if (skip) return;
  fake = await new FakeTBank({ [TERMINAL]: PASSWORD }).start();
  s = await startTestServer();
  shop = await liveTBankShop(s, { terminalKey: TERMINAL, password: PASSWORD, apiUrl: fake.apiUrl });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});
after(async () => {
  if (skip) return;
  await browser.close();
  await s.close();
  await fake.close();
});

async function create(body: Record<string, unknown>): Promise<string> {
  const r = await s.request('POST', '/v1/public/payments', { key: shop.key, body });
  assert.equal(r.status, 201, r.text);
  return r.body.payment.id as string;
}

async function status(id: string): Promise<string> {
  return (await s.request('GET', `/v1/public/payments/${id}`, { key: shop.key })).body.status;
}

test('live card payment in Chromium: kopek\'s page → the bank\'s page → back to kopek with the outcome; no card form at kopek', { skip }, async () => {
  const id = await create({ amount: 25_000, description: 'Browser live card' });
  const { page, done } = await openPage(browser);
  await page.goto(`${s.url}/pay/${id}`);
  assert.equal(await page.locator('input[name="number"]').count(), 0);
  await page.locator('button[value="cards"]').click();
  // The choice shows the card's pay step (it changes nothing); its button opens the session.
  await page.locator('button[value="cards"]').click();
  // kopek waits for Init, then sends the buyer to the bank's PaymentURL.
  await page.waitForURL(`${fake.base}/pay/**`, { timeout: 10_000 });
  await page.screenshot({ path: join(screenshotDir(), 'live-card-bank.png'), fullPage: true });
  await page.locator('#bank-pay').click();
  await page.waitForURL(`${s.url}/pay/${id}?back=success`, { timeout: 10_000 });
  await page.getByText(purpose('ru', 'payment').done).waitFor({ timeout: 10_000 });
  await page.screenshot({ path: join(screenshotDir(), 'live-card-done.png'), fullPage: true });
  assert.equal(await status(id), 'succeeded');
  assert.equal(fake.notified.at(-1)?.text, 'OK');
  await done();
});

test('live SBP payment in Chromium: kopek shows the bank\'s QR code and the page moves on by itself when the bank confirms', { skip }, async () => {
  const id = await create({ amount: 7_700, method: 'sbp' });
  const { page, done } = await openPage(browser);
  await page.goto(`${s.url}/pay/${id}`);
  await page.locator('button[value="sbp"]').click();
  const qr = page.locator('[data-qr-payload]');
  await qr.waitFor({ timeout: 10_000 });
  const bank = fake.last();
  assert.match(String(await qr.getAttribute('data-qr-payload')), new RegExp(`^https://qr\\.nspk\\.ru/AS1000${bank.paymentId}\\?`));
  assert.equal(await page.locator('svg.qr').count(), 1);
  await page.screenshot({ path: join(screenshotDir(), 'live-sbp-qr.png'), fullPage: true });
  await fake.settle(bank, 'CONFIRMED');
  await page.getByText(purpose('ru', 'payment').done).waitFor({ timeout: 10_000 });
  assert.equal(await status(id), 'succeeded');
  await done();
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chromium, type Browser } from 'playwright-core';
import { startTestServer, type TestServer } from '../helpers/server';
import { browserSkipReason, CHROMIUM, CHROMIUM_ARGS, openPage, startReturnServer, type ReturnServer } from '../helpers/pay-page';
import { createPayment } from '../helpers/payments';

// What docs/webhooks.md tells a merchant to do for a live page: its server asks for a stream token, its page
// (another origin than kopek's) opens an EventSource on the stream URL. Chromium checks CORS as any browser would.

const skip = browserSkipReason();
if (skip) console.log(`# skipping browser tests: ${skip}`);

let s: TestServer;
let browser: Browser;
let shopSite: ReturnServer;

before(async () => {
  if (skip) return;
  s = await startTestServer();
  shopSite = await startReturnServer();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});
after(async () => {
  if (skip) return;
  await browser.close();
  await shopSite.close();
  await s.close();
});

test('a browser EventSource on a page of another origin reads the stream with a stream token', { skip }, async () => {
  const shop = await s.newShop();
  const minted = await s.request('POST', '/v1/public/events/token', { key: shop.key });
  assert.equal(minted.status, 201);
  const { page, done } = await openPage(browser);
  await page.goto(shopSite.url);
  assert.notEqual(new URL(shopSite.url).origin, new URL(s.url).origin);
  await page.evaluate(
    (url) =>
      new Promise<void>((resolve, reject) => {
        const w = globalThis as unknown as { seen: Array<{ type: string; id: string; data: string }> };
        w.seen = [];
        const es = new EventSource(url);
        const timer = setTimeout(() => reject(new Error('EventSource did not open within 10 s')), 10_000);
        es.onopen = () => {
          clearTimeout(timer);
          resolve();
        };
        es.addEventListener('payment.created', (e) => w.seen.push({ type: e.type, id: (e as MessageEvent).lastEventId, data: (e as MessageEvent).data }));
      }),
    minted.body.stream_url,
  );
  const c = await createPayment(s, { amount: 12345 }, shop.key);
  await page.waitForFunction(() => (globalThis as unknown as { seen: unknown[] }).seen.length > 0, undefined, { timeout: 10_000 });
  const seen = await page.evaluate(() => (globalThis as unknown as { seen: Array<{ type: string; id: string; data: string }> }).seen);
  assert.equal(seen.length, 1);
  assert.equal(seen[0].type, 'payment.created');
  assert.match(seen[0].id, /^\d+$/);
  assert.equal(JSON.parse(seen[0].data).payload.id, c.payment.id);
  await done();
});

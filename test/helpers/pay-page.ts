import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { TestResponse, TestServer } from './server';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';

/** Debian's Chromium, which CI installs with apt; browser tests skip only when it is absent. */
export const CHROMIUM = '/usr/bin/chromium';

/** Flags for a quiet headless Chromium that never reaches the network on its own. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
];

/** Why browser tests are skipped here, or false when Chromium is installed. */
export function browserSkipReason(): string | false {
  return existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent: install Debian's chromium (apt-get install -y chromium) to run the browser tests`;
}

/** Folder of the screenshots kept as test artifacts (git-ignored). */
export function screenshotDir(): string {
  const dir = join(process.cwd(), '.artifacts', 'screenshots');
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Create a payment with the demo test key; fails the test unless it answers 201. */
export async function createPayment(s: TestServer, body: Record<string, unknown>, key?: string): Promise<{ id: string; url: string; view: any }> {
  const r = await s.request('POST', '/v1/public/payments', { body, key });
  if (r.status !== 201) throw new Error(`create payment answered ${r.status}: ${r.text}`);
  return { id: r.body.payment.id, url: r.body.payment_url, view: r.body };
}

/** The payment as the API shows it. */
export async function getPayment(s: TestServer, id: string, key?: string): Promise<any> {
  const r = await s.request('GET', `/v1/public/payments/${id}`, { key });
  if (r.status !== 200) throw new Error(`get payment answered ${r.status}: ${r.text}`);
  return r.body;
}

/** Post a page form (urlencoded) as a browser would, without a key. */
export function postForm(s: TestServer, path: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<TestResponse> {
  return s.request('POST', path, {
    key: null,
    body: new URLSearchParams(fields).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  });
}

/** GET a page as a browser would (no key). */
export function getPage(s: TestServer, path: string, headers: Record<string, string> = {}): Promise<TestResponse> {
  return s.request('GET', path, { key: null, headers });
}

/** A merchant's return_url receiver: records every request it gets. */
export interface ReturnServer {
  /** Base address, e.g. http://127.0.0.1:40123 */
  url: string;
  hits: URL[];
  close(): Promise<void>;
}

/** Start a tiny node:http server that plays the merchant's shop for return_url redirects. */
export async function startReturnServer(): Promise<ReturnServer> {
  const hits: URL[] = [];
  const server: Server = createServer((req, res) => {
    hits.push(new URL(req.url ?? '/', 'http://127.0.0.1'));
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>Shop</title><h1>Back at the shop</h1>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A page in a fresh browser context; any console error (a CSP violation among them) fails the test at `done`. */
export async function openPage(
  browser: Browser,
  o: { width?: number; locale?: string } = {},
): Promise<{ page: Page; done: () => Promise<void> }> {
  const context = await browser.newContext({ viewport: { width: o.width ?? 390, height: 844 }, locale: o.locale ?? 'ru-RU' });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  return {
    page,
    done: async () => {
      await context.close();
      assert.deepEqual(problems, [], 'the page logged errors');
    },
  };
}

/**
 * Open the page of a payment whose method was fixed at creation and take its one "pay" step, as a buyer
 * does: the page itself changes nothing, the click opens the bank session. A test card payment's first
 * screen is already its card form (its "Pay" opens the session), so there is nothing to click.
 */
export async function payOnPage(page: Page, url: string): Promise<void> {
  await page.goto(url);
  if ((await page.locator('#card-form').count()) > 0) return;
  await page.locator('button[name="method"]').click();
}

/** The buyer's POST that opens a payment's session on the page (the method fixed at creation, or the one chosen). */
export async function payWith(s: TestServer, id: string, method: string): Promise<TestResponse> {
  const r = await postForm(s, `/pay/${id}/method`, { method });
  assert.equal(r.status, 303, r.text);
  return getPage(s, `/pay/${id}`);
}

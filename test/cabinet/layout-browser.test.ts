import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startTestServer, type TestServer } from '../helpers/server';
import { browserSkipReason, CHROMIUM, CHROMIUM_ARGS, screenshotDir } from '../helpers/pay-page';
import { makeUser, TEST_PASSWORD } from '../helpers/cabinet';
import { paidPayment } from '../helpers/money';

// Regressions measured in Chromium: at 360 px the cabinet's header and section navigation took ~300 px and the
// overview's chart labels were drawn at about 6 px; at 1280 px the register filter put "Amount to" on a second
// row and its date labels sat higher than the others.

const skip = browserSkipReason();
if (skip) console.log(`# skipping cabinet browser tests: ${skip}`);

/** The most the header and the section navigation may take at 360 px, so the page's own content shows. */
const HEAD_MAX_PX = 120;
/** The least height of a chart label's glyph box: an 11 px font or larger. */
const LABEL_MIN_PX = 12;

const USER = 'layout@tea.example';
let s: TestServer;
let browser: Browser;

before(async () => {
  if (skip) return;
  s = await startTestServer();
  await makeUser(s, s.demo.merchantId, USER);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  for (const amount of [125000, 49000, 2_500_000]) await paidPayment(s, s.demo.key, amount);
});
after(async () => {
  if (skip) return;
  await browser.close();
  await s.close();
});

/** A signed-in page at `width`; the session takes the browser's language. */
async function signedIn(width: number, locale: string): Promise<{ page: Page; close: () => Promise<void> }> {
  const context = await browser.newContext({ viewport: { width, height: 900 }, locale });
  const page = await context.newPage();
  await page.goto(`${s.url}/cabinet/login`);
  await page.locator('#email').fill(USER);
  await page.locator('#password').fill(TEST_PASSWORD);
  await page.keyboard.press('Enter');
  await page.waitForURL((u) => u.pathname === '/cabinet/overview');
  return { page, close: () => context.close() };
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(screenshotDir(), 'cabinet', `${name}.png`), fullPage: true });
}

test(`at 360 px the header and the section navigation took ~300 px: at most ${HEAD_MAX_PX} px, each section reachable in its strip`, { skip }, async () => {
  for (const locale of ['en-GB', 'ru-RU']) {
    const { page, close } = await signedIn(360, locale);
    for (const path of ['/cabinet/overview', '/cabinet/payments', '/cabinet/account']) {
      await page.goto(`${s.url}${path}`);
      const bottom = Number(await page.evaluate("document.querySelector('nav.sections').getBoundingClientRect().bottom"));
      assert.ok(bottom <= HEAD_MAX_PX, `${locale} ${path}: the header and the navigation end at ${bottom} px`);
      const width = Number(await page.evaluate('document.documentElement.scrollWidth'));
      assert.ok(width <= 360, `${locale} ${path}: the page scrolls sideways (${width} px)`);
    }
    // The mode, language and sign-out controls stay on screen; every section can be scrolled to and opened.
    for (const el of await page.locator('header.top button').all()) {
      const box = (await el.boundingBox())!;
      assert.ok(box.x >= 0 && box.x + box.width <= 360, `${locale}: a header control runs off the screen (${JSON.stringify(box)})`);
    }
    const links = page.locator('nav.sections a');
    assert.equal(await links.count(), 10);
    const last = links.last();
    await last.scrollIntoViewIfNeeded();
    const box = (await last.boundingBox())!;
    assert.ok(box.x >= 0 && box.x + box.width <= 360, `${locale}: the last section scrolls into view (${JSON.stringify(box)})`);
    await last.click();
    await page.waitForURL((u) => u.pathname === '/cabinet/account');
    // The page's script brings the current section into the strip's view.
    const current = (await page.locator('nav.sections a[aria-current=page]').boundingBox())!;
    assert.ok(current.x >= 0 && current.x + current.width <= 360, `${locale}: the current section is out of view (${JSON.stringify(current)})`);
    assert.equal(Number(await page.evaluate('window.scrollY')), 0, 'the page itself did not scroll');
    await shot(page, `head-360-${locale}`);
    await close();
  }
});

/** The visible axis labels of each chart: their text, glyph box and font size as drawn (an SVG's text scaled with it). */
function chartLabels(page: Page): Promise<Array<Array<{ text: string; left: number; right: number; top: number; bottom: number; axis: string }>>> {
  return page.$$eval('figure.chart-box', (figures) =>
    figures.map((f) => {
      const els = [...f.querySelectorAll('.plot .xaxis span, .plot .yaxis span, svg text')].filter((e) => e.ownerDocument.defaultView!.getComputedStyle(e).visibility === 'visible');
      return els.map((e) => {
        const range = e.ownerDocument.createRange();
        range.selectNodeContents(e);
        const r = range.getBoundingClientRect();
        const axis = e.closest('.yaxis') || e.getAttribute('text-anchor') === 'end' ? 'y' : 'x';
        return { text: (e.textContent ?? '').trim(), left: r.left, right: r.right, top: r.top, bottom: r.bottom, axis };
      });
    }),
  );
}

test('the chart labels were about 6 px at 360 px: at 360, 700 and 1280 px each is at least 11 px, none overlaps another or leaves its chart', { skip }, async () => {
  for (const [width, locale] of [[360, 'ru-RU'], [360, 'en-GB'], [700, 'ru-RU'], [1280, 'en-GB']] as const) {
    const { page, close } = await signedIn(width, locale);
    const charts = await chartLabels(page);
    assert.equal(charts.length, 2, 'two charts');
    const boxes = await page.$$eval('figure.chart-box', (fs) => fs.map((f) => f.getBoundingClientRect()).map((r) => ({ left: r.left, right: r.right })));
    for (const [i, labels] of charts.entries()) {
      const where = `${width} px ${locale}, chart ${i + 1}`;
      const xs = labels.filter((l) => l.axis === 'x').sort((a, b) => a.left - b.left);
      const ys = labels.filter((l) => l.axis === 'y').sort((a, b) => a.top - b.top);
      assert.ok(xs.length >= 4 && ys.length >= 3, `${where}: ${xs.length} day labels, ${ys.length} scale labels`);
      for (const l of labels) {
        assert.ok(l.bottom - l.top >= LABEL_MIN_PX, `${where}: "${l.text}" is drawn ${(l.bottom - l.top).toFixed(1)} px high`);
        assert.ok(l.left >= boxes[i].left - 1 && l.right <= boxes[i].right + 1, `${where}: "${l.text}" leaves its chart`);
      }
      for (let k = 1; k < xs.length; k++) assert.ok(xs[k].left >= xs[k - 1].right + 2, `${where}: "${xs[k - 1].text}" and "${xs[k].text}" overlap`);
      for (let k = 1; k < ys.length; k++) assert.ok(ys[k].top >= ys[k - 1].bottom, `${where}: "${ys[k - 1].text}" and "${ys[k].text}" overlap`);
    }
    if (width === 360) await shot(page, `chart-360-${locale}`);
    await close();
  }
});

test('at 1280 px the register filter wrapped "Amount to" to a second row with its date labels out of line: one row, labels aligned and whole', { skip }, async () => {
  for (const locale of ['en-GB', 'ru-RU']) {
    const { page, close } = await signedIn(1280, locale);
    for (const register of ['payments', 'refunds', 'payouts']) {
      await page.goto(`${s.url}/cabinet/${register}`);
      const fields = await page.$$eval('form.filters .field', (els) =>
        els.map((f) => {
          const label = f.querySelector('label')!;
          const control = f.querySelector('input, select')!;
          const [l, c] = [label.getBoundingClientRect(), control.getBoundingClientRect()];
          return { label: label.textContent, lTop: l.top, lBottom: l.bottom, cTop: c.top, cBottom: c.bottom, whole: label.scrollWidth <= label.clientWidth };
        }),
      );
      const where = `${locale} ${register}`;
      assert.ok(fields.length >= 6, `${where}: ${fields.length} fields`);
      const spread = (k: 'lTop' | 'lBottom' | 'cTop' | 'cBottom') => Math.max(...fields.map((f) => f[k])) - Math.min(...fields.map((f) => f[k]));
      assert.ok(spread('cTop') < 1 && spread('cBottom') < 1, `${where}: the inputs are not on one row: ${JSON.stringify(fields.map((f) => [f.label, f.cTop, f.cBottom]))}`);
      assert.ok(spread('lTop') < 1 && spread('lBottom') < 1, `${where}: the labels are out of line: ${JSON.stringify(fields.map((f) => [f.label, f.lTop, f.lBottom]))}`);
      const cut = fields.filter((f) => !f.whole).map((f) => f.label);
      assert.deepEqual(cut, [], `${where}: labels cut short`);
      if (register === 'payments') await shot(page, `filter-1280-${locale}`);
    }
    await close();
  }
});

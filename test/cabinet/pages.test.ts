import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer, type TestShop } from '../helpers/server';
import { cabGet, cabPost, makeUser, signIn, type CabinetSession } from '../helpers/cabinet';
import { paidPayment } from '../helpers/money';
import { cardBody, sbpBody } from '../helpers/payouts';

let s: TestServer;
let shop: TestShop;
let session: CabinetSession;

before(async () => {
  s = await startTestServer();
  // A merchant of its own: the pages show exactly this test's data.
  shop = await s.newShop();
  await makeUser(s, shop.merchantId, 'pages@shop.example');
  session = await signIn(s, 'pages@shop.example');
});
after(() => s.close());

/** The text of a page without tags (entities of the characters tested here decoded). */
function textOf(html: string): string {
  return html
    .replace(/<script[\s\S]*?<\/script>|<style[\s\S]*?<\/style>|<title[^>]*>[\s\S]*?<\/title>/g, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ');
}

/** A CSV read as a spreadsheet splitting on `sep` would, ignoring the quoting of another separator: every cell. */
function cellsSplitOn(csv: string, sep: string): string[] {
  return csv.split(/\r\n/).flatMap((line) => line.split(sep));
}

test('CSV export: a field like x;=1+1 no longer starts a formula when a spreadsheet splits on ; (or , or a tab)', async () => {
  const nasty = ['x;=1+1', 'a,-2+3', 'tab\t@SUM(A1)', 'y; "=HYPERLINK(1)"', '+7 call'];
  for (const [i, order] of nasty.entries()) {
    const r = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 1000 + i, order_id: order } });
    assert.equal(r.status, 201, r.text);
  }
  const id = await paidPayment(s, shop.key, 20000);
  assert.equal((await s.request('POST', `/v1/public/payments/${id}/refund`, { key: shop.key, body: { amount: 100, reason: 'ok;-1+1,@x' } })).status, 201);
  for (const path of ['/cabinet/payments.csv', '/cabinet/refunds.csv']) {
    const csv = (await cabGet(s, session, path)).text;
    for (const sep of [',', ';', '\t']) {
      for (const cell of cellsSplitOn(csv, sep)) {
        assert.doesNotMatch(cell.replace(/^[\s"]+/, ''), /^[=+\-@]/, `${path} split on ${JSON.stringify(sep)}: ${JSON.stringify(cell)}`);
      }
    }
  }
  // The values stay readable: the defused cell starts with ' and keeps the text.
  const payments = (await cabGet(s, session, '/cabinet/payments.csv')).text;
  assert.ok(payments.includes(`"x;'=1+1"`), payments.slice(0, 400));
  assert.ok(payments.includes(`"a,'-2+3"`));
});

test('the refunds register showed a truncated payment UUID: it shows the order id (or the public number), linked to the payment', async () => {
  const id = await paidPayment(s, shop.key, 30000);
  const pay = (await s.request('GET', `/v1/public/payments/${id}`, { key: shop.key })).body;
  assert.equal((await s.request('POST', `/v1/public/payments/${id}/refund`, { key: shop.key, body: { amount: 5000, reason: 'chipped lid' } })).status, 201);
  const page = await cabGet(s, session, '/cabinet/refunds');
  const row = page.text.split('<tr>').find((r) => r.includes('chipped lid'))!;
  assert.ok(row.includes(`<a href="/cabinet/payments/${id}">${pay.order_id}</a>`), row);
  assert.ok(row.includes(pay.public_id), 'the public number beside it');
  assert.ok(!row.includes(`${id.slice(0, 8)}…`), 'no truncated UUID');
  const csv = (await cabGet(s, session, '/cabinet/refunds.csv')).text.split('\r\n');
  assert.equal(csv[0], 'created_at,payment_id,order_id,amount,status,reason,shop');
  assert.ok(csv.some((l) => l.includes(`${id},${pay.order_id},5000,`)));
});

test('the payouts register showed no recipient and the raw method code: it shows the masked phone or card and the method by name', async () => {
  const funded = await paidPayment(s, shop.key, 900000);
  assert.ok(funded);
  for (const body of [sbpBody(10000), cardBody(20000)]) {
    const r = await s.request('POST', '/v1/public/payouts', { key: shop.key, body });
    assert.equal(r.status, 201, r.text);
  }
  const en = await cabPost(s, session, '/cabinet/prefs', { lang: 'en', back: '/cabinet/payouts' });
  assert.equal(en.status, 303);
  const text = textOf((await cabGet(s, session, '/cabinet/payouts')).text);
  assert.match(text, /To a phone \(SBP\) \+7 ••• •••-••-67/);
  assert.match(text, /To a card •••• 9999/);
  assert.doesNotMatch(text, /payouts_sbp|payouts_card|79001234567|2200700155559999/);
  const csv = (await cabGet(s, session, '/cabinet/payouts.csv')).text;
  assert.match(csv.split('\r\n')[0], /^created_at,method,recipient,amount,status,id,shop/);
  assert.doesNotMatch(csv, /79001234567|2200700155559999/);
  await cabPost(s, session, '/cabinet/prefs', { lang: 'ru', back: '/cabinet/overview' });
});

test('the payment page showed raw minor units and offered Resend for an event no endpoint received: money as money, and it says no endpoint received it', async () => {
  const id = await paidPayment(s, shop.key, 150000);
  await cabPost(s, session, '/cabinet/prefs', { lang: 'en', back: '/cabinet/overview' });
  const page = await cabGet(s, session, `/cabinet/payments/${id}`);
  const text = textOf(page.text);
  assert.doesNotMatch(text, /amount: 150000/);
  assert.match(text, /Amount: ₽1,500\.00/);
  assert.match(text, /No webhook endpoint received it\./);
  assert.doesNotMatch(page.text, /aria-label="Resend payment/, 'nothing to resend');
  assert.match(text, /Webhook deliveries Nothing found/);
  // An endpoint added since: the event can be sent to it now.
  const hook = await cabPost(s, session, '/cabinet/webhooks', { shop: shop.shopId, url: 'https://hooks.example/psp', signature: 'v2' });
  assert.equal(hook.status, 200);
  assert.match((await cabGet(s, session, `/cabinet/payments/${id}`)).text, /aria-label="Send payment\.succeeded"/);
  await cabPost(s, session, '/cabinet/prefs', { lang: 'ru', back: '/cabinet/overview' });
});

test('Russian pages showed raw codes (sbp, test, succeeded, kopek test bank, max) and wrong plurals: codes in words, Intl plural rules, every time names UTC', async () => {
  const id = await paidPayment(s, shop.key, 40000);
  const payment = textOf((await cabGet(s, session, `/cabinet/payments/${id}`)).text);
  // Event names (payment.succeeded) are the API's identifiers and stay as they are; statuses and methods do not.
  for (const raw of [/(?<![.\w])sbp\b/, /(?<![.\w])succeeded\b/, /kopek test bank/, /Режим test\b/]) assert.doesNotMatch(payment, raw);
  assert.match(payment, /Способ СБП/);
  assert.match(payment, /Режим тестовый/);
  assert.match(payment, /Банк Тестовый банк kopek/);
  assert.match(payment, /Статус: успешно/);
  assert.match(payment, /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
  assert.doesNotMatch(payment, /\d\d:\d\d:\d\d (?!UTC)/, 'no time without its zone');
  const overview = (await cabGet(s, session, '/cabinet/overview')).text;
  assert.doesNotMatch(textOf(overview), /\bmax\b/);
  const count = Number(/<title id="chart-count">[^<]*: (\d+)/.exec(overview)![1]);
  const word = new Intl.PluralRules('ru-RU').select(count);
  assert.match(overview, new RegExp(`<title id="chart-count">[^<]*: ${count} ${{ one: 'платёж', few: 'платежа', many: 'платежей' }[word as 'one']}<`));
  const keys = textOf((await cabGet(s, session, `/cabinet/keys?shop=${shop.shopId}`)).text);
  assert.match(keys, /тестовый/);
});

test('the overview chart put a count and money on one axis with a floating max: each has its own chart and scale, with a legend', async () => {
  await cabPost(s, session, '/cabinet/prefs', { lang: 'en', back: '/cabinet/overview' });
  const html = (await cabGet(s, session, '/cabinet/overview')).text;
  // Each chart is its axis labels (HTML, so they keep their size on a narrow screen) around the SVG of its bars.
  const count = /<div class="plot">\s*<div class="yaxis"[^>]*>.*?<\/div>\s*<svg class="chart"[^>]*aria-labelledby="chart-count"/.exec(html)![0];
  const paid = /<div class="plot">\s*<div class="yaxis"[^>]*>.*?<\/div>\s*<svg class="chart"[^>]*aria-labelledby="chart-paid"/.exec(html)![0];
  const ticks = (plot: string) => [.../<div class="yaxis"[^>]*>(.*?)<\/div>/.exec(plot)![1].matchAll(/<span>([^<]+)<\/span>/g)].map((m) => m[1]);
  assert.ok(ticks(count).length >= 2 && ticks(paid).length >= 2, `both axes have ticks: ${ticks(count)} / ${ticks(paid)}`);
  assert.ok(ticks(count).every((t) => /^\d+$/.test(t)), `count axis: ${ticks(count)}`);
  const [top, half, zero] = ticks(count).map(Number);
  assert.deepEqual([half * 2, zero], [top, 0], `the count axis's middle tick is its half (a top of 5 read "3"): ${ticks(count)}`);
  assert.ok(ticks(paid).every((t) => /^₽/.test(t)), `money axis: ${ticks(paid)}`);
  assert.doesNotMatch(html, /<polyline/, 'no line drawn over the bars');
  assert.match(textOf(html), /Bar: payments created that day \(UTC\), scale in payments/);
  assert.match(textOf(html), /Bar: how much of them was paid that day \(UTC\), scale in rubles/);
  await cabPost(s, session, '/cabinet/prefs', { lang: 'ru', back: '/cabinet/overview' });
});

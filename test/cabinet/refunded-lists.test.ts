import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer, type TestShop } from '../helpers/server';
import { cabGet, cabPost, makeUser, signIn, type CabinetSession } from '../helpers/cabinet';
import { paidPayment } from '../helpers/money';

// Regression: every list of payments in the cabinet showed a partly refunded payment as plain "succeeded" (the
// API's status until refunds reach the amount), so a merchant could not see that money went back.

let s: TestServer;
let shop: TestShop;
let session: CabinetSession;
let part: string;
let full: string;
let plain: string;

before(async () => {
  s = await startTestServer();
  shop = await s.newShop();
  await makeUser(s, shop.merchantId, 'refunds@shop.example');
  session = await signIn(s, 'refunds@shop.example');
  plain = await paidPayment(s, shop.key, 30000);
  part = await paidPayment(s, shop.key, 150000);
  const r1 = await s.request('POST', `/v1/public/payments/${part}/refund`, { key: shop.key, body: { amount: 50000 } });
  assert.equal(r1.status, 201, r1.text);
  full = await paidPayment(s, shop.key, 20000);
  const r2 = await s.request('POST', `/v1/public/payments/${full}/refund`, { key: shop.key, body: {} });
  assert.equal(r2.status, 201, r2.text);
  // The refunds settle at the test bank: run what is due, then the payments say what came back.
  await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: 5 } });
  const [p1, p2] = await Promise.all([part, full].map(async (id) => (await s.request('GET', `/v1/public/payments/${id}`, { key: shop.key })).body));
  assert.deepEqual([p1.status, p1.amount_refunded, p2.status, p2.amount_refunded], ['succeeded', 50000, 'refunded', 20000]);
});
after(() => s.close());

/** The text of the table row (or the field list) that links to payment `id`, tags dropped and spaces collapsed. */
function rowOf(html: string, id: string): string {
  const row = [...html.matchAll(/<tr>[\s\S]*?<\/tr>/g)].map((m) => m[0]).find((r) => r.includes(`href="/cabinet/payments/${id}"`));
  assert.ok(row, `a row links to ${id}`);
  return text(row);
}

function text(html: string): string {
  return html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim();
}

const LISTS = (shopId: string) => ['/cabinet/overview', '/cabinet/payments', `/cabinet/payments?shop=${shopId}`, '/cabinet/payments?status=succeeded', '/cabinet/payments?status=refunded'];

test('every payment list shows how much of a partly refunded payment went back, and that a refunded one went back in full (English)', async () => {
  await cabPost(s, session, '/cabinet/prefs', { lang: 'en', back: '/cabinet/overview' });
  for (const path of LISTS(shop.shopId)) {
    const page = await cabGet(s, session, path);
    assert.equal(page.status, 200, path);
    if (!path.endsWith('=refunded')) {
      assert.match(rowOf(page.text, part), /succeeded refunded ₽500\.00 of ₽1,500\.00/, path);
      assert.doesNotMatch(rowOf(page.text, plain), /refunded/, `${path}: a payment with no refund says nothing of refunds`);
    }
    if (!path.endsWith('=succeeded')) assert.match(rowOf(page.text, full), /refunded in full, ₽200\.00/, path);
  }
  const one = await cabGet(s, session, `/cabinet/payments/${part}`);
  assert.match(text(one.text), /Status succeeded refunded ₽500\.00 of ₽1,500\.00/, "the payment's own page says the same");
});

test('the same in Russian: "успешно", then "возвращено 500,00 ₽ из 1 500,00 ₽"', async () => {
  await cabPost(s, session, '/cabinet/prefs', { lang: 'ru', back: '/cabinet/overview' });
  for (const path of ['/cabinet/overview', '/cabinet/payments']) {
    const page = await cabGet(s, session, path);
    assert.match(rowOf(page.text, part), /успешно возвращено 500,00 ₽ из 1 500,00 ₽/, path);
    assert.match(rowOf(page.text, full), /возвращён полностью, 200,00 ₽/, path);
  }
});

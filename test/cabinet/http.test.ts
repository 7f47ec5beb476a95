import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { fakeTime, type FakeTime } from '../helpers/fake-time';
import { cabGet, cabPost, flashOf, makeUser, postLogin, setCookie, signIn, TEST_PASSWORD } from '../helpers/cabinet';
import { paidPayment } from '../helpers/money';
import { getShop } from '../../src/money/shops/store';
import { totpCode, LOCK_MS } from '../../src/web/cabinet/users';
import { setCookie as sessionCookie, SESSION_ABSOLUTE_MS, SESSION_IDLE_MS } from '../../src/web/cabinet/sessions';

let s: TestServer;
let time: FakeTime;
const OWNER = 'owner@shop.example';

before(async () => {
  time = fakeTime();
  s = await startTestServer({}, { realNow: time.now });
  await makeUser(s, s.demo.merchantId, OWNER);
});
after(() => s.close());

test('a page without a session goes to the sign-in form, which sets only a strict HttpOnly cookie under /cabinet', async () => {
  const slash = await s.request('GET', '/cabinet/', { key: null });
  assert.equal(slash.status, 303, 'the address the banner suggests works with its slash');
  assert.equal(slash.headers.location, '/cabinet');
  assert.equal((await s.request('GET', '/cabinet', { key: null })).headers.location, '/cabinet/overview');
  const missing = await s.request('GET', '/cabinet/nothing-here', { key: null });
  assert.equal(missing.status, 404);
  assert.match(String(missing.headers['content-type']), /^text\/html/);
  const r = await s.request('GET', '/cabinet/payments', { key: null });
  assert.equal(r.status, 303);
  assert.equal(r.headers.location, '/cabinet/login?next=%2Fcabinet%2Fpayments');
  const ok = await postLogin(s, { email: OWNER, password: TEST_PASSWORD });
  assert.equal(ok.status, 303);
  const line = ([] as string[]).concat(ok.headers['set-cookie'] ?? []).find((l) => l.startsWith('kopek_cabinet='))!;
  assert.match(line, /; HttpOnly; SameSite=Strict; Path=\/cabinet$/, 'no Secure over http');
  assert.equal(sessionCookie('https://pay.example', 'kopek_cabinet', 'v'), '__Host-kopek_cabinet=v; HttpOnly; SameSite=Strict; Path=/; Secure', 'over https Secure, and Path=/ as the __Host- prefix requires');
  const page = await s.request('GET', '/cabinet/overview', { key: null, headers: { cookie: `kopek_cabinet=${setCookie(ok, 'kopek_cabinet')}` } });
  assert.equal(page.status, 200);
  assert.match(String(page.headers['content-security-policy']), /default-src 'none'; script-src 'nonce-/);
});

test('a POST without the CSRF token, or with a wrong one, is 403 and changes nothing', async () => {
  const session = await signIn(s, OWNER);
  const path = `/cabinet/shops/${s.demo.shopId}/ip-allowlist`;
  for (const csrf of [null, 'x'.repeat(32), '']) {
    const r = await cabPost(s, session, path, { ip_allowlist: '203.0.113.0/24' }, csrf);
    assert.equal(r.status, 403, `token ${JSON.stringify(csrf)}`);
    assert.match(r.headers['content-type'] as string, /^text\/html/);
    assert.equal((await getShop(s.store, s.demo.shopId))!.ip_allowlist, '');
  }
  // Another session's token is no better than none.
  const other = await signIn(s, OWNER);
  assert.equal((await cabPost(s, session, path, { ip_allowlist: '203.0.113.0/24' }, other.csrf)).status, 403);
  assert.equal((await getShop(s.store, s.demo.shopId))!.ip_allowlist, '');
  // The sign-in form has its own token: a cross-site login attempt without it is refused.
  const bare = await s.request('POST', '/cabinet/login', {
    key: null,
    body: new URLSearchParams({ email: OWNER, password: TEST_PASSWORD }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  assert.equal(bare.status, 403);
  assert.equal(setCookie(bare, 'kopek_cabinet'), undefined);
  const ok = await cabPost(s, session, path, { ip_allowlist: '' });
  assert.equal(ok.status, 303);
});

test("another merchant's payment, shop, key and endpoint are 404 by URL and absent from the registers", async () => {
  const other = await s.newShop();
  const payment = await s.request('POST', '/v1/public/payments', { key: other.key, body: { amount: 4200, order_id: 'theirs-1' } });
  assert.equal(payment.status, 201);
  const session = await signIn(s, OWNER);
  const id = payment.body.payment.id;
  for (const path of [`/cabinet/payments/${id}`, `/cabinet/shops/${other.shopId}`, `/cabinet/keys?shop=${other.shopId}`, `/cabinet/webhooks?shop=${other.shopId}`, `/cabinet/test?shop=${other.shopId}`]) {
    const r = await cabGet(s, session, path);
    assert.equal(r.status, 404, path);
    assert.doesNotMatch(r.text, /theirs-1/);
  }
  for (const path of [`/cabinet/payments/${id}/cancel`, `/cabinet/keys/${other.keyId}/revoke`, `/cabinet/test/${other.shopId}/reset`]) {
    assert.equal((await cabPost(s, session, path, { confirm: '1' })).status, 404, path);
  }
  assert.equal((await s.request('GET', `/v1/public/payments/${id}`, { key: other.key })).body.status, 'pending', 'not cancelled');
  assert.equal((await s.request('GET', '/v1/public/balance', { key: other.key })).status, 200, 'their key still works');
  const list = await cabGet(s, session, '/cabinet/payments');
  assert.doesNotMatch(list.text, /theirs-1/);
  const csv = await cabGet(s, session, `/cabinet/payments.csv?shop=${other.shopId}`);
  assert.equal(csv.status, 404);
});

test('failed sign-ins are slowed after 3, locked after 10 (429 with Retry-After, even with the right password), and open again after the lock', async () => {
  const email = 'locked@shop.example';
  await makeUser(s, s.demo.merchantId, email);
  const wrong = () => postLogin(s, { email, password: 'wrong password!' });
  for (let i = 0; i < 3; i++) assert.equal((await wrong()).status, 401);
  const slowed = await wrong();
  assert.equal(slowed.status, 429);
  assert.equal(slowed.headers['retry-after'], '1');
  let failures = 3;
  while (failures < 10) {
    time.advance(60_000);
    const r = await wrong();
    failures++;
    assert.equal(r.status, failures === 10 ? 429 : 401, `attempt ${failures}`);
  }
  const locked = await postLogin(s, { email, password: TEST_PASSWORD });
  assert.equal(locked.status, 429, 'the right password does not open a locked account');
  assert.equal(Number(locked.headers['retry-after']), LOCK_MS / 1000);
  time.advance(LOCK_MS);
  assert.equal((await postLogin(s, { email, password: TEST_PASSWORD })).status, 303);
  const session = await signIn(s, email);
  const audit = await cabGet(s, session, '/cabinet/audit');
  assert.equal((audit.text.match(/sign_in\.failed/g) ?? []).length, 10, 'every failed attempt is in the audit log');
  assert.match(audit.text, /locked for 15 minutes/);
});

test('a session ends after 30 idle minutes and 12 hours after sign-in however busy; sign out everywhere ends them all', async () => {
  const idle = await signIn(s, OWNER);
  time.advance(SESSION_IDLE_MS - 1000);
  assert.equal((await cabGet(s, idle, '/cabinet/overview')).status, 200);
  time.advance(SESSION_IDLE_MS);
  assert.equal((await cabGet(s, idle, '/cabinet/overview')).status, 303, 'idle too long');

  const abandoned = await signIn(s, OWNER);
  time.advance(SESSION_IDLE_MS);
  const busy = await signIn(s, OWNER);
  const stale = await s.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM cabinet_sessions WHERE last_seen_at <= ?', time.now() - SESSION_IDLE_MS);
  assert.equal(stale!.n, 0, 'a sign-in sweeps sessions never seen again');
  assert.equal((await cabGet(s, abandoned, '/cabinet/overview')).status, 303);
  for (let t = 0; t < SESSION_ABSOLUTE_MS - 20 * 60_000; t += 20 * 60_000) {
    time.advance(20 * 60_000);
    assert.equal((await cabGet(s, busy, '/cabinet/overview')).status, 200);
  }
  time.advance(20 * 60_000);
  assert.equal((await cabGet(s, busy, '/cabinet/overview')).status, 303, 'past the absolute expiry');

  const a = await signIn(s, OWNER);
  const b = await signIn(s, OWNER);
  const out = await cabPost(s, a, '/cabinet/logout-all');
  assert.equal(out.status, 303);
  assert.match(String(([] as string[]).concat(out.headers['set-cookie'] ?? [])[0]), /^kopek_cabinet=; Max-Age=0/);
  assert.equal((await cabGet(s, a, '/cabinet/overview')).status, 303);
  assert.equal((await cabGet(s, b, '/cabinet/overview')).status, 303);
});

test('TOTP: enrol with a code from the QR secret, then sign-in needs a code; a code works once; a recovery code works once', async () => {
  const email = 'totp@shop.example';
  await makeUser(s, s.demo.merchantId, email);
  const session = await signIn(s, email);
  assert.equal((await cabPost(s, session, '/cabinet/account/totp')).status, 303);
  const page = await cabGet(s, session, '/cabinet/account');
  const uri = /otpauth:\/\/totp\/[^"<]*/.exec(page.text);
  assert.equal(uri, null, 'the URI is only inside the QR image');
  const secret = /id="totp-secret">([A-Z2-7 ]+)</.exec(page.text)![1].replace(/ /g, '');
  assert.match(page.text, /<svg[^>]*aria-label="otpauth QR"/);
  const wrongCode = await cabPost(s, session, '/cabinet/account/totp/confirm', { code: '000000' });
  assert.match(flashOf((await cabGet(s, session, '/cabinet/account')).text), /does not match/);
  assert.equal(wrongCode.status, 303);
  const done = await cabPost(s, session, '/cabinet/account/totp/confirm', { code: totpCode(secret, time.now()) });
  assert.equal(done.status, 200);
  const codes = [...done.text.matchAll(/<li>([a-z2-7-]{19})<\/li>/g)].map((m) => m[1]);
  assert.equal(codes.length, 10);

  assert.equal((await postLogin(s, { email, password: TEST_PASSWORD })).status, 401, 'a password alone is not enough');
  time.advance(30_000);
  const code = totpCode(secret, time.now());
  assert.equal((await postLogin(s, { email, password: TEST_PASSWORD, code })).status, 303);
  assert.equal((await postLogin(s, { email, password: TEST_PASSWORD, code })).status, 401, 'the same code twice');
  assert.equal((await postLogin(s, { email, password: TEST_PASSWORD, code: codes[0] })).status, 303);
  assert.equal((await postLogin(s, { email, password: TEST_PASSWORD, code: codes[0] })).status, 401, 'a recovery code works once');
  time.advance(LOCK_MS);
});

test('cabinet changes are the API’s changes: revoke a key, set an IP allow-list, refund; each is in the audit log', async () => {
  const session = await signIn(s, OWNER);
  const made = await s.newKey(s.demo.shopId, 'test');
  const rowOf = (html: string) => html.split('<tr>').find((r) => r.includes(made.key.slice(0, 12)))!;
  assert.match(rowOf((await cabGet(s, session, '/cabinet/keys')).text), /data-label="Последнее использование">никогда</);
  assert.equal((await s.request('GET', '/v1/public/balance', { key: made.key })).status, 200);
  assert.match(rowOf((await cabGet(s, session, '/cabinet/keys')).text), new RegExp(`data-label="Последнее использование">${new Date(time.now()).toISOString().slice(0, 10)} `), 'last use shown');
  assert.equal((await cabPost(s, session, `/cabinet/keys/${made.keyId}/revoke`)).status, 303);
  assert.equal((await s.request('GET', '/v1/public/balance', { key: made.key })).status, 401);
  const again = await cabPost(s, session, `/cabinet/keys/${made.keyId}/revoke`);
  assert.equal(again.status, 303);
  assert.match(flashOf((await cabGet(s, session, '/cabinet/keys')).text), /already revoked/);

  const bad = await cabPost(s, session, `/cabinet/shops/${s.demo.shopId}/ip-allowlist`, { ip_allowlist: '300.1.1.1' });
  assert.equal(bad.status, 303);
  assert.match(flashOf((await cabGet(s, session, `/cabinet/shops/${s.demo.shopId}`)).text), /cannot set the IP allow-list/);
  assert.equal((await getShop(s.store, s.demo.shopId))!.ip_allowlist, '');
  await cabPost(s, session, `/cabinet/shops/${s.demo.shopId}/ip-allowlist`, { ip_allowlist: '203.0.113.0/24' });
  const refused = await s.request('GET', '/v1/public/balance');
  assert.equal(refused.status, 403);
  assert.equal(refused.body.error.code, 'ip_not_allowed');
  await cabPost(s, session, `/cabinet/shops/${s.demo.shopId}/ip-allowlist`, { ip_allowlist: '127.0.0.1' });
  assert.equal((await s.request('GET', '/v1/public/balance')).status, 200);
  await cabPost(s, session, `/cabinet/shops/${s.demo.shopId}/ip-allowlist`, { ip_allowlist: '' });

  const id = await paidPayment(s, s.demo.key, 50000);
  const over = await cabPost(s, session, `/cabinet/payments/${id}/refund`, { amount: '600', reason: 'too much' });
  assert.equal(over.status, 303);
  assert.match(flashOf((await cabGet(s, session, `/cabinet/payments/${id}`)).text), /amount 60000 exceeds refundable 50000/);
  assert.equal((await cabPost(s, session, `/cabinet/payments/${id}/refund`, { amount: '150,50', reason: 'damaged box' })).status, 303);
  const refunds = await s.request('GET', '/v1/public/refunds');
  const mine = refunds.body.items.filter((r: { payment_id: string }) => r.payment_id === id);
  assert.deepEqual(mine.map((r: { amount: number; reason: string }) => [r.amount, r.reason]), [[15050, 'damaged box']]);
  const audit = (await cabGet(s, session, '/cabinet/audit')).text;
  for (const action of ['key.revoke', 'shop.ip_allowlist', 'payment.refund', 'sign_in']) assert.match(audit, new RegExp(`>${action.replace('.', '\\.')}<`), action);
  assert.doesNotMatch(audit, /300\.1\.1\.1/, 'a refused change is not logged as made');
});

test('the CSV export holds exactly the rows of the filter, all its pages, in the page order', async () => {
  const shop = await s.newShop();
  const merchantUser = `csv-${shop.merchantId.slice(0, 8)}@shop.example`;
  await makeUser(s, shop.merchantId, merchantUser);
  for (let i = 0; i < 60; i++) {
    const r = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 1000 + i * 100, order_id: `o-${i}` } });
    assert.equal(r.status, 201);
  }
  const session = await signIn(s, merchantUser);
  const page1 = await cabGet(s, session, '/cabinet/payments?amount_min=20&amount_max=60');
  const shown = [...page1.text.matchAll(/>(o-\d+)<\/a>/g)].map((m) => m[1]);
  assert.equal(shown.length, 41, '2000..6000 in steps of 100');
  assert.doesNotMatch(page1.text, /rel="next"/);
  const csv = await cabGet(s, session, '/cabinet/payments.csv?amount_min=20&amount_max=60');
  assert.equal(csv.status, 200);
  assert.match(String(csv.headers['content-type']), /^text\/csv/);
  assert.match(String(csv.headers['content-disposition']), /attachment; filename="payments-test-\d{4}-\d\d-\d\d\.csv"/);
  const lines = csv.text.trimEnd().split('\r\n');
  assert.equal(lines[0], 'created_at,order_id,amount,status,method,shop,bank_ref,refunded_amount');
  assert.deepEqual(lines.slice(1).map((l) => l.split(',')[1]), shown);
  const all = await cabGet(s, session, '/cabinet/payments');
  assert.match(all.text, /rel="next"/, '60 rows make two pages');
  const next = /href="(\/cabinet\/payments\?cursor=[^"]+)"/.exec(all.text)![1].replace(/&amp;/g, '&');
  const page2 = await cabGet(s, session, next);
  assert.equal([...page2.text.matchAll(/>(o-\d+)<\/a>/g)].length, 10);
  const full = await cabGet(s, session, '/cabinet/payments.csv');
  assert.equal(full.text.trimEnd().split('\r\n').length, 61, 'every page of the filter');
  const bad = await cabGet(s, session, '/cabinet/payments?amount_min=abc');
  assert.equal(bad.status, 400);
  assert.match(bad.text, /Field &quot;amount_min&quot; must be an amount in rubles/);
});

test('the payments CSV carries what refunds returned of each payment (refunded_amount, minor units)', async () => {
  const shop = await s.newShop();
  const merchantUser = `csv-refunded-${shop.merchantId.slice(0, 8)}@shop.example`;
  await makeUser(s, shop.merchantId, merchantUser);
  const refunded = await paidPayment(s, shop.key, 50000);
  const untouched = await paidPayment(s, shop.key, 7000);
  const refund = await s.request('POST', `/v1/public/payments/${refunded}/refund`, { key: shop.key, body: { amount: 15050 } });
  assert.equal(refund.status, 201);
  const session = await signIn(s, merchantUser);
  const csv = await cabGet(s, session, '/cabinet/payments.csv');
  assert.equal(csv.status, 200);
  const [header, ...rows] = csv.text.trimEnd().split('\r\n');
  const column = header.split(',').indexOf('refunded_amount');
  assert.equal(column, 7);
  const amounts = new Map(rows.map((l) => [l.split(',')[2], l.split(',')[column]]));
  assert.equal(amounts.get('50000'), '15050');
  assert.equal(amounts.get('7000'), '0');
  assert.ok(untouched);
});

test('the test clock moves and the test data resets from the cabinet exactly as through the API', async () => {
  const shop = await s.newShop();
  const email = `clock-${shop.merchantId.slice(0, 8)}@shop.example`;
  await makeUser(s, shop.merchantId, email);
  const session = await signIn(s, email);
  const created = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 10000, ttl_minutes: 90 } });
  const id = created.body.payment.id;
  assert.equal((await cabPost(s, session, `/cabinet/test/${shop.shopId}/advance`, { amount: 'x', unit: 'hours' })).status, 303);
  assert.match(flashOf((await cabGet(s, session, '/cabinet/test')).text), /Cannot advance the test clock/);
  assert.equal((await s.request('GET', '/v1/test/clock', { key: shop.key })).body.offset_seconds, 0);
  assert.equal((await cabPost(s, session, `/cabinet/test/${shop.shopId}/advance`, { amount: '2', unit: 'hours' })).status, 303);
  assert.match(flashOf((await cabGet(s, session, '/cabinet/test')).text), /\+7200 s/);
  assert.equal((await s.request('GET', '/v1/test/clock', { key: shop.key })).body.offset_seconds, 7200);
  assert.equal((await s.request('GET', `/v1/public/payments/${id}`, { key: shop.key })).body.status, 'expired', 'what became due ran');
  assert.equal((await cabPost(s, session, `/cabinet/test/${shop.shopId}/reset`, {})).status, 303, 'without the confirmation');
  assert.equal((await s.request('GET', `/v1/public/payments/${id}`, { key: shop.key })).status, 200, 'nothing deleted');
  assert.equal((await cabPost(s, session, `/cabinet/test/${shop.shopId}/reset`, { confirm: '1' })).status, 303);
  assert.equal((await s.request('GET', `/v1/public/payments/${id}`, { key: shop.key })).status, 404);
  assert.equal((await s.request('GET', '/v1/test/clock', { key: shop.key })).body.offset_seconds, 0);
  const audit = (await cabGet(s, session, '/cabinet/audit')).text;
  assert.match(audit, />test\.clock\.advance</);
  assert.match(audit, />test\.reset</);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { doRequest, startTestServer, type RequestOptions, type TestServer } from '../helpers/server';
import type { AddressInfo } from 'node:net';
import { fakeTime, type FakeTime } from '../helpers/fake-time';
import { cabGet, cabPost, flashOf, makeUser, setCookie, signIn, TEST_PASSWORD, type CabinetSession } from '../helpers/cabinet';
import { getShop } from '../../src/money/shops/store';
import { totpCode, LOCK_MS, reserveAttempt, SLOW_AFTER_FAILURES } from '../../src/web/cabinet/users';
import { openEngine } from '../../src/platform/storage/maintenance';
import { upgradeOldSqlite } from '../../src/platform/storage/sqlite/migrations-old';

let s: TestServer;
let time: FakeTime;

before(async () => {
  time = fakeTime();
  s = await startTestServer({}, { realNow: time.now });
});
after(() => s.close());

/** A server as requests reach it: through its listening address (its base URL may be an https one in front of it). */
type Target = Pick<TestServer, 'request'>;

/** Requests to the listening address of a server whose base URL is not where it listens. */
function direct(server: TestServer): Target {
  const local = `http://127.0.0.1:${(server.running.server.address() as AddressInfo).port}`;
  return { request: (method: string, path: string, o: RequestOptions = {}) => doRequest(local, method, path, o, server.demo.key) };
}

/** The sign-in form's cookie and token, fetched once (a burst reuses them, as a script would). */
async function loginToken(server: Target, cookieName = 'kopek_cabinet_login'): Promise<string> {
  const form = await server.request('GET', '/cabinet/login', { key: null });
  assert.equal(form.status, 200);
  return setCookie(form, cookieName)!;
}

function loginPost(server: Target, token: string, fields: Record<string, string>, headers: Record<string, string> = {}, cookieName = 'kopek_cabinet_login') {
  return server.request('POST', '/cabinet/login', {
    key: null,
    body: new URLSearchParams({ _csrf: token, ...fields }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `${cookieName}=${token}`, ...headers },
  });
}

async function auditCount(email: string, action: string): Promise<number> {
  return (await s.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM cabinet_audit WHERE email = ? AND action = ?', email, action))!.n;
}

test('sign-in lock beaten by a burst: 300 simultaneous sign-ins (299 wrong, the right one last) check no more passwords than the throttle allows and open no session', async () => {
  const email = 'burst@shop.example';
  await makeUser(s, s.demo.merchantId, email);
  const token = await loginToken(s);
  const tries = Array.from({ length: 300 }, (_, i) => (i === 299 ? TEST_PASSWORD : `wrong password ${i}`));
  const answers = await Promise.all(tries.map((password) => loginPost(s, token, { email, password })));
  const count = (status: number) => answers.filter((r) => r.status === status).length;
  assert.equal(count(303), 0, 'no session for the right password at the end of the burst');
  assert.ok(count(401) <= SLOW_AFTER_FAILURES, `${count(401)} passwords were checked`);
  assert.equal(count(401) + count(429), 300);
  assert.ok(answers.filter((r) => r.status === 429).every((r) => Number(r.headers['retry-after']) >= 1));
  assert.equal(await auditCount(email, 'sign_in.failed'), count(401), 'each checked password is audited, no more');
  // Once the wait is over the right password signs in.
  time.advance(LOCK_MS);
  assert.equal((await loginPost(s, token, { email, password: TEST_PASSWORD })).status, 303);
});

test('sign-in lock beaten by a burst over two database connections (two nodes): the database counts, so no more reservations than one node gets', async () => {
  time.advance(LOCK_MS);
  const email = 'two-nodes@shop.example';
  // A second store on the database, as another node's: on SQLite it waits for the write lock as a server's store does.
  const other = await openEngine(s.dbPath, { sync: 'store' });
  try {
    const now = time.now();
    const here = Array.from({ length: 100 }, () => reserveAttempt(s.store, email, '198.51.100.7', now));
    const there = Array.from({ length: 100 }, () => reserveAttempt(other, email, '198.51.100.8', now));
    const all = await Promise.all([...here, ...there]);
    assert.equal(all.filter((a) => a.ok).length, SLOW_AFTER_FAILURES);
    assert.ok(all.filter((a) => !a.ok).every((a) => a.wait_ms > 0));
  } finally {
    await other.close();
  }
});

test('login CSRF through a planted cookie: over https the sign-in and session cookies carry the __Host- prefix, and a form from another origin is refused', async () => {
  time.advance(LOCK_MS);
  const server = await startTestServer({ baseUrl: 'https://pay.example' }, { realNow: time.now });
  const https = direct(server);
  try {
    await makeUser(server, server.demo.merchantId, 'host@shop.example');
    const form = await https.request('GET', '/cabinet/login', { key: null });
    const line = ([] as string[]).concat(form.headers['set-cookie'] ?? []).find((l) => l.startsWith('__Host-kopek_cabinet_login='));
    assert.match(line ?? '', /^__Host-kopek_cabinet_login=[A-Za-z0-9_-]+; HttpOnly; SameSite=Strict; Path=\/; Secure$/);
    // A cookie planted without the prefix (by a page on another port of the host) is not the form's cookie.
    const planted = await loginPost(https, 'planted-token-value', { email: 'host@shop.example', password: TEST_PASSWORD }, {}, 'kopek_cabinet_login');
    assert.equal(planted.status, 403);
    assert.equal(setCookie(planted, '__Host-kopek_cabinet'), undefined);
    const token = setCookie(form, '__Host-kopek_cabinet_login')!;
    const foreign = await loginPost(https, token, { email: 'host@shop.example', password: TEST_PASSWORD }, { origin: 'https://pay.example:8443' }, '__Host-kopek_cabinet_login');
    assert.equal(foreign.status, 403);
    assert.match(foreign.text, /Cannot accept the form: it was sent from another site \(Origin &quot;https:\/\/pay.example:8443&quot;\)/);
    const ok = await loginPost(https, token, { email: 'host@shop.example', password: TEST_PASSWORD }, { origin: 'https://pay.example', 'sec-fetch-site': 'same-origin' }, '__Host-kopek_cabinet_login');
    assert.equal(ok.status, 303, ok.text.slice(0, 300));
    const session = ([] as string[]).concat(ok.headers['set-cookie'] ?? []).find((l) => l.startsWith('__Host-kopek_cabinet='))!;
    assert.match(session, /; HttpOnly; SameSite=Strict; Path=\/; Secure$/);
    const cookie = session.split(';')[0];
    assert.equal((await https.request('GET', '/cabinet/overview', { key: null, headers: { cookie } })).status, 200);
    assert.equal((await https.request('GET', '/cabinet/overview', { key: null, headers: { cookie: cookie.replace('__Host-', '') } })).status, 303, 'the unprefixed name is not the session');
  } finally {
    await server.close();
  }
});

test("login CSRF and cross-site forms: every cabinet POST from another origin (another port: same-site) is 403 and changes nothing, the cabinet's own pass", async () => {
  const email = 'origin@shop.example';
  await makeUser(s, s.demo.merchantId, email);
  const session = await signIn(s, email);
  const path = `/cabinet/shops/${s.demo.shopId}/ip-allowlist`;
  const post = (headers: Record<string, string>) =>
    s.request('POST', path, {
      key: null,
      body: new URLSearchParams({ _csrf: session.csrf, ip_allowlist: '203.0.113.0/24' }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: session.cookie, ...headers },
    });
  const own = new URL(s.url);
  const foreign: Array<Record<string, string>> = [{ origin: `http://${own.hostname}:1` }, { 'sec-fetch-site': 'same-site' }, { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' }, { origin: 'null' }];
  for (const headers of foreign) {
    const r = await post(headers);
    assert.equal(r.status, 403, JSON.stringify(headers));
    assert.match(r.text, /sent from another site/);
    assert.equal((await getShop(s.store, s.demo.shopId))!.ip_allowlist, '', JSON.stringify(headers));
  }
  const token = await loginToken(s);
  const login = await loginPost(s, token, { email, password: TEST_PASSWORD }, { origin: 'http://attacker.example', 'sec-fetch-site': 'cross-site' });
  assert.equal(login.status, 403);
  assert.equal(setCookie(login, 'kopek_cabinet'), undefined);
  assert.equal((await post({ origin: own.origin, 'sec-fetch-site': 'same-origin' })).status, 303);
  assert.equal((await getShop(s.store, s.demo.shopId))!.ip_allowlist, '203.0.113.0/24');
  assert.equal((await cabPost(s, session, path, { ip_allowlist: '' })).status, 303);
});

/** Enrol a user in TOTP through the account page; returns the secret read from the page. */
async function enrol(session: CabinetSession): Promise<string> {
  assert.equal((await cabPost(s, session, '/cabinet/account/totp')).status, 303);
  const secret = /id="totp-secret">([A-Z2-7 ]+)</.exec((await cabGet(s, session, '/cabinet/account')).text)![1].replace(/ /g, '');
  assert.equal((await cabPost(s, session, '/cabinet/account/totp/confirm', { code: totpCode(secret, time.now()) })).status, 200);
  return secret;
}

test('TOTP secret stored in clear: pending and confirmed secrets are sealed under the master key, and a database of schema 18 has its clear ones sealed on start', async () => {
  time.advance(LOCK_MS);
  const email = 'sealed@shop.example';
  const user = await makeUser(s, s.demo.merchantId, email);
  const session = await signIn(s, email);
  assert.equal((await cabPost(s, session, '/cabinet/account/totp')).status, 303);
  const secret = /id="totp-secret">([A-Z2-7 ]+)</.exec((await cabGet(s, session, '/cabinet/account')).text)![1].replace(/ /g, '');
  const row = () => s.store.get<{ totp_secret: string | null; totp_pending: string | null }>('SELECT totp_secret, totp_pending FROM cabinet_users WHERE id = ?', user.id);
  assert.match((await row())!.totp_pending!, /^enc:v1:/);
  assert.equal((await cabPost(s, session, '/cabinet/account/totp/confirm', { code: totpCode(secret, time.now()) })).status, 200);
  const stored = (await row())!;
  assert.match(stored.totp_secret!, /^enc:v1:/);
  assert.ok(!stored.totp_secret!.includes(secret));
  assert.equal(stored.totp_pending, null);
  time.advance(30_000);
  assert.equal((await signInWith(email, totpCode(secret, time.now()))).status, 303, 'the sealed secret checks codes');

  // A database written by a build that kept the secret in clear: only SQLite's, as PostgreSQL's start at schema 20.
  if (s.store.engine === 'postgres') return;
  const clear = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP';
  await s.store.tx(async (tx) => {
    await tx.run('UPDATE cabinet_users SET totp_secret = ?, totp_last_step = 0 WHERE id = ?', clear, user.id);
    await tx.run('PRAGMA user_version = 18');
  });
  upgradeOldSqlite(s.dbPath);
  await s.restart();
  const migrated = (await row())!;
  assert.match(migrated.totp_secret!, /^enc:v1:/);
  assert.ok(!migrated.totp_secret!.includes(clear));
  time.advance(30_000);
  assert.equal((await signInWith(email, totpCode(clear, time.now()))).status, 303, 'the secret sealed on start still signs in');
});

async function signInWith(email: string, code: string) {
  return loginPost(s, await loginToken(s), { email, password: TEST_PASSWORD, code });
}

test('password checks inside a session were not throttled: changing the password is slowed like sign-in, also against a burst', async () => {
  time.advance(LOCK_MS);
  const email = 'change@shop.example';
  await makeUser(s, s.demo.merchantId, email);
  const session = await signIn(s, email);
  const change = (current: string) => cabPost(s, session, '/cabinet/account/password', { current, next: 'a brand new passphrase' });
  const burst = await Promise.all(Array.from({ length: 40 }, (_, i) => change(`not it ${i}`)));
  assert.ok(burst.every((r) => r.status === 303));
  const checked = await auditCount(email, 'password.change');
  assert.equal(checked, 0, 'nothing changed');
  const flash = flashOf((await cabGet(s, session, '/cabinet/account')).text);
  assert.match(flash, /^Cannot change the password: (the current password is wrong|too many failed attempts; try again in \d+ s)$/);
  // Slowed now: even the right password waits.
  assert.equal((await change(TEST_PASSWORD)).status, 303);
  assert.match(flashOf((await cabGet(s, session, '/cabinet/account')).text), /too many failed attempts; try again in \d+ s/);
  const failures = (await s.store.get<{ failures: number }>('SELECT failures FROM cabinet_login_failures WHERE subject = ?', `email:${email}`))!.failures;
  assert.equal(failures, SLOW_AFTER_FAILURES, 'the burst reserved no more checks than sign-in allows');
  time.advance(60_000);
  assert.equal((await change(TEST_PASSWORD)).status, 303);
  assert.match(flashOf((await cabGet(s, session, '/cabinet/account')).text), /^(Saved\.|Сохранено\.)$/);
  assert.equal((await signInWith(email, '')).status, 401, 'the old password is gone');
});

test('turning TOTP off needed only the password: it asks for a current code too, under the sign-in throttle', async () => {
  time.advance(LOCK_MS);
  const email = 'off@shop.example';
  await makeUser(s, s.demo.merchantId, email);
  const session = await signIn(s, email);
  const secret = await enrol(session);
  const on = async () => (await s.store.get<{ t: string | null }>('SELECT totp_secret AS t FROM cabinet_users WHERE email = ?', email))!.t !== null;
  assert.equal((await cabPost(s, session, '/cabinet/account/totp/disable', { password: TEST_PASSWORD })).status, 303);
  assert.match(flashOf((await cabGet(s, session, '/cabinet/account')).text), /^Cannot turn off two-step sign-in: the password or the code is wrong$/);
  assert.equal(await on(), true, 'the password alone does not turn it off');
  assert.equal((await cabPost(s, session, '/cabinet/account/totp/disable', { password: 'wrong password', code: totpCode(secret, time.now() + 30_000) })).status, 303);
  assert.equal(await on(), true);
  time.advance(30_000);
  assert.equal((await cabPost(s, session, '/cabinet/account/totp/disable', { password: TEST_PASSWORD, code: totpCode(secret, time.now()) })).status, 303);
  assert.equal(await on(), false, 'password and a current code turn it off');
  assert.equal(await auditCount(email, 'totp.off'), 1);
});

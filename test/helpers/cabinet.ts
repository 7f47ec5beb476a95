import assert from 'node:assert/strict';
import type { TestResponse, TestServer } from './server';
import { createUser } from '../../src/web/cabinet/users';

/** A cabinet session as a browser holds it: the cookie and the CSRF token its pages carry. */
export interface CabinetSession {
  cookie: string;
  csrf: string;
}

/** The password every test user gets. */
export const TEST_PASSWORD = 'correct horse battery';

/** A cabinet user of a merchant, made through the same function as `kopek admin create`. */
export async function makeUser(s: TestServer, merchantId: string, email: string, password = TEST_PASSWORD): Promise<{ id: string; email: string }> {
  const u = await createUser(s.store, { merchantId, email, password }, Date.now());
  return { id: u.id, email: u.email };
}

/** The Set-Cookie value for `name` in a response, without attributes; undefined when not set. */
export function setCookie(r: TestResponse, name: string): string | undefined {
  const all = ([] as string[]).concat(r.headers['set-cookie'] ?? []);
  const line = all.find((l) => l.startsWith(`${name}=`));
  return line?.split(';')[0].slice(name.length + 1);
}

/** POST the sign-in form as a browser would: GET the form first for its cookie and token. */
export async function postLogin(s: TestServer, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<TestResponse> {
  const form = await s.request('GET', '/cabinet/login', { key: null, headers });
  assert.equal(form.status, 200, form.text.slice(0, 300));
  const token = setCookie(form, 'kopek_cabinet_login')!;
  return s.request('POST', '/cabinet/login', {
    key: null,
    body: new URLSearchParams({ _csrf: token, ...fields }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `kopek_cabinet_login=${token}`, ...headers },
  });
}

/** Sign in; fails the test unless it succeeds. Reads the CSRF token from the overview page. */
export async function signIn(s: TestServer, email: string, password = TEST_PASSWORD, code?: string): Promise<CabinetSession> {
  const r = await postLogin(s, { email, password, ...(code ? { code } : {}) });
  assert.equal(r.status, 303, `sign-in answered ${r.status}: ${r.text.slice(0, 500)}`);
  const cookie = `kopek_cabinet=${setCookie(r, 'kopek_cabinet')}`;
  const page = await cabGet(s, { cookie, csrf: '' }, '/cabinet/overview');
  assert.equal(page.status, 200);
  return { cookie, csrf: csrfOf(page.text) };
}

/** The CSRF token in a cabinet page's forms. */
export function csrfOf(html: string): string {
  const m = /name="_csrf" value="([^"]+)"/.exec(html);
  assert.ok(m, 'the page has a form with a CSRF token');
  return m[1];
}

/** GET a cabinet page with the session's cookie. */
export function cabGet(s: TestServer, session: CabinetSession, path: string): Promise<TestResponse> {
  return s.request('GET', path, { key: null, headers: { cookie: session.cookie } });
}

/** POST a cabinet form with the session's cookie; the CSRF token is added unless `csrf` is given (null: none). */
export function cabPost(s: TestServer, session: CabinetSession, path: string, fields: Record<string, string | string[]> = {}, csrf: string | null = session.csrf): Promise<TestResponse> {
  const body = new URLSearchParams();
  if (csrf !== null) body.append('_csrf', csrf);
  for (const [k, v] of Object.entries(fields)) for (const one of ([] as string[]).concat(v)) body.append(k, one);
  return s.request('POST', path, { key: null, body: body.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: session.cookie } });
}

/** The flash message a page shows after a POST's redirect (the text of its status or alert box). */
export function flashOf(html: string): string {
  const m = /<div class="(?:ok|alert)" role="(?:status|alert)">([^<]*)<\/div>/.exec(html);
  return m ? m[1] : '';
}

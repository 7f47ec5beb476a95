import { randomBytes } from 'node:crypto';
import type { Store } from '../../platform/storage/store';
import type { Clocks } from '../../platform/clock';
import type { CabinetAuth, Ctx, Reply } from '../../platform/http/types';
import { safeEqual, sha256Hex } from '../../platform/util/ids';
import type { CabinetUser } from './users';
import { ApiError } from '../../platform/http/errors';
import type { Core } from '../../money/core/core';
import { esc, headerOf, langOf } from '../pay-page/render';
import { cabinetPage, publicPage } from './layout';
import { ct } from './text';

/** A session unused this long ends (the next request signs in again). */
export const SESSION_IDLE_MS = 30 * 60_000;
/** A session ends this long after sign-in however busy it is. */
export const SESSION_ABSOLUTE_MS = 12 * 3_600_000;
/** last_seen_at is written at most this often: a page view is a read, not a write, most of the time. */
const TOUCH_EVERY_MS = 60_000;
/** The session cookie's name over http; over https it carries the `__Host-` prefix (cookieName). */
export const SESSION_COOKIE = 'kopek_cabinet';

interface SessionRow {
  token_hash: string;
  user_id: string;
  csrf_token: string;
  view_mode: 'test' | 'live';
  lang: 'ru' | 'en';
  flash: string | null;
  created_at: number;
  last_seen_at: number;
  email: string;
  merchant_id: string;
  totp_on: number;
  disabled_at: number | null;
}

/** Start a session for a user who just signed in; returns the cookie value (only its hash is stored). */
export async function createSession(store: Store, user: CabinetUser, o: { ip: string; lang: 'ru' | 'en'; now: number }): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  const csrf = randomBytes(24).toString('base64url');
  await store.tx(async (tx) => {
    // Sessions whose browsers never came back are swept here, so the table holds only live ones (and this one).
    await tx.run('DELETE FROM cabinet_sessions WHERE last_seen_at <= ? OR created_at <= ?', o.now - SESSION_IDLE_MS, o.now - SESSION_ABSOLUTE_MS);
    const insert = 'INSERT INTO cabinet_sessions (token_hash, user_id, csrf_token, lang, ip, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, ?)';
    await tx.run(insert, sha256Hex(token), user.id, csrf, o.lang, o.ip, o.now, o.now);
  });
  return token;
}

export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** The session of a request's cookie, or null (none, unknown, expired and deleted, user disabled); takes its flash message out. */
export async function loadSession(store: Store, clocks: Clocks, cookieHeader: string | undefined, consumeFlash: boolean, baseUrl: string): Promise<CabinetAuth | null> {
  const token = cookieValue(cookieHeader, cookieName(baseUrl, SESSION_COOKIE));
  if (!token || !/^[A-Za-z0-9_-]{43}$/.test(token)) return null;
  const hash = sha256Hex(token);
  const row = await store.get<SessionRow>(
    `SELECT s.*, u.email, u.merchant_id, u.totp_secret IS NOT NULL AS totp_on, u.disabled_at FROM cabinet_sessions s JOIN cabinet_users u ON u.id = s.user_id
       WHERE s.token_hash = ?`,
    hash,
  );
  if (!row) return null;
  const now = clocks.real();
  if (row.disabled_at !== null || now - row.last_seen_at >= SESSION_IDLE_MS || now - row.created_at >= SESSION_ABSOLUTE_MS) {
    await store.tx((tx) => tx.run('DELETE FROM cabinet_sessions WHERE token_hash = ?', hash));
    return null;
  }
  const touch = now - row.last_seen_at >= TOUCH_EVERY_MS;
  const flash = consumeFlash && row.flash ? (JSON.parse(row.flash) as CabinetAuth['flash']) : null;
  if (touch || flash) {
    await store.tx((tx) => tx.run(`UPDATE cabinet_sessions SET last_seen_at = ?, flash = ${flash ? 'NULL' : 'flash'} WHERE token_hash = ?`, touch ? now : row.last_seen_at, hash));
  }
  return { userId: row.user_id, email: row.email, merchantId: row.merchant_id, sessionHash: hash, csrf: row.csrf_token, mode: row.view_mode, lang: row.lang, totp: row.totp_on === 1, flash };
}

/** Leave a message for the next page of the session (after a POST's redirect). */
export async function setFlash(store: Store, sessionHash: string, kind: 'ok' | 'error', text: string): Promise<void> {
  await store.tx((tx) => tx.run('UPDATE cabinet_sessions SET flash = ? WHERE token_hash = ?', JSON.stringify({ kind, text }), sessionHash));
}

/** What the session's pages show: test or live data, Russian or English (an absent one is kept). */
export async function setPrefs(store: Store, sessionHash: string, prefs: { mode?: 'test' | 'live'; lang?: 'ru' | 'en' }): Promise<void> {
  const sql = 'UPDATE cabinet_sessions SET view_mode = COALESCE(?, view_mode), lang = COALESCE(?, lang) WHERE token_hash = ?';
  await store.tx((tx) => tx.run(sql, prefs.mode ?? null, prefs.lang ?? null, sessionHash));
}

export async function endSession(store: Store, sessionHash: string): Promise<void> {
  await store.tx((tx) => tx.run('DELETE FROM cabinet_sessions WHERE token_hash = ?', sessionHash));
}

/** Sign out everywhere; returns how many sessions ended. */
export async function endAllSessions(store: Store, userId: string): Promise<number> {
  return store.tx(async (tx) => (await tx.run('DELETE FROM cabinet_sessions WHERE user_id = ?', userId)).changes);
}

export async function openSessions(store: Store, clocks: Clocks, userId: string): Promise<number> {
  const since = clocks.real() - SESSION_IDLE_MS;
  return (await store.get<{ n: number }>('SELECT COUNT(*) AS n FROM cabinet_sessions WHERE user_id = ? AND last_seen_at > ?', userId, since))!.n;
}

/** Over https the `__Host-` prefix: a browser takes it only from this origin (Secure, Path=/, no Domain), so no other port or subdomain can plant it. */
export function cookieName(baseUrl: string, name: string): string {
  return baseUrl.startsWith('https:') ? `__Host-${name}` : name;
}

// Set-Cookie for a cabinet cookie, `name` as cookieName prefixes it (a browser-session cookie: the server decides expiry); null
// clears it. Over https Secure and Path=/, as `__Host-` requires; over http the cabinet's path.
export function setCookie(baseUrl: string, name: string, value: string | null): string {
  const attributes = baseUrl.startsWith('https:') ? 'HttpOnly; SameSite=Strict; Path=/; Secure' : 'HttpOnly; SameSite=Strict; Path=/cabinet';
  return `${cookieName(baseUrl, name)}=${value ?? ''}; ${value === null ? 'Max-Age=0; ' : ''}${attributes}`;
}

/** The session of the cookie (401: sign-in page); for a POST also its origin and the CSRF token in `_csrf` or X-CSRF-Token (403). */
export async function authenticateCabinet(ctx: Ctx<Pick<Core, 'store' | 'clocks' | 'baseUrl'>>): Promise<CabinetAuth> {
  const isPost = ctx.method === 'POST';
  const baseUrl = ctx.app.baseUrl;
  const auth = await loadSession(ctx.app.store, ctx.app.clocks, headerOf(ctx, 'cookie'), !isPost, baseUrl);
  if (!auth) throw new ApiError(401, 'unauthorized', 'Cannot open the cabinet: sign in first');
  if (isPost) {
    // The refusal page is shown in the session's language and layout.
    ctx.cabinet = auth;
    const foreign = sameOriginRefusal(ctx, baseUrl);
    if (foreign) throw foreign;
    const given = headerOf(ctx, 'x-csrf-token') ?? form(ctx).get('_csrf') ?? undefined;
    if (!given || !safeEqual(given, auth.csrf)) {
      throw new ApiError(403, 'csrf_failed', 'Cannot accept the form: its CSRF token is missing or wrong; reload the page and try again');
    }
  }
  return auth;
}

// A 403 for a form from another origin, or null: `Sec-Fetch-Site` when sent (anything but same-origin is refused: same-site
// covers another port), else `Origin`, which must be baseUrl's or the request's host under the same scheme ("null" is
// refused: the cabinet's pages send their origin). A request with neither (curl) is left to the CSRF token.
export function sameOriginRefusal(ctx: Ctx, baseUrl: string): ApiError | null {
  const site = headerOf(ctx, 'sec-fetch-site');
  const origin = headerOf(ctx, 'origin');
  const own = new URL(baseUrl);
  const refuse = (what: string) => new ApiError(403, 'csrf_failed', `Cannot accept the form: it was sent from another site (${what}); open the cabinet at ${own.origin} and try again`);
  if (site !== undefined) return site === 'same-origin' ? null : refuse(`Sec-Fetch-Site "${site.slice(0, 32)}"`);
  if (origin === undefined) return null;
  const host = headerOf(ctx, 'host');
  if (origin === own.origin || (host !== undefined && origin === `${own.protocol}//${host}`)) return null;
  return refuse(`Origin "${origin.slice(0, 100)}"`);
}

/** The request's urlencoded form, read from the raw bytes (some fields repeat). */
export function form(ctx: Ctx): URLSearchParams {
  const type = String(ctx.req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') return new URLSearchParams();
  return new URLSearchParams(ctx.rawBody.toString('utf8'));
}

/** A refused cabinet request: a page view without a session goes to sign in (a POST gets a 401 page); else a page with the message. */
export function cabinetErrorReply(ctx: Ctx, err: ApiError): Reply {
  // The route table has no trailing-slash patterns: /cabinet/ and /cabinet/payments/ mean the pages without it.
  if (err.status === 404 && ctx.route === '' && ctx.method === 'GET' && /^\/cabinet(\/[A-Za-z0-9._-]+)*\/$/.test(ctx.path)) {
    return { status: 303, location: ctx.path.slice(0, -1) };
  }
  if (err.status === 401 && (ctx.method === 'GET' || ctx.method === 'HEAD')) {
    const next = ctx.path.startsWith('/cabinet/') && ctx.path !== '/cabinet/login' ? `?next=${encodeURIComponent(ctx.path)}` : '';
    return { status: 303, location: `/cabinet/login${next}` };
  }
  const lang = ctx.cabinet?.lang ?? langOf(ctx);
  const title = err.status === 404 ? ct(lang, 'not_found') : err.status === 403 && err.code === 'csrf_failed' ? ct(lang, 'forbidden') : ct(lang, 'error');
  const body = `<h1>${esc(title)}</h1><p class="alert" role="alert">${esc(err.message)}</p><p><a href="/cabinet/overview">${esc(ct(lang, 'overview'))}</a></p>`;
  const headers = err.headers ?? {};
  if (ctx.cabinet && err.status !== 401) return cabinetPage(ctx, { title, active: null, body, status: err.status, headers });
  return publicPage(lang, { title, body, status: err.status, headers });
}

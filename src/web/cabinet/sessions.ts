import { randomBytes } from 'node:crypto';
import type { Store } from '../../platform/storage/store';
import type { Clocks } from '../../platform/clock';
import type { CabinetAuth } from '../../platform/http/types';
import { safeEqual, sha256Hex } from '../../platform/util/ids';
import type { CabinetUser } from './users';

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

/** True when `given` is the session's CSRF token (compared in constant time). */
export function csrfMatches(auth: CabinetAuth, given: string | undefined): boolean {
  return typeof given === 'string' && given.length > 0 && safeEqual(given, auth.csrf);
}

/** Leave a message for the next page of the session (after a POST's redirect). */
export async function setFlash(store: Store, sessionHash: string, kind: 'ok' | 'error', text: string): Promise<void> {
  await store.tx((tx) => tx.run('UPDATE cabinet_sessions SET flash = ? WHERE token_hash = ?', JSON.stringify({ kind, text }), sessionHash));
}

/** Change what the session's pages show: test or live data, Russian or English. */
export async function setPrefs(store: Store, sessionHash: string, prefs: { mode?: 'test' | 'live'; lang?: 'ru' | 'en' }): Promise<void> {
  await store.tx(async (tx) => {
    if (prefs.mode) await tx.run('UPDATE cabinet_sessions SET view_mode = ? WHERE token_hash = ?', prefs.mode, sessionHash);
    if (prefs.lang) await tx.run('UPDATE cabinet_sessions SET lang = ? WHERE token_hash = ?', prefs.lang, sessionHash);
  });
}

export async function endSession(store: Store, sessionHash: string): Promise<void> {
  await store.tx((tx) => tx.run('DELETE FROM cabinet_sessions WHERE token_hash = ?', sessionHash));
}

/** End every session of a user (sign out everywhere); returns how many ended. */
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

/** The attributes every cabinet cookie carries: over https Secure and Path=/, as `__Host-` requires; over http the cabinet's path. */
export function cookieAttributes(baseUrl: string): string {
  return baseUrl.startsWith('https:') ? 'HttpOnly; SameSite=Strict; Path=/; Secure' : 'HttpOnly; SameSite=Strict; Path=/cabinet';
}

/** Set-Cookie for a cabinet cookie, `name` as cookieName prefixes it (a browser-session cookie: the server decides expiry); null clears it. */
export function setCookie(baseUrl: string, name: string, value: string | null): string {
  return `${cookieName(baseUrl, name)}=${value ?? ''}; ${value === null ? 'Max-Age=0; ' : ''}${cookieAttributes(baseUrl)}`;
}

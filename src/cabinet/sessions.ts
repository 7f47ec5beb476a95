import { randomBytes } from 'node:crypto';
import type { App } from '../app-types';
import type { Store } from '../db/store';
import type { CabinetAuth } from '../http/types';
import { safeEqual, sha256Hex } from '../util/crypto';
import type { CabinetUser } from './users';

/** A session unused this long ends (the next request signs in again). */
export const SESSION_IDLE_MS = 30 * 60_000;
/** A session ends this long after sign-in however busy it is. */
export const SESSION_ABSOLUTE_MS = 12 * 3_600_000;
/** last_seen_at is written at most this often: a page view is a read, not a write, most of the time. */
const TOUCH_EVERY_MS = 60_000;
/** The session cookie's name. */
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
  totp_secret: string | null;
  disabled_at: number | null;
}

/** Start a session for a user who just signed in; returns the cookie value (only its hash is stored). */
export function createSession(store: Store, user: CabinetUser, o: { ip: string; lang: 'ru' | 'en'; now: number }): string {
  const token = randomBytes(32).toString('base64url');
  store.tx(({ db }) => {
    // Sessions whose browsers never came back are swept here, so the table holds only live ones (and this one).
    db.prepare('DELETE FROM cabinet_sessions WHERE last_seen_at <= ? OR created_at <= ?').run(o.now - SESSION_IDLE_MS, o.now - SESSION_ABSOLUTE_MS);
    db.prepare(
      `INSERT INTO cabinet_sessions (token_hash, user_id, csrf_token, lang, ip, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ).run(sha256Hex(token), user.id, randomBytes(24).toString('base64url'), o.lang, o.ip, o.now, o.now);
  });
  return token;
}

/** A cookie's value by name from a Cookie header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * The session of a request's cookie, or null when there is none, it is unknown, it expired (idle or absolute;
 * an expired one is deleted), or its user was disabled. A flash message is taken out of the session here.
 */
export function loadSession(app: App, cookieHeader: string | undefined, consumeFlash: boolean): CabinetAuth | null {
  const token = cookieValue(cookieHeader, SESSION_COOKIE);
  if (!token || !/^[A-Za-z0-9_-]{43}$/.test(token)) return null;
  const hash = sha256Hex(token);
  const { store } = app;
  const row = store
    .stmt(
      `SELECT s.*, u.email, u.merchant_id, u.totp_secret, u.disabled_at FROM cabinet_sessions s JOIN cabinet_users u ON u.id = s.user_id
       WHERE s.token_hash = ?`,
    )
    .get(hash) as SessionRow | undefined;
  if (!row) return null;
  const now = app.clocks.real();
  if (row.disabled_at !== null || now - row.last_seen_at >= SESSION_IDLE_MS || now - row.created_at >= SESSION_ABSOLUTE_MS) {
    store.tx(({ db }) => db.prepare('DELETE FROM cabinet_sessions WHERE token_hash = ?').run(hash));
    return null;
  }
  const touch = now - row.last_seen_at >= TOUCH_EVERY_MS;
  const flash = consumeFlash && row.flash ? (JSON.parse(row.flash) as CabinetAuth['flash']) : null;
  if (touch || flash) {
    store.tx(({ db }) =>
      db
        .prepare(`UPDATE cabinet_sessions SET last_seen_at = ?, flash = ${flash ? 'NULL' : 'flash'} WHERE token_hash = ?`)
        .run(touch ? now : row.last_seen_at, hash),
    );
  }
  return {
    userId: row.user_id,
    email: row.email,
    merchantId: row.merchant_id,
    sessionHash: hash,
    csrf: row.csrf_token,
    mode: row.view_mode,
    lang: row.lang,
    totp: row.totp_secret !== null,
    flash,
  };
}

/** True when `given` is the session's CSRF token (compared in constant time). */
export function csrfMatches(auth: CabinetAuth, given: string | undefined): boolean {
  return typeof given === 'string' && given.length > 0 && safeEqual(given, auth.csrf);
}

/** Leave a message for the next page of the session (after a POST's redirect). */
export function setFlash(store: Store, sessionHash: string, kind: 'ok' | 'error', text: string): void {
  store.tx(({ db }) => db.prepare('UPDATE cabinet_sessions SET flash = ? WHERE token_hash = ?').run(JSON.stringify({ kind, text }), sessionHash));
}

/** Change what the session's pages show: test or live data, Russian or English. */
export function setPrefs(store: Store, sessionHash: string, prefs: { mode?: 'test' | 'live'; lang?: 'ru' | 'en' }): void {
  store.tx(({ db }) => {
    if (prefs.mode) db.prepare('UPDATE cabinet_sessions SET view_mode = ? WHERE token_hash = ?').run(prefs.mode, sessionHash);
    if (prefs.lang) db.prepare('UPDATE cabinet_sessions SET lang = ? WHERE token_hash = ?').run(prefs.lang, sessionHash);
  });
}

/** End one session (sign out). */
export function endSession(store: Store, sessionHash: string): void {
  store.tx(({ db }) => db.prepare('DELETE FROM cabinet_sessions WHERE token_hash = ?').run(sessionHash));
}

/** End every session of a user (sign out everywhere); returns how many ended. */
export function endAllSessions(store: Store, userId: string): number {
  return store.tx(({ db }) => db.prepare('DELETE FROM cabinet_sessions WHERE user_id = ?').run(userId).changes);
}

/** How many sessions a user has open now. */
export function openSessions(app: App, userId: string): number {
  const since = app.clocks.real() - SESSION_IDLE_MS;
  return (app.store.stmt('SELECT COUNT(*) AS n FROM cabinet_sessions WHERE user_id = ? AND last_seen_at > ?').get(userId, since) as { n: number }).n;
}

/** The attributes every cabinet cookie carries; Secure when the service is reached over https. */
export function cookieAttributes(app: App): string {
  return `HttpOnly; SameSite=Strict; Path=/cabinet${app.baseUrl().startsWith('https:') ? '; Secure' : ''}`;
}

/** Set-Cookie for a new session (a browser-session cookie: the server decides expiry). */
export function sessionCookie(app: App, token: string): string {
  return `${SESSION_COOKIE}=${token}; ${cookieAttributes(app)}`;
}

/** Set-Cookie that removes the session cookie. */
export function clearedSessionCookie(app: App): string {
  return `${SESSION_COOKIE}=; Max-Age=0; ${cookieAttributes(app)}`;
}

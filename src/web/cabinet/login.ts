import { randomBytes } from 'node:crypto';
import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../../money/core/core';
import { esc, langOf } from '../pay-page/render';
import type { Lang } from '../pay-page/i18n';
import { safeEqual } from '../../platform/util/ids';
import { acceptSecondFactor, getUserByEmail, verifyPassword, throttledCheck, signInWait, changePassword, checkRefusal, confirmTotp, disableTotp, getUser, totpSecret, recoveryCodesLeft, startTotp, otpauthUri } from './users';
import { cookieName, cookieValue, createSession, endAllSessions, endSession, loadSession, SESSION_COOKIE, setCookie, setPrefs, form, sameOriginRefusal, openSessions } from './sessions';
import { field, publicPage, cabinetPage, orRefused, postForm, shownOnce } from './layout';
import { audit, insertAudit, change, refused } from './scope';
import { ct } from './text';
import QRCode from 'qrcode';

/** The cookie holding the sign-in form's CSRF token (there is no session yet to keep it in); `__Host-` over https. */
const LOGIN_COOKIE = 'kopek_cabinet_login';

/** A `next` the sign-in may go to: a cabinet page of this server, nothing else. */
function safeNext(next: string | null | undefined): string {
  return next && /^\/cabinet\/[A-Za-z0-9/._-]*$/.test(next) && !next.includes('..') ? next : '/cabinet/overview';
}

function loginForm(ctx: Ctx<Core>, lang: Lang, o: { error?: string; email?: string; status?: number; headers?: Record<string, string> } = {}): Reply {
  const token = randomBytes(24).toString('base64url');
  const next = safeNext(ctx.query.get('next') ?? form(ctx).get('next'));
  const other: Lang = lang === 'ru' ? 'en' : 'ru';
  const body = `<h1>${esc(ct(lang, 'sign_in_title'))}</h1>
${o.error ? `<p class="alert" role="alert">${esc(o.error)}</p>` : ''}
<form method="post" action="/cabinet/login?lang=${lang}">
<input type="hidden" name="_csrf" value="${token}">
<input type="hidden" name="next" value="${esc(next)}">
${field('email', ct(lang, 'email'), `<input id="email" name="email" type="email" autocomplete="username" required value="${esc(o.email ?? '')}"${o.email ? '' : ' autofocus'}>`)}
${field('password', ct(lang, 'password'), `<input id="password" name="password" type="password" autocomplete="current-password" required${o.email ? ' autofocus' : ''}>`)}
${field('code', ct(lang, 'totp_code'), `<input id="code" name="code" inputmode="text" autocomplete="one-time-code" aria-describedby="code-hint">`, ct(lang, 'totp_hint'))}
<button class="btn" type="submit">${esc(ct(lang, 'sign_in'))}</button>
</form>
<p class="muted"><a href="/cabinet/login?lang=${other}" lang="${other}">${esc(ct(lang, 'switch_lang'))}</a></p>`;
  const headers = { 'Set-Cookie': setCookie(ctx.app.baseUrl, LOGIN_COOKIE, token), ...o.headers };
  return publicPage(lang, { title: ct(lang, 'sign_in_title'), body, status: o.status, headers });
}

/** GET /cabinet/login: the sign-in form (a signed-in user goes on to the overview). */
export async function showLogin(ctx: Ctx<Core>): Promise<Reply> {
  if (await loadSession(ctx.app.store, ctx.app.clocks, String(ctx.req.headers.cookie ?? ''), false, ctx.app.baseUrl)) return { status: 303, location: '/cabinet/overview' };
  return loginForm(ctx, langOf(ctx));
}

/** GET /cabinet: the overview, or the sign-in form first. */
export function cabinetRoot(): Reply {
  return { status: 303, location: '/cabinet/overview' };
}

/** POST /cabinet/login: origin and CSRF (403), an attempt reserved against the throttle before hashing (429), then email, password, TOTP or recovery code. Audited. */
export async function postLogin(ctx: Ctx<Core>): Promise<Reply> {
  const lang = langOf(ctx);
  const f = form(ctx);
  const baseUrl = ctx.app.baseUrl;
  const given = f.get('_csrf') ?? '';
  const expected = cookieValue(String(ctx.req.headers.cookie ?? ''), cookieName(baseUrl, LOGIN_COOKIE)) ?? '';
  const foreign = sameOriginRefusal(ctx, baseUrl);
  if (foreign || !given || !expected || !safeEqual(given, expected)) {
    return loginForm(ctx, lang, { error: foreign ? foreign.message : ct(lang, 'forbidden'), status: 403 });
  }
  const email = (f.get('email') ?? '').trim().toLowerCase().slice(0, 254);
  const { store } = ctx.app;
  const now = ctx.app.clocks.real();
  const user = await getUserByEmail(store, email);
  let factor = 'password';
  const outcome = await throttledCheck(store, { email, ip: ctx.ip, now }, async () => {
    const passwordOk = await verifyPassword(user?.password_hash ?? null, f.get('password') ?? '');
    if (!passwordOk || user === undefined || user.disabled_at !== null) return false;
    if (!user.totp_secret) return true;
    const second = await acceptSecondFactor(store, user, f.get('code') ?? '', now);
    if (second !== null) factor = `password+${second}`;
    return second !== null;
  });
  if (outcome.kind === 'refused') return tooMany(ctx, lang, email, outcome.wait_ms);
  const who = { merchantId: user?.merchant_id ?? null, userId: user?.id ?? null, email: email || '(empty)', ip: ctx.ip };
  if (outcome.kind === 'failed') {
    await store.tx((tx) => insertAudit(tx, who, 'sign_in.failed', user?.id ?? '', outcome.locked ? 'locked for 15 minutes' : '', now));
    if (outcome.locked) return tooMany(ctx, lang, email, await signInWait(store, email, ctx.ip, now));
    return loginForm(ctx, lang, { error: ct(lang, 'bad_login'), email, status: 401 });
  }
  const token = await createSession(store, user!, { ip: ctx.ip, lang, now });
  await store.tx((tx) => insertAudit(tx, who, 'sign_in', user!.id, factor, now));
  return { status: 303, location: safeNext(f.get('next')), headers: { 'Set-Cookie': setCookie(baseUrl, SESSION_COOKIE, token) } };
}

function tooMany(ctx: Ctx<Core>, lang: Lang, email: string, wait_ms: number): Reply {
  const s = Math.max(1, Math.ceil(wait_ms / 1000));
  return loginForm(ctx, lang, { error: `${ct(lang, 'locked')} ${s} ${ct(lang, 'seconds')}.`, email, status: 429, headers: { 'Retry-After': String(s) } });
}

const signedOut = (ctx: Ctx<Core>): Reply => ({ status: 303, location: '/cabinet/login', headers: { 'Set-Cookie': setCookie(ctx.app.baseUrl, SESSION_COOKIE, null) } });

export async function postLogout(ctx: Ctx<Core>): Promise<Reply> {
  await endSession(ctx.app.store, ctx.cabinet!.sessionHash);
  await audit(ctx, 'sign_out', ctx.cabinet!.userId);
  return signedOut(ctx);
}

export async function postLogoutAll(ctx: Ctx<Core>): Promise<Reply> {
  const n = await endAllSessions(ctx.app.store, ctx.cabinet!.userId);
  await audit(ctx, 'sign_out.everywhere', ctx.cabinet!.userId, `${n} sessions ended`);
  return signedOut(ctx);
}

/** POST /cabinet/prefs {mode|lang, back}: switch test/live data or the language; back to the page. */
export async function postPrefs(ctx: Ctx<Core>): Promise<Reply> {
  const f = form(ctx);
  const mode = f.get('mode');
  const lang = f.get('lang');
  await setPrefs(ctx.app.store, ctx.cabinet!.sessionHash, {
    mode: mode === 'test' || mode === 'live' ? mode : undefined,
    lang: lang === 'ru' || lang === 'en' ? lang : undefined,
  });
  return { status: 303, location: safeNext(f.get('back')) };
}

/** GET /cabinet/account: two-step sign-in (TOTP) on or off, password, sign out everywhere. */
export async function accountPage(ctx: Ctx<Core>): Promise<Reply> {
  const c = ctx.cabinet!;
  const lang = c.lang;
  const user = (await getUser(ctx.app.store, c.userId))!;
  let totp: string;
  const pending = totpSecret(ctx.app.store, user, 'totp_pending');
  if (user.totp_secret) {
    totp = `<p>${esc(ct(lang, 'two_step_on'))} ${await recoveryCodesLeft(ctx.app.store, user.id)}</p>
${postForm(
  ctx,
  '/cabinet/account/totp/disable',
  `${field('t-off', ct(lang, 'current_password'), '<input id="t-off" name="password" type="password" autocomplete="current-password" required>')}
${field('t-off-code', ct(lang, 'totp_code'), '<input id="t-off-code" name="code" autocomplete="one-time-code" required>')}
<button class="btn danger" type="submit">${esc(ct(lang, 'totp_disable'))}</button>`,
)}`;
  } else if (pending) {
    const qr = await QRCode.toString(otpauthUri(pending, user.email), { type: 'svg', margin: 1, errorCorrectionLevel: 'M' });
    totp = `<p>${esc(ct(lang, 'totp_scan'))}</p>
<div class="totp">${qr.replace('<svg ', '<svg role="img" aria-label="otpauth QR" ')}</div>
<p><output class="secret" id="totp-secret">${esc(pending.replace(/(.{4})/g, '$1 ').trim())}</output></p>
${postForm(ctx, '/cabinet/account/totp/confirm', `<div class="inline">${field('t-code', ct(lang, 'code'), '<input id="t-code" name="code" inputmode="numeric" autocomplete="one-time-code" required maxlength="6">')}<button class="btn" type="submit">${esc(ct(lang, 'totp_confirm'))}</button></div>`)}`;
  } else {
    totp = `<p>${esc(ct(lang, 'two_step_off'))}</p>${postForm(ctx, '/cabinet/account/totp', `<button class="btn" type="submit">${esc(ct(lang, 'totp_start'))}</button>`)}`;
  }
  const body = `<h1>${esc(ct(lang, 'account'))}</h1>
<p>${esc(ct(lang, 'signed_in_as'))} <b>${esc(user.email)}</b>. ${esc(ct(lang, 'sessions_open'))} ${await openSessions(ctx.app.store, ctx.app.clocks, user.id)}</p>
<h2>${esc(ct(lang, 'two_step'))}</h2>
${totp}
<h2>${esc(ct(lang, 'change_password'))}</h2>
${postForm(
  ctx,
  '/cabinet/account/password',
  `${field('p-cur', ct(lang, 'current_password'), '<input id="p-cur" name="current" type="password" autocomplete="current-password" required>')}
${field('p-new', ct(lang, 'new_password'), '<input id="p-new" name="next" type="password" autocomplete="new-password" required minlength="10">')}
<button class="btn secondary" type="submit">${esc(ct(lang, 'change_password'))}</button>`,
)}
<h2>${esc(ct(lang, 'sign_out_all'))}</h2>
${postForm(ctx, '/cabinet/logout-all', `<button class="btn danger" type="submit">${esc(ct(lang, 'sign_out_all'))}</button>`)}`;
  return cabinetPage(ctx, { title: ct(lang, 'account'), active: 'account', body });
}

/** POST /cabinet/account/totp: begin enrolment (a pending secret and its QR code). */
export function postTotpStart(ctx: Ctx<Core>): Promise<Reply> {
  return change(ctx, { action: 'totp.enrol.start', target: ctx.cabinet!.userId, back: '/cabinet/account' }, async () => {
    await startTotp(ctx.app.store, ctx.cabinet!.userId);
  });
}

/** POST /cabinet/account/totp/confirm {code}: TOTP on; the recovery codes are shown once, on this answer. */
export async function postTotpConfirm(ctx: Ctx<Core>): Promise<Reply> {
  const lang = ctx.cabinet!.lang;
  const codes = await orRefused(confirmTotp(ctx.app.store, ctx.cabinet!.userId, form(ctx).get('code') ?? '', ctx.app.clocks.real()));
  if ('refused' in codes) return refused(ctx, '/cabinet/account', codes.refused);
  await audit(ctx, 'totp.on', ctx.cabinet!.userId);
  const shown = `<ul class="secret" id="recovery-codes">${codes.map((c) => `<li>${esc(c)}</li>`).join('')}</ul>`;
  const title = ct(lang, 'recovery_codes');
  return shownOnce(ctx, { title, active: 'account', h1: title, note: ct(lang, 'recovery_hint'), shown, next: '/cabinet/account' });
}

/** POST /cabinet/account/totp/disable {password, code}: TOTP off; both asked again under the sign-in throttle, so a stolen session cannot guess faster. */
export function postTotpDisable(ctx: Ctx<Core>): Promise<Reply> {
  const f = form(ctx);
  const { store } = ctx.app;
  return change(ctx, { action: 'totp.off', target: ctx.cabinet!.userId, back: '/cabinet/account' }, async () => {
    const action = 'Cannot turn off two-step sign-in';
    const user = (await getUser(store, ctx.cabinet!.userId))!;
    const now = ctx.app.clocks.real();
    const outcome = await throttledCheck(store, { email: user.email, ip: ctx.ip, now }, async () => {
      if (!(await verifyPassword(user.password_hash, f.get('password') ?? ''))) return false;
      return !user.totp_secret || (await acceptSecondFactor(store, user, f.get('code') ?? '', now)) !== null;
    });
    if (outcome.kind !== 'passed') throw new Error(checkRefusal(action, outcome, 'the password or the code is wrong'));
    await disableTotp(store, user.id);
  });
}

/** POST /cabinet/account/password {current, next}: a new password (the current one checked under the throttle); the user's other sessions end. */
export function postPassword(ctx: Ctx<Core>): Promise<Reply> {
  const f = form(ctx);
  const c = ctx.cabinet!;
  return change(ctx, { action: 'password.change', target: c.userId, back: '/cabinet/account' }, () =>
    changePassword(ctx.app.store, c.userId, f.get('current') ?? '', f.get('next') ?? '', { keepSession: c.sessionHash, ip: ctx.ip, now: ctx.app.clocks.real() }),
  );
}

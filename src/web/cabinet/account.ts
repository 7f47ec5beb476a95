import QRCode from 'qrcode';
import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../../money/core/core';
import { esc } from '../pay-page/render';
import { acceptSecondFactor, changePassword, checkRefusal, confirmTotp, disableTotp, getUser, pendingTotpSecret, recoveryCodesLeft, startTotp, verifyPassword } from './users';
import { throttledCheck } from './throttle';
import { openSessions } from './sessions';
import { otpauthUri } from './totp';
import { cabinetPage, field, postForm, shownOnce } from './layout';
import { audit, change, refused } from './scope';
import { form } from './guard';
import { ct } from './text';

/** GET /cabinet/account: two-step sign-in (TOTP) on or off, password, sign out everywhere. */
export async function accountPage(ctx: Ctx<Core>): Promise<Reply> {
  const c = ctx.cabinet!;
  const lang = c.lang;
  const user = (await getUser(ctx.app.store, c.userId))!;
  let totp: string;
  const pending = pendingTotpSecret(ctx.app.store, user);
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
  let codes: string[];
  try {
    codes = await confirmTotp(ctx.app.store, ctx.cabinet!.userId, form(ctx).get('code') ?? '', ctx.app.clocks.real());
  } catch (err) {
    return refused(ctx, '/cabinet/account', err);
  }
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

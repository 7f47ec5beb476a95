import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../../money/core/core';
import { ApiError, notFound } from '../../platform/http/errors';
import { isUuid } from '../../platform/util/ids';
import type { Shop } from '../../money/shops/store';
import type { PaymentRow } from '../../money/bank-port/payment';
import { getPayment } from '../../money/payments/store';
import { setFlash } from './sessions';
import { ct, when } from './text';
import type { Tx } from '../../platform/storage/store';
import { esc } from '../pay-page/render';
import { cabinetPage, field, options, table } from './layout';

export function merchantShops(ctx: Ctx<Pick<Core, 'store'>>): Promise<Shop[]> {
  return ctx.app.store.all<Shop>('SELECT * FROM shops WHERE merchant_id = ? ORDER BY created_at, id', ctx.cabinet!.merchantId);
}

/** A shop of the user's merchant, or 404: another merchant's shop looks the same as none. */
export async function ownShop(ctx: Ctx<Pick<Core, 'store'>>, id: string | undefined | null): Promise<Shop> {
  return shopOfOwn(ctx, id && isUuid(id) ? id : undefined, `Cannot find shop "${String(id ?? '').slice(0, 64)}"`);
}

/** The shop of an object the user named by its own id (a key, an endpoint, an event), else that object's 404 (`missing`). */
export async function shopOfOwn(ctx: Ctx<Pick<Core, 'store'>>, shopId: string | undefined, missing: string): Promise<Shop> {
  const shop = shopId ? await ctx.app.store.get<Shop>('SELECT * FROM shops WHERE id = ?', shopId) : undefined;
  if (!shop || shop.merchant_id !== ctx.cabinet!.merchantId) throw notFound(missing);
  return shop;
}

/** The shop a page is about: `?shop=` when given (and the user's), else the merchant's first shop. */
export async function chosenShop(ctx: Ctx<Pick<Core, 'store'>>): Promise<Shop> {
  const id = ctx.query.get('shop');
  if (id) return ownShop(ctx, id);
  const first = (await merchantShops(ctx))[0];
  if (!first) throw notFound('Cannot find a shop of this merchant: create one first');
  return first;
}

/** A form to pick the shop a page is about, when the merchant has more than one. */
export async function shopPicker(ctx: Ctx<Pick<Core, 'store'>>, path: string, current: string): Promise<string> {
  const shops = await merchantShops(ctx);
  if (shops.length < 2) return '';
  const lang = ctx.cabinet!.lang;
  return `<form method="get" action="${path}" class="inline">${field('pick-shop', ct(lang, 'shop'), `<select id="pick-shop" name="shop">${options(shops.map((s) => [s.id, s.name]), current)}</select>`)}<button class="btn secondary" type="submit">${esc(ct(lang, 'filter'))}</button></form>`;
}

/** A payment of the user's merchant, or 404 (another merchant's payment is not reachable by URL). */
export async function ownPayment(ctx: Ctx<Pick<Core, 'store'>>, id: string): Promise<PaymentRow> {
  const p = isUuid(id) ? await getPayment(ctx.app.store, id) : undefined;
  if (!p || p.merchant_id !== ctx.cabinet!.merchantId) throw notFound(`Cannot find payment "${id.slice(0, 64)}"`);
  return p;
}

export function actor(ctx: Ctx): Actor & { userId: string } {
  const c = ctx.cabinet!;
  return { merchantId: c.merchantId, userId: c.userId, email: c.email, ip: ctx.ip };
}

export function audit(ctx: Ctx<Pick<Core, 'store' | 'clocks'>>, action: string, target: string, detail = ''): Promise<void> {
  return ctx.app.store.tx((tx) => insertAudit(tx, actor(ctx), action, target, detail, ctx.app.clocks.real()));
}

/** What a change is called in the audit log, and where the browser goes after it. */
export interface Change {
  action: string;
  target: string;
  /** Where to go after (a GET page of the cabinet), which shows "Saved." and what `fn` returned when that is a string. */
  back: string;
  /** True when `fn` audits inside its own commit. */
  auditedInside?: boolean;
}

/** Every form's change: run it, audit it, leave a message, 303 to a GET (a reload repeats nothing); a refusal shows its reason, a fault stays a 500. */
export async function change(ctx: Ctx<Pick<Core, 'store' | 'clocks'>>, c: Change, fn: () => unknown | Promise<unknown>): Promise<Reply> {
  const auth = ctx.cabinet!;
  let detail: unknown;
  try {
    detail = await fn();
  } catch (err) {
    return refused(ctx, c.back, err);
  }
  if (!c.auditedInside) await audit(ctx, c.action, c.target, typeof detail === 'string' ? detail : '');
  await setFlash(ctx.app.store, auth.sessionHash, 'ok', `${ct(auth.lang, 'saved')}${typeof detail === 'string' && detail ? ` ${detail}` : ''}`);
  return { status: 303, location: c.back };
}

/** A refused change (bad input, wrong state) shown on the page `back`; anything else (a fault of the server) is thrown on. */
export async function refused(ctx: Ctx<Pick<Core, 'store'>>, back: string, err: unknown): Promise<Reply> {
  if (!(err instanceof Error) || (err instanceof ApiError && err.status >= 500)) throw err;
  await setFlash(ctx.app.store, ctx.cabinet!.sessionHash, 'error', err.message);
  return { status: 303, location: back };
}

interface AuditRow {
  id: number;
  email: string;
  action: string;
  target: string;
  detail: string;
  ip: string;
  at: number;
}

type Actor = { merchantId: string | null; userId: string | null; email: string; ip: string };

/** Longest detail kept per line: enough for a reason or a list of scopes, never a whole request. */
const DETAIL_MAX = 500;

/** Append a line to the audit log inside the caller's transaction (a change and its line commit together). A secret never goes into `detail`. */
export async function insertAudit(tx: Tx, actor: Actor, action: string, target: string, detail: string, now: number): Promise<void> {
  await tx.run(
    'INSERT INTO cabinet_audit (merchant_id, user_id, email, action, target, detail, ip, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    actor.merchantId, actor.userId, actor.email.slice(0, 254), action, target, detail.slice(0, DETAIL_MAX), actor.ip, now,
  );
}

const AUDIT_PAGE = 100;

/** GET /cabinet/audit?before=: the merchant's audit log, newest first, every sign-in and change. */
export async function auditPage(ctx: Ctx<Core>): Promise<Reply> {
  const lang = ctx.cabinet!.lang;
  const before = Number(ctx.query.get('before'));
  const below = Number.isSafeInteger(before) && before > 0 ? before : Number.MAX_SAFE_INTEGER;
  const rows = await ctx.app.store.all<AuditRow>('SELECT * FROM cabinet_audit WHERE merchant_id = ? AND id < ? ORDER BY id DESC LIMIT ?', ctx.cabinet!.merchantId, below, AUDIT_PAGE + 1);
  const page = rows.slice(0, AUDIT_PAGE);
  const list = table(
    [{ label: ct(lang, 'time') }, { label: ct(lang, 'who') }, { label: ct(lang, 'action') }, { label: ct(lang, 'target') }, { label: ct(lang, 'details') }, { label: 'IP' }],
    page.map((r) => [esc(when(r.at)), esc(r.email), `<span class="mono">${esc(r.action)}</span>`, `<small class="mono">${esc(r.target)}</small>`, esc(r.detail), `<small class="mono">${esc(r.ip)}</small>`]),
    ct(lang, 'nothing'),
  );
  const more = rows.length > AUDIT_PAGE ? `<div class="pager"><a class="btn secondary" rel="next" href="/cabinet/audit?before=${page[page.length - 1].id}">${esc(ct(lang, 'older'))}</a></div>` : '';
  return cabinetPage(ctx, { title: ct(lang, 'audit'), active: 'audit', body: `<h1>${esc(ct(lang, 'audit'))}</h1>${list}${more}` });
}

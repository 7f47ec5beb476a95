import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../../money/core/core';
import type { PaymentsCore } from '../../money/payments/core';
import { buyerCancel, findPaymentForPage, payWithMethod } from '../../money/payments/buyer';
import type { PaymentView } from '../../money/bank-port/payment';
import { backToPage, formOf, headerOf, langOf, renderForeign, renderNotFound, tolerateMovedOn } from './render';
import { PAGE_METHODS } from './screens';
import { href } from './layout';

/** The payment a page action is about, with the buyer's language and form. */
type Loaded = { lang: ReturnType<typeof langOf>; p: PaymentView; form: Record<string, string> };

/** The payment of a page action, or the not-found page; a form from another site gets the 403 page before anything is read. */
export async function loadForAction(ctx: Ctx<Pick<Core, 'store' | 'payPageUrl'>>): Promise<Loaded | Reply> {
  const lang = langOf(ctx);
  if (fromAnotherSite(ctx, ctx.app.payPageUrl())) return renderForeign(lang, ctx.params.id);
  const p = await findPaymentForPage(ctx.app.store, ctx.params.id);
  if (!p) return renderNotFound(ctx, lang);
  return { lang, p, form: formOf(ctx.body) };
}

/** POST /pay/:id/method: the buyer pays with a method; the bank session opens here, never on GET. */
export async function postMethod(ctx: Ctx<PaymentsCore>): Promise<Reply> {
  const l = await loadForAction(ctx);
  if (!('p' in l)) return l;
  const method = l.form.method;
  // The state machine refuses (409, shown as the page's current state) another method than one fixed at creation.
  if (l.p.status === 'pending' && (PAGE_METHODS as readonly string[]).includes(method)) {
    await tolerateMovedOn(() => payWithMethod(ctx.app, l.p.id, method));
  }
  return backToPage(l.p.id, l.lang);
}

/** POST /pay/:id/cancel: pending → cancelled with the confirmation step's `confirm=yes`; without it, to that step. */
export async function postCancel(ctx: Ctx<PaymentsCore>): Promise<Reply> {
  const l = await loadForAction(ctx);
  if (!('p' in l)) return l;
  if (l.p.status === 'pending' && l.form.confirm !== 'yes') return { status: 303, location: href(`/pay/${l.p.id}?cancel=ask`, l.lang) };
  if (l.p.status === 'pending') await tolerateMovedOn(() => buyerCancel(ctx.app, l.p.id));
  return backToPage(l.p.id, l.lang);
}

// Whether a POST came from another site: `Sec-Fetch-Site` (no page can set it) must be same-origin; else `Origin` must be the
// page's address or the request's host ("null" is this page's, under no-referrer). With neither (curl) no buyer was lured.
function fromAnotherSite(ctx: Ctx, payPageUrl: string): boolean {
  const site = headerOf(ctx, 'sec-fetch-site');
  if (site !== undefined) return site !== 'same-origin';
  const origin = headerOf(ctx, 'origin');
  if (origin === undefined || origin === 'null') return false;
  const host = headerOf(ctx, 'host');
  const own = [new URL(payPageUrl).origin, ...(host ? [`http://${host}`, `https://${host}`] : [])];
  return !own.includes(origin);
}

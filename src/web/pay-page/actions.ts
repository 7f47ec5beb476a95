import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../../money/core/core';
import type { PaymentsCore } from '../../money/payments/core';
import { buyerCancel, findPaymentForPage, payWithMethod } from '../../money/payments/buyer';
import type { PaymentView } from '../../money/bank-port/payment';
import { backToPage, formOf, langOf, renderForeign, renderNotFound, tolerateMovedOn } from './render';
import { PAGE_METHODS } from './screens';
import { href } from './layout';

/** The payment a page action is about, with the buyer's language and form. */
export type Loaded = { lang: ReturnType<typeof langOf>; p: PaymentView; form: Record<string, string> };

/**
 * Load the payment of a page action, or the not-found page; a form sent from another site gets the 403 page
 * before anything is read (a foreign page could otherwise auto-submit the buyer's cancel or pay).
 */
export async function loadForAction(ctx: Ctx<Pick<Core, 'store' | 'payPageUrl'>>): Promise<Loaded | Reply> {
  const lang = langOf(ctx);
  if (fromAnotherSite(ctx, ctx.app.payPageUrl())) return renderForeign(ctx, lang, ctx.params.id);
  const p = await findPaymentForPage(ctx.app.store, ctx.params.id);
  if (!p) return renderNotFound(ctx, lang);
  return { lang, p, form: formOf(ctx.body) };
}

/**
 * POST /pay/:id/method: the buyer pays with a method (the one fixed at creation, or the one chosen for an
 * `any` payment): the bank session opens here, never on GET.
 */
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

/**
 * POST /pay/:id/cancel: the buyer gives up before a bank session opens (pending → cancelled), only with the
 * confirmation step's `confirm=yes`; a POST without it (an old page's one-click form) is sent to that step.
 */
export async function postCancel(ctx: Ctx<PaymentsCore>): Promise<Reply> {
  const l = await loadForAction(ctx);
  if (!('p' in l)) return l;
  if (l.p.status === 'pending' && l.form.confirm !== 'yes') return { status: 303, location: href(`/pay/${l.p.id}?cancel=ask`, l.lang) };
  if (l.p.status === 'pending') await tolerateMovedOn(() => buyerCancel(ctx.app, l.p.id));
  return backToPage(l.p.id, l.lang);
}

function header(ctx: Ctx, name: string): string | undefined {
  const v = ctx.req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Whether the browser says a POST came from another site. A browser that sends `Sec-Fetch-Site` is believed
 * (a page cannot set it): anything but same-origin is refused, same-site included (another port of the host is
 * another page). Without it, an `Origin` must be the page's public address (`payPageUrl`) or the host the
 * request was sent to; "null" is what such a browser sends from this very page, whose policy is no-referrer.
 * A request with neither header (curl, a server) is taken: it is no page a buyer was lured to.
 */
export function fromAnotherSite(ctx: Ctx, payPageUrl: string): boolean {
  const site = header(ctx, 'sec-fetch-site');
  if (site !== undefined) return site !== 'same-origin';
  const origin = header(ctx, 'origin');
  if (origin === undefined || origin === 'null') return false;
  const host = header(ctx, 'host');
  const own = [new URL(payPageUrl).origin, ...(host ? [`http://${host}`, `https://${host}`] : [])];
  return !own.includes(origin);
}

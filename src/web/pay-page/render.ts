import type { Ctx, Reply } from '../../platform/http/types';
import { ApiError } from '../../platform/http/errors';
import type { PaymentView } from '../../money/bank-port/payment';
import { FINAL_STATUSES } from '../../money/bank-port/payment';
import { pickLang, purpose, t, type Lang, type TextKey } from './i18n';
import { href, kindOf, newNonce, page, pageHeaders, returnOrigin } from './layout';
import { foreignScreen, notFoundScreen } from './screens';
import type { PageStep } from './steps';

/** A request header's (first) value. */
export function headerOf(ctx: Ctx, name: string): string | undefined {
  const v = ctx.req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export function langOf(ctx: Ctx): Lang {
  return pickLang(ctx.query, headerOf(ctx, 'accept-language'));
}

/** How a screen is wrapped: its status code and whether the script polls or redirects. */
interface RenderOptions {
  status?: number;
  /** Poll the status route and reload when the payment moves on (`pollStep`: a live bank session's step). */
  poll?: boolean;
  step?: PageStep;
  pollStep?: string;
  /** Follow this address after `redirectMs` (the success screen's way back to the shop). */
  redirect?: string | null;
  redirectMs?: number;
  /** The query of the screen's address (without `lang`), which the language switch keeps. */
  query?: string;
}

/** A full HTML page reply with the page's security headers. */
export function renderPage(ctx: Ctx, lang: Lang, p: PaymentView, body: string, o: RenderOptions = {}): Reply {
  const nonce = newNonce();
  const data: Record<string, string> = {};
  if (o.poll) {
    data.poll = `/pay/${p.id}/status`;
    data.status = p.status;
    data.step = o.pollStep ?? o.step?.step ?? '';
    data.next = href(`/pay/${p.id}`, lang);
  }
  if (o.redirect) {
    data.redirect = o.redirect;
    data.redirectMs = String(o.redirectMs ?? 0);
  }
  const path = o.query ? `/pay/${p.id}?${o.query}` : `/pay/${p.id}`;
  const html = page({ lang, nonce, path, title: `${purpose(lang, kindOf(p)).title} · ${p.shop_name}`, payment: p, data }, body);
  return { status: o.status ?? 200, html, headers: pageHeaders(nonce, returnOrigin(p.return_url)) };
}

/** A page of no payment: its status, the GET path of its language switch, title and screen. */
function bare(status: number, lang: Lang, path: string, title: TextKey, body: string): Reply {
  const nonce = newNonce();
  return { status, html: page({ lang, nonce, path, title: t(lang, title) }, body), headers: pageHeaders(nonce, null) };
}

export function renderNotFound(ctx: Ctx, lang: Lang): Reply {
  return bare(404, lang, ctx.path, 'not_found_title', notFoundScreen(lang));
}

/** The 403 page for a form another site sent: nothing changed, and the way to the payment's own page. */
export function renderForeign(lang: Lang, paymentId: string): Reply {
  return bare(403, lang, `/pay/${encodeURIComponent(paymentId)}`, 'foreign_title', foreignScreen(lang, paymentId));
}

/** Back to the payment's page (303 after a form), which shows whatever state the payment is in now. */
export function backToPage(id: string, lang: Lang): Reply {
  return { status: 303, location: href(`/pay/${id}`, lang) };
}

export function isFinal(p: PaymentView): boolean {
  return FINAL_STATUSES.has(p.status);
}

/** Run a buyer action; a payment that moved on meanwhile (409) is no error for the buyer, who sees its state now. */
export async function tolerateMovedOn(fn: () => Promise<unknown>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof ApiError && err.status === 409) return;
    throw err;
  }
}

/** A form body as a flat map of strings (the page's forms post urlencoded; JSON objects are read the same way). */
export function formOf(body: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    for (const [k, v] of Object.entries(body)) if (typeof v === 'string') out[k] = v;
  }
  return out;
}

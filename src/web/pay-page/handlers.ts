import QRCode from 'qrcode';
import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../../money/core/core';
import { notFound } from '../../platform/http/errors';
import { buyerRedirectUrl, findPaymentForPage, buyerCancel, payWithMethod } from '../../money/payments/handlers';
import type { PaymentView } from '../../money/bank-port/payment';
import { backToPage, isFinal, langOf, renderNotFound, renderPage, esc, isTest, renderForeign, tolerateMovedOn, href, bankScreen, cancelConfirm, cardScreen, confirmScreen, methodChoice, PAGE_METHODS, payStep, processingScreen, sbpScreen, screenPath, statusScreen, threeDsScreen, type PageMethod, type ScreenCtx } from './render';
import { getPayment } from '../../money/payments/store';
import type { PageSession } from '../../money/bank-port/port';
import { clearStep, getStep } from './steps';
import { t, type Lang } from './i18n';
import type { PaymentsCore } from '../../money/payments/core';

type PageCore = Pick<Core, 'store' | 'banks' | 'payPageUrl'>;

/** How long the success screen stays before the buyer returns to the shop (the spec's "about 2 seconds"). */
const SUCCESS_REDIRECT_MS = 2000;

// GET /pay/:id: the screen for the current state; it changes nothing (a link preview or prefetch must not open a bank
// session): a pending payment shows its method choice or its fixed method's "pay" step, and the buyer's POST opens it.
export async function showPage(ctx: Ctx<PageCore>): Promise<Reply> {
  const lang = langOf(ctx);
  const p = await findPaymentForPage(ctx.app.store, ctx.params.id);
  if (!p) return renderNotFound(ctx, lang);
  if (isFinal(p)) return finalScreen(ctx, p);
  const step = await getStep(ctx.app.store, p.id);
  const sc: ScreenCtx = { lang, p, step };
  const poll = { poll: true, pollStep: step?.step };
  if (p.status === 'pending') return renderPage(lang, p, await pendingScreen(ctx, sc), { ...poll, path: screenAddress(ctx, p) });
  // A live payment is paid on the acquirer's side: its bank says what the page shows.
  if (!isTest(p)) return liveScreen(ctx, lang, p, await liveSession(ctx, p));
  const byStep = step && { challenge: threeDsScreen, confirm: confirmScreen, waiting: processingScreen }[step.step];
  if (byStep) return renderPage(lang, p, byStep(sc), poll);
  if (p.method === 'sbp') return renderPage(lang, p, sbpScreen(sc, await qrSvg(`${ctx.app.payPageUrl}/pay/${p.id}`)), poll);
  const screen = p.method === 'cards' ? cardScreen : p.method === 'tpay' || p.method === 'bankpay' ? bankScreen : processingScreen;
  return renderPage(lang, p, screen(sc), poll);
}

const isPageMethod = (m: string | null): m is PageMethod => m !== null && (PAGE_METHODS as readonly string[]).includes(m);

/** The screen a pending payment's address asks for (`method`, `cancel`), as the language switch keeps it. */
function screenAddress(ctx: Ctx, p: PaymentView): string {
  const method = ctx.query.get('method');
  return screenPath(p, method === 'any' || isPageMethod(method) ? method : null, ctx.query.get('cancel') === 'ask');
}

/** A pending payment's screen, chosen by the address alone (`?method=`, `?cancel=ask`): GET changes nothing. */
async function pendingScreen(ctx: Ctx<PageCore>, sc: ScreenCtx): Promise<string> {
  const { p } = sc;
  if (p.method !== 'any' && !isPageMethod(p.method)) return processingScreen(sc);
  const asked = ctx.query.get('method');
  if (ctx.query.get('cancel') === 'ask') return cancelConfirm(sc, asked === 'any' || isPageMethod(asked) ? asked : null);
  const row = await getPayment(ctx.app.store, p.id);
  if (row?.method_fixed && isPageMethod(p.method)) return payStep(sc, p.method, false);
  if (isPageMethod(asked)) return payStep(sc, asked, true);
  if (asked === 'any' || !isPageMethod(p.method)) return methodChoice(sc);
  return payStep(sc, p.method, true);
}

/** A final status: success shows its screen and returns to the shop after 2 s; the others return at once. */
async function finalScreen(ctx: Ctx<Pick<Core, 'store'>>, p: PaymentView): Promise<Reply> {
  const lang = langOf(ctx);
  if (await getStep(ctx.app.store, p.id)) await clearStep(ctx.app.store, p.id);
  const back = buyerRedirectUrl(p);
  if (back && p.status !== 'succeeded') return { status: 303, location: back };
  return renderPage(lang, p, statusScreen({ lang, p }, back), { redirect: back, redirectMs: SUCCESS_REDIRECT_MS });
}

/** GET /pay/:id/bank: the simulated bank app (SBP's "open the bank app", T-Pay, bank wallet). */
export async function showBank(ctx: Ctx<Pick<Core, 'store'>>): Promise<Reply> {
  const lang = langOf(ctx);
  const p = await findPaymentForPage(ctx.app.store, ctx.params.id);
  if (!p) return renderNotFound(ctx, lang);
  const step = await getStep(ctx.app.store, p.id);
  // A live payment is paid in the real bank's app or page, never on this simulated one.
  if (!isTest(p) || p.status !== 'processing' || step || !['sbp', 'tpay', 'bankpay'].includes(p.method)) return backToPage(p.id, lang);
  return renderPage(lang, p, bankScreen({ lang, p }), { poll: true });
}

/** GET /pay/:id/status: the small JSON the page's script polls while it waits. */
export async function pageStatus(ctx: Ctx<Pick<Core, 'store' | 'banks'>>): Promise<Reply> {
  const p = await findPaymentForPage(ctx.app.store, ctx.params.id);
  if (!p) throw notFound(`Cannot find payment "${ctx.params.id}"`);
  const step = await getStep(ctx.app.store, p.id);
  const live = !isTest(p) && p.status === 'processing' ? liveStep(await liveSession(ctx, p)) : '';
  return {
    body: { status: p.status, step: isFinal(p) ? '' : step?.step ?? live, final: isFinal(p), test: isTest(p) },
    headers: { 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' },
  };
}

/** A link or an SBP payload as an SVG QR code (scanned by a bank app's SBP reader). */
async function qrSvg(link: string): Promise<string> {
  const svg = await QRCode.toString(link, { type: 'svg', margin: 1, errorCorrectionLevel: 'M' });
  return svg.replace('<svg ', '<svg class="qr" focusable="false" aria-hidden="true" ');
}

// A live payment is paid on the acquirer's side (no card number reaches kopek): the page sends the buyer to the bank's page
// or shows its SBP QR payload, and waits; the bank sends the buyer back here (?back=) to see the outcome.

/** The live bank session of a processing payment, as its bank tells the page; undefined when its bank has none. */
async function liveSession(ctx: Ctx<Pick<Core, 'store' | 'banks'>>, p: PaymentView): Promise<PageSession | undefined> {
  const row = await getPayment(ctx.app.store, p.id);
  return row && row.status === 'processing' ? (await ctx.app.banks.for(ctx.app.store, row.shop_id, row.mode)).pageSession(row) : undefined;
}

/** The step the status route reports for a live session, so the waiting page reloads once the bank answered. */
function liveStep(s: PageSession | undefined): string {
  return s ? `bank_${s.kind}` : '';
}

/** The screen of a live processing payment. GET only reads: the session opened on the buyer's POST. */
async function liveScreen(ctx: Ctx, lang: Lang, p: PaymentView, s: PageSession | undefined): Promise<Reply> {
  const back = ctx.query.get('back') !== null;
  const poll = { poll: true, pollStep: liveStep(s) };
  if (s?.kind === 'redirect' && !back) {
    const body = `<div class="status"><div class="spinner" aria-hidden="true"></div>
<h2>${esc(t(lang, 'live_to_bank_title'))}</h2>
<p class="muted">${esc(t(lang, 'live_to_bank_text'))}</p>
<a class="btn" id="to-bank" href="${esc(s.url)}">${esc(t(lang, 'live_to_bank_button'))}</a></div>`;
    return renderPage(lang, p, body, { redirect: s.url, redirectMs: 0 });
  }
  if (s?.kind === 'qr') {
    const live = { payload: s.payload, bank: /^https:\/\//.test(s.payload) ? s.payload : null };
    return renderPage(lang, p, sbpScreen({ lang, p }, await qrSvg(s.payload), live), poll);
  }
  return renderPage(lang, p, processingScreen({ lang, p }), poll);
}

type Loaded = { lang: Lang; p: PaymentView; form: Record<string, string> };

/** A page action on its payment: a form from another site gets the 403 page before anything is read, no payment the not-found page. */
export function pageAction<C extends Pick<Core, 'store' | 'payPageUrl'>>(act: (ctx: Ctx<C>, l: Loaded) => Promise<Reply>): (ctx: Ctx<C>) => Promise<Reply> {
  return async (ctx) => {
    const lang = langOf(ctx);
    if (fromAnotherSite(ctx, ctx.app.payPageUrl)) return renderForeign(lang, ctx.params.id);
    const p = await findPaymentForPage(ctx.app.store, ctx.params.id);
    if (!p) return renderNotFound(ctx, lang);
    // The page's forms post urlencoded (a flat map of strings); a JSON object is read the same way.
    const form: Record<string, string> = {};
    if (ctx.body && typeof ctx.body === 'object' && !Array.isArray(ctx.body)) {
      for (const [k, v] of Object.entries(ctx.body)) if (typeof v === 'string') form[k] = v;
    }
    return act(ctx, { lang, p, form });
  };
}

/** POST /pay/:id/method: the buyer pays with a method; the bank session opens here, never on GET. */
export const postMethod = pageAction(async (ctx: Ctx<PaymentsCore>, { p, lang, form }) => {
  // The state machine refuses (409, shown as the page's current state) another method than one fixed at creation.
  if (p.status === 'pending' && isPageMethod(form.method)) await tolerateMovedOn(payWithMethod(ctx.app, p.id, form.method));
  return backToPage(p.id, lang);
});

/** POST /pay/:id/cancel: pending → cancelled with the confirmation step's `confirm=yes`; without it, to that step. */
export const postCancel = pageAction(async (ctx: Ctx<PaymentsCore>, { p, lang, form }) => {
  if (p.status === 'pending' && form.confirm !== 'yes') return { status: 303, location: href(`/pay/${p.id}?cancel=ask`, lang) };
  if (p.status === 'pending') await tolerateMovedOn(buyerCancel(ctx.app, p.id));
  return backToPage(p.id, lang);
});

// Whether a POST came from another site: `Sec-Fetch-Site` (no page can set it) must be same-origin; else `Origin` must be the
// page's address or the request's host ("null" is this page's, under no-referrer). With neither (curl) no buyer was lured.
function fromAnotherSite(ctx: Ctx, payPageUrl: string): boolean {
  const { 'sec-fetch-site': site, origin, host } = ctx.req.headers;
  // A repeated header arrives joined into one string, which is not "same-origin": another site.
  if (site !== undefined) return site !== 'same-origin';
  if (origin === undefined || origin === 'null') return false;
  const own = [new URL(payPageUrl).origin, ...(host ? [`http://${host}`, `https://${host}`] : [])];
  return !own.includes(origin);
}

import type { Ctx, Reply } from '../../platform/http/types';
import { ApiError } from '../../platform/http/errors';
import type { PaymentView } from '../../money/bank-port/payment';
import { FINAL_STATUSES } from '../../money/bank-port/payment';
import { purpose, t, type Lang, type TextKey, formatAmount, failureReason } from './i18n';
import type { PageStep } from './steps';
import { randomBytes } from 'node:crypto';
import { CSS } from './styles';
import { clientScript } from './scripts';
import { TEST_CARDS, THREE_DS_CODE, type CardFieldError } from '../../banks/simulator/plan';

/** A request header's (first) value. */
export function headerOf(ctx: Ctx, name: string): string | undefined {
  const v = ctx.req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The buyer's language: `?lang=` wins (the switch keeps it across the flow), else the first of ru/en in Accept-Language by quality, else Russian. */
export function langOf(ctx: Ctx): Lang {
  const q = ctx.query.get('lang');
  if (q === 'ru' || q === 'en') return q;
  let best: Lang = 'ru';
  let bestQ = -1;
  for (const part of (ctx.req.headers['accept-language'] ?? '').split(',').slice(0, 20)) {
    const [tag, ...params] = part.trim().toLowerCase().split(';');
    const primary = tag.split('-')[0];
    if (primary !== 'ru' && primary !== 'en') continue;
    const qp = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const weight = qp ? Number(qp.slice(2)) : 1;
    if (Number.isFinite(weight) && weight > bestQ) [best, bestQ] = [primary, weight];
  }
  return best;
}

/** How a screen is wrapped: its status code and whether the script polls or redirects. */
interface RenderOptions {
  status?: number;
  /** Poll the status route and reload when the payment moves on (`pollStep`: a live bank session's step). */
  poll?: boolean;
  pollStep?: string;
  /** Follow this address after `redirectMs` (the success screen's way back to the shop). */
  redirect?: string | null;
  redirectMs?: number;
  /** The screen's address (without `lang`), which the language switch keeps; default the payment's page. */
  path?: string;
}

/** A full HTML page reply with the page's security headers. */
export function renderPage(lang: Lang, p: PaymentView, body: string, o: RenderOptions = {}): Reply {
  const nonce = newNonce();
  const data: Record<string, string> = {};
  if (o.poll) Object.assign(data, { poll: payPath(p, '/status'), status: p.status, step: o.pollStep ?? '', next: href(payPath(p), lang) });
  if (o.redirect) Object.assign(data, { redirect: o.redirect, redirectMs: String(o.redirectMs ?? 0) });
  const html = page({ lang, nonce, path: o.path ?? payPath(p), title: `${purpose(lang, kindOf(p)).title} · ${p.shop_name}`, payment: p, data }, body);
  return { status: o.status ?? 200, html, headers: pageHeaders(nonce, returnOrigin(p.return_url)) };
}

/** A page of no payment: its status, the GET path of its language switch, title and screen. */
function bare(status: number, lang: Lang, path: string, title: TextKey, body: string): Reply {
  const nonce = newNonce();
  return { status, html: page({ lang, nonce, path, title: t(lang, title) }, body), headers: pageHeaders(nonce, null) };
}

export function renderNotFound(ctx: Ctx, lang: Lang): Reply {
  return bare(404, lang, ctx.path, 'not_found_title', statusBox(lang, STATUS_ICONS.off, 'not_found_title', 'not_found_text'));
}

/** The 403 page for a form another site sent: nothing changed, and the way to the payment's own page. */
export function renderForeign(lang: Lang, paymentId: string): Reply {
  const path = `/pay/${encodeURIComponent(paymentId)}`;
  const open = `<a class="btn" href="${esc(href(path, lang))}">${esc(t(lang, 'open_payment'))}</a>`;
  return bare(403, lang, path, 'foreign_title', statusBox(lang, STATUS_ICONS.off, 'foreign_title', 'foreign_text', `\n<div class="stack">${open}</div>`));
}

/** Back to the payment's page (303 after a form), which shows whatever state the payment is in now. */
export function backToPage(id: string, lang: Lang): Reply {
  return { status: 303, location: `/pay/${id}?lang=${lang}` };
}

export function isFinal(p: PaymentView): boolean {
  return FINAL_STATUSES.has(p.status);
}

/** A buyer action's outcome; a payment that moved on meanwhile (409) is no error for the buyer, who sees its state now. */
export function tolerateMovedOn(action: Promise<unknown>): Promise<unknown> {
  return action.catch((err: unknown) => {
    if (err instanceof ApiError && err.status === 409) return undefined;
    throw err;
  });
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** HTML-escape text for element content and quoted attribute values. */
export function esc(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ENTITIES[c]);
}

export function newNonce(): string {
  return randomBytes(16).toString('base64');
}

/** The origin of a return_url, for CSP form-action (forms end in a redirect there); null when absent or malformed. */
function returnOrigin(returnUrl: string | null | undefined): string | null {
  if (!returnUrl || !URL.canParse(returnUrl)) return null;
  const u = new URL(returnUrl);
  return u.protocol === 'https:' || u.protocol === 'http:' ? u.origin : null;
}

/** The headers of every page response: strict CSP with the nonce, no sniffing, no referrer, no caching. */
export function pageHeaders(nonce: string, formOrigin: string | null): Record<string, string> {
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "img-src 'self' data:",
    "connect-src 'self'",
    `form-action 'self'${formOrigin ? ' ' + formOrigin : ''}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
  return {
    'Content-Security-Policy': csp,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'Cache-Control': 'no-store',
    'X-Frame-Options': 'DENY',
  };
}

/** A page-internal link that keeps the chosen language (`path` may carry a query of its own). */
export function href(path: string, lang: Lang): string {
  return `${path}${path.includes('?') ? '&' : '?'}lang=${lang}`;
}

/** What every page shell needs besides its body; `path` is the GET path the language switch points at. */
interface Shell {
  lang: Lang;
  nonce: string;
  path: string;
  title: string;
  payment?: PaymentView;
  /** data-* attributes of <body> that drive the script: poll, status, step, next, redirect, redirectMs. */
  data?: Record<string, string>;
}

/** Whether a payment belongs to test mode (the page then shows the test banner and controls). */
export function isTest(p: PaymentView): boolean {
  return p.metadata?.mode !== 'live';
}

/** The payment's kind: a plain payment, a card binding, or a subscription's first payment. */
function kindOf(p: PaymentView): string {
  return p.metadata?.kind || 'payment';
}

function summary(lang: Lang, p: PaymentView): string {
  return `<header class="head">
<p class="shop">${esc(p.shop_name)}</p>
<h1>${esc(purpose(lang, kindOf(p)).title)}</h1>
<p class="amount">${esc(formatAmount(lang, p.amount, p.currency))}</p>
${p.description ? `<p class="desc">${esc(p.description)}</p>` : ''}
<p class="meta">${esc(t(lang, 'order'))} ${esc(p.order_id)} · ${esc(p.public_id)}</p>
</header>`;
}

const LOCK = '<svg width="14" height="14" viewBox="0 0 24 24" aria-hidden="true"><path fill="currentColor" d="M12 2a5 5 0 0 0-5 5v3H6a2 2 0 0 0-2 2v8a2 2 0 0 0 2 2h12a2 2 0 0 0 2-2v-8a2 2 0 0 0-2-2h-1V7a5 5 0 0 0-5-5zm-3 8V7a3 3 0 1 1 6 0v3H9z"/></svg>';

/** The start of every page kopek serves up to <body>: no referrer, not indexed, no favicon request, styles under the CSP nonce. */
export function documentHead(lang: Lang, nonce: string, title: string, css: string): string {
  return `<!doctype html>
<html lang="${lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">
<link rel="icon" href="data:,">
<title>${esc(title)}</title>
<style nonce="${nonce}">${css}</style>
</head>`;
}

function page(shell: Shell, body: string): string {
  const { lang, nonce, payment } = shell;
  const other: Lang = lang === 'ru' ? 'en' : 'ru';
  const data = Object.entries(shell.data ?? {})
    .map(([k, v]) => ` data-${k.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase())}="${esc(v)}"`)
    .join('');
  return `${documentHead(lang, nonce, shell.title, CSS)}
<body${data}>
${payment && isTest(payment) ? `<div class="test" role="note">${esc(t(lang, 'test_banner'))}</div>` : ''}
<main class="sheet">
${payment ? summary(lang, payment) : ''}
<div class="body">
${body}
</div>
</main>
<footer class="foot"><span>${LOCK}${esc(t(lang, 'secure'))} · kopek</span><a href="${esc(href(shell.path, other))}" lang="${other}" hreflang="${other}">${esc(t(lang, 'switch_to'))}</a></footer>
<script nonce="${nonce}">${clientScript(lang)}</script>
</body>
</html>`;
}

export interface ScreenCtx {
  lang: Lang;
  p: PaymentView;
  step?: PageStep;
}

/** Methods a buyer can choose on the page, in display order. */
export const PAGE_METHODS = ['sbp', 'cards', 'tpay', 'bankpay'] as const;

const ICONS: Record<string, string> = {
  sbp: '<svg width="32" height="32" viewBox="0 0 32 32" aria-hidden="true"><path fill="#5b57a2" d="M4 6l4 7v6l-4 7z"/><path fill="#d90751" d="M11 11l3-5h14l-17 10z"/><path fill="#fab60c" d="M11 19v-3l17 10H14z"/><path fill="#1d9aa5" d="M8 13l3-2v13l-3-5z"/><path fill="#0f754e" d="M11 16l6-4 11 14z" opacity=".6"/></svg>',
  cards: '<svg width="32" height="32" viewBox="0 0 32 32" aria-hidden="true"><rect x="3" y="7" width="26" height="18" rx="3" fill="#1d4ed8"/><rect x="3" y="11" width="26" height="4" fill="#0b1f5c"/><rect x="7" y="19" width="8" height="2" rx="1" fill="#bfdbfe"/></svg>',
  tpay: '<svg width="32" height="32" viewBox="0 0 32 32" aria-hidden="true"><rect x="3" y="3" width="26" height="26" rx="7" fill="#ffdd2d"/><path d="M10 10h12v3h-4.5v10h-3V13H10z" fill="#111827"/></svg>',
  bankpay: '<svg width="32" height="32" viewBox="0 0 32 32" aria-hidden="true"><path fill="#0f766e" d="M16 4l12 6v2H4v-2zM6 14h3v9H6zm6 0h3v9h-3zm6 0h3v9h-3zm5 0h3v9h-3zM4 25h24v3H4z"/></svg>',
};

const CHEVRON = '<svg class="chev" width="20" height="20" viewBox="0 0 24 24" aria-hidden="true"><path fill="currentColor" d="M9 6l6 6-6 6-1.4-1.4L12.2 12 7.6 7.4z"/></svg>';

function payPath(p: PaymentView, sub = ''): string {
  return `/pay/${p.id}${sub}`;
}

export type PageMethod = (typeof PAGE_METHODS)[number];

/** The address of a pending payment's screen: `?method=` (a method, or `any` for the list), `cancel` the confirmation step. */
export function screenPath(p: PaymentView, method: string | null, cancel = false): string {
  const q = [method && `method=${method}`, cancel && 'cancel=ask'].filter(Boolean).join('&');
  return q ? `${payPath(p)}?${q}` : payPath(p);
}

/** "Cancel payment" leads to the confirmation step (a GET), so one click beside "Other ways to pay" cannot cancel. */
function cancelLink(lang: Lang, p: PaymentView, from: string): string {
  return `<a class="btn quiet" href="${esc(href(screenPath(p, from, true), lang))}">${esc(t(lang, 'cancel_payment'))}</a>`;
}

/** The ways off a pay step: back to the method list (when the method was not fixed) and cancelling. */
function waysOut(lang: Lang, p: PaymentView, method: PageMethod, canChange: boolean): string {
  const back = canChange ? `<a class="btn secondary" href="${esc(href(screenPath(p, 'any'), lang))}">${esc(t(lang, 'other_methods'))}</a>` : '';
  return `<div class="stack">
${back}
${cancelLink(lang, p, method)}
</div>`;
}

/** A centred status: its icon, heading and line of text, then `inner` inside the box. */
function statusBox(lang: Lang, icon: string, title: TextKey, text: TextKey, inner = ''): string {
  return `<div class="status">${icon}
<h2>${esc(t(lang, title))}</h2>
<p class="muted">${esc(t(lang, text))}</p>${inner}</div>`;
}

/** The buyer's confirmation that they give up: "Yes, cancel" posts confirm=yes, "Back" returns to `from`. */
export function cancelConfirm({ lang, p }: ScreenCtx, from: string | null): string {
  return `${statusBox(lang, STATUS_ICONS.off, 'cancel_confirm_title', 'cancel_confirm_text')}
<div class="stack">
<form method="post" action="${esc(href(payPath(p, '/cancel'), lang))}">
<input type="hidden" name="confirm" value="yes">
<button class="btn danger" type="submit">${esc(t(lang, 'cancel_yes'))}</button>
</form>
<a class="btn secondary" href="${esc(href(screenPath(p, from), lang))}">${esc(t(lang, 'cancel_back'))}</a>
</div>`;
}

/** The method choice of an `any` payment: a GET to the method's pay step, so a wrong pick opens no bank session. */
export function methodChoice({ lang, p }: ScreenCtx): string {
  const items = PAGE_METHODS.map(
    (m) => `<li><button class="method" type="submit" name="method" value="${m}">${ICONS[m]}<span><b>${esc(t(lang, `method_${m}` as TextKey))}</b><small>${esc(t(lang, `method_${m}_hint` as TextKey))}</small></span>${CHEVRON}</button></li>`,
  ).join('\n');
  return `<h2>${esc(t(lang, 'choose_method'))}</h2>
<form method="get" action="${esc(payPath(p))}">
<input type="hidden" name="lang" value="${lang}">
<ul class="methods">
${items}
</ul>
</form>
<div class="stack">
${cancelLink(lang, p, 'any')}
</div>`;
}

/** The pay step of one method, whose POST opens the bank session (a test card payment's is the card form itself). */
export function payStep(sc: ScreenCtx, method: PageMethod, canChange: boolean): string {
  const { lang, p } = sc;
  if (method === 'cards' && isTest(p)) return cardPayStep(sc, canChange);
  return `<h2>${esc(t(lang, `pay_by_${method}` as TextKey))}</h2>
<p class="chosen">${ICONS[method]}<span><b>${esc(t(lang, `method_${method}` as TextKey))}</b><small>${esc(t(lang, `method_${method}_hint` as TextKey))}</small></span></p>
<form method="post" action="${esc(href(payPath(p, '/method'), lang))}">
<button class="btn" type="submit" name="method" value="${method}">${esc(t(lang, 'continue'))}</button>
</form>
${waysOut(lang, p, method, canChange)}`;
}

/** The card form as a pending payment's pay step, with the ways off it; `errors` and `kept` as in cardScreen. */
export function cardPayStep(sc: ScreenCtx, canChange: boolean, errors: CardFieldError[] = [], kept: { exp?: string; holder?: string } = {}): string {
  return cardScreen(sc, errors, kept, waysOut(sc.lang, sc.p, 'cards', canChange));
}

function planLine(lang: Lang, p: PaymentView): string {
  const outcome = p.metadata.simulator_outcome;
  if (!outcome) return '';
  const label = t(lang, `plan_${outcome}` as TextKey) ?? outcome;
  const code = p.metadata.simulator_failure_code;
  return `<p>${esc(t(lang, 'test_plan'))}: <b>${esc(label)}</b>${code ? ` (<code>${esc(code)}</code>)` : ''}</p>`;
}

/** Test-mode approve/decline controls of the simulated bank (SBP, T-Pay, bank wallet, confirmations). */
function bankControls(lang: Lang, p: PaymentView): string {
  return `<section class="panel" aria-labelledby="bank-h">
<h3 id="bank-h">${esc(t(lang, 'test_controls'))}</h3>
${planLine(lang, p)}
<form method="post" action="${esc(href(payPath(p, '/bank'), lang))}" class="stack">
<button class="btn" type="submit" name="action" value="approve">${esc(t(lang, 'approve'))}</button>
<button class="btn danger" type="submit" name="action" value="decline">${esc(t(lang, 'decline'))}</button>
</form>
</section>`;
}

// SBP: a QR code, a button to the bank app (`bank`, when there is one), and in test mode the bank's controls. A test
// payment's QR code is of the payment link and its bank app the simulated one; a live one's are its bank's (`payload`).
export function sbpScreen(ctx: ScreenCtx, qrSvg: string, live?: { payload: string; bank: string | null }): string {
  const { lang, p } = ctx;
  const bank = live ? live.bank : href(payPath(p, '/bank'), lang);
  return `<h2>${esc(t(lang, 'sbp_title'))}</h2>
<p class="muted">${esc(t(lang, 'sbp_scan'))}</p>
<div role="img" aria-label="${esc(t(lang, 'sbp_qr_label'))}"${live ? ` data-qr-payload="${esc(live.payload)}"` : ''}>${qrSvg}</div>
${bank ? `<a class="btn" href="${esc(bank)}">${esc(t(lang, 'sbp_open_bank'))}</a>` : ''}
<p class="muted" role="status">${esc(t(lang, 'sbp_waiting'))}</p>${isTest(p) ? `\n${bankControls(lang, p)}` : ''}`;
}

/** The simulated bank's confirmation page (T-Pay, bank wallet, and SBP's "bank app"). */
export function bankScreen(ctx: ScreenCtx): string {
  const { lang, p } = ctx;
  if (!isTest(p)) return `<h2>${esc(t(lang, 'bank_text'))}</h2><div class="spinner" aria-hidden="true"></div><p class="muted" role="status">${esc(t(lang, 'bank_live_wait'))}</p>`;
  return `<h2>${esc(t(lang, 'bank_text'))}</h2>
<dl class="kv"><div><dt>${esc(p.shop_name)}</dt><dd>${esc(formatAmount(lang, p.amount, p.currency))}</dd></div></dl>
${bankControls(lang, p)}`;
}

/** A requires_action step for SBP, T-Pay and bank wallet: the bank asks for one more confirmation. */
export function confirmScreen(ctx: ScreenCtx): string {
  const { lang, p } = ctx;
  return `<h2>${esc(t(lang, 'bank_confirm_title'))}</h2>
<p class="muted">${esc(t(lang, 'bank_confirm_text'))}</p>
${bankControls(lang, p)}`;
}

function field(lang: Lang, name: string, label: TextKey, attrs: string, hint: TextKey | null, value: string, error?: string): string {
  const describedBy = [hint ? `${name}-hint` : '', `${name}-err`].filter(Boolean).join(' ');
  return `<div class="field">
<label for="${name}">${esc(t(lang, label))}</label>
<input id="${name}" name="${name}" ${attrs} value="${esc(value)}" aria-describedby="${describedBy}"${error ? ' aria-invalid="true"' : ''}>
${hint ? `<span class="hint" id="${name}-hint">${esc(t(lang, hint))}</span>` : ''}
<p class="err" id="${name}-err" aria-live="polite">${esc(error ?? '')}</p>
</div>`;
}

function testCards(lang: Lang): string {
  const rows = TEST_CARDS.map((c) => {
    const outcome = c.outcome === 'succeeded' ? t(lang, 'plan_succeeded') : c.failureCode ?? '';
    const label = `${outcome}${c.threeDs ? ' · 3-D Secure' : ''}`;
    return `<li><button type="button" data-card="${c.number}" aria-label="${esc(t(lang, 'use_card'))} ${c.number} (${esc(label)})"><code>${c.number.replace(/(\d{4})(?=\d)/g, '$1 ')}</code><span>${esc(label)}</span></button></li>`;
  }).join('\n');
  return `<section class="panel" aria-labelledby="cards-h">
<h3 id="cards-h">${esc(t(lang, 'test_cards'))}</h3>
<p>${esc(t(lang, 'test_cards_hint'))}</p>
<ul class="cards">
${rows}
</ul>
</section>`;
}

/** The card form; `errors` come from the server-side check when the script did not run; `after` follows the form. */
export function cardScreen(ctx: ScreenCtx, errors: CardFieldError[] = [], kept: { exp?: string; holder?: string } = {}, after = ''): string {
  const { lang, p } = ctx;
  const err = (f: string): string | undefined => {
    const e = errors.find((x) => x.field === f);
    return e ? t(lang, e.reason as TextKey) : undefined;
  };
  const action = `${purpose(lang, kindOf(p)).action}${kindOf(p) === 'payment' ? ' ' + formatAmount(lang, p.amount, p.currency) : ''}`;
  return `<h2>${esc(t(lang, 'pay_by_cards'))}</h2>
${errors.length > 0 ? `<div class="alert" role="alert">${esc(t(lang, 'form_errors'))}</div>` : ''}
<form id="card-form" method="post" action="${esc(href(payPath(p, '/card'), lang))}" novalidate>
${field(lang, 'number', 'card_number', 'type="text" inputmode="numeric" autocomplete="cc-number" maxlength="23" placeholder="0000 0000 0000 0000" required', null, '', err('number'))}
<div class="row">
${field(lang, 'exp', 'card_exp', `type="text" inputmode="numeric" autocomplete="cc-exp" maxlength="7" placeholder="${esc(t(lang, 'card_exp_hint'))}" required`, null, kept.exp ?? '', err('exp'))}
${field(lang, 'cvc', 'card_cvc', 'type="password" inputmode="numeric" autocomplete="cc-csc" maxlength="4" required', 'card_cvc_hint', '', err('cvc'))}
</div>
${field(lang, 'holder', 'card_holder', 'type="text" autocomplete="cc-name" autocapitalize="characters" spellcheck="false" maxlength="64"', 'card_holder_hint', kept.holder ?? '', err('holder'))}
<button class="btn" type="submit">${esc(action)}</button>
</form>
${after}
${isTest(p) ? testCards(lang) : ''}`;
}

/** The 3-D Secure challenge: the documented test code passes, anything else fails three_ds_failed. */
export function threeDsScreen(ctx: ScreenCtx): string {
  const { lang, p, step } = ctx;
  return `<h2>${esc(t(lang, 'tds_title'))}</h2>
<p>${esc(t(lang, 'tds_text'))}</p>
${step?.card_mask ? `<dl class="kv"><div><dt>${esc(t(lang, 'card'))}</dt><dd>${esc(cardLabel(step.card_brand, step.card_mask))}</dd></div></dl>` : ''}
<form method="post" action="${esc(href(payPath(p, '/3ds'), lang))}" class="stack">
${field(lang, 'code', 'tds_code', 'type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="8" required autofocus', null, '')}
<button class="btn" type="submit">${esc(t(lang, 'tds_submit'))}</button>
</form>
${isTest(p) ? `<section class="panel"><h3>${esc(t(lang, 'test_controls'))}</h3><p>${esc(t(lang, 'tds_hint'))}: <code>${THREE_DS_CODE}</code></p></section>` : ''}`;
}

/** Waiting for the bank: updates itself through the status poller. */
export function processingScreen({ lang }: ScreenCtx): string {
  return `<div class="status"><div class="spinner" aria-hidden="true"></div>
<h2>${esc(t(lang, 'processing_title'))}</h2>
<p class="muted" role="status">${esc(t(lang, 'processing_text'))}</p></div>`;
}

const STATUS_ICONS = {
  ok: '<svg width="64" height="64" viewBox="0 0 64 64" aria-hidden="true"><circle cx="32" cy="32" r="30" fill="#dcfce7"/><path d="M20 33l8 8 16-18" fill="none" stroke="#15803d" stroke-width="5" stroke-linecap="round" stroke-linejoin="round"/></svg>',
  bad: '<svg width="64" height="64" viewBox="0 0 64 64" aria-hidden="true"><circle cx="32" cy="32" r="30" fill="#fee2e2"/><path d="M22 22l20 20M42 22L22 42" stroke="#b91c1c" stroke-width="5" stroke-linecap="round"/></svg>',
  off: '<svg width="64" height="64" viewBox="0 0 64 64" aria-hidden="true"><circle cx="32" cy="32" r="30" fill="#f3f4f6"/><path d="M20 32h24" stroke="#4b5563" stroke-width="5" stroke-linecap="round"/></svg>',
  clock: '<svg width="64" height="64" viewBox="0 0 64 64" aria-hidden="true"><circle cx="32" cy="32" r="30" fill="#fef3c7"/><circle cx="32" cy="32" r="16" fill="none" stroke="#b45309" stroke-width="4"/><path d="M32 23v10l7 4" fill="none" stroke="#b45309" stroke-width="4" stroke-linecap="round"/></svg>',
};

const BRAND_NAMES: Record<string, string> = { mir: 'Мир', visa: 'Visa', mastercard: 'Mastercard', amex: 'Amex', unionpay: 'UnionPay', jcb: 'JCB' };

/** A card as the buyer recognises it: scheme name and masked number. */
function cardLabel(brand: string, mask: string): string {
  return `${BRAND_NAMES[brand] ?? ''} ${mask}`.trim();
}

/** A final status screen; `redirectUrl` adds the way back to the shop (the script follows it after 2 s). */
export function statusScreen({ lang, p }: ScreenCtx, redirectUrl: string | null): string {
  const back = redirectUrl ? `<a class="btn secondary" href="${esc(redirectUrl)}">${esc(t(lang, 'back_to_shop'))}</a>` : '';
  const screens: Record<string, [icon: string, title: string, text: string]> = {
    succeeded: [STATUS_ICONS.ok, purpose(lang, kindOf(p)).done, redirectUrl ? t(lang, 'success_redirect') : ''],
    refunded: [STATUS_ICONS.off, t(lang, 'refunded_title'), t(lang, 'refunded_text')],
    cancelled: [STATUS_ICONS.off, t(lang, 'cancelled_title'), t(lang, 'cancelled_text')],
    expired: [STATUS_ICONS.clock, t(lang, 'expired_title'), failureReason(lang, p.metadata.failure_code || 'link_expired')],
  };
  const failed: [string, string, string] = [STATUS_ICONS.bad, t(lang, 'failed_title'), `${failureReason(lang, p.metadata.failure_code)} ${t(lang, 'failed_retry')}`];
  const [icon, title, text] = screens[p.status] ?? failed;
  const card = p.customer_card_mask ? `<div><dt>${esc(t(lang, 'card'))}</dt><dd>${esc(cardLabel(p.customer_card_brand, p.customer_card_mask))}</dd></div>` : '';
  return `<div class="status" data-final="${esc(p.status)}">${icon}
<h2>${esc(title)}</h2>
${text ? `<p class="reason">${esc(text)}</p>` : ''}
<dl class="kv"><div><dt>${esc(t(lang, 'status_note'))}</dt><dd>${esc(p.public_id)}</dd></div>${card}</dl>
${back ? `<div class="stack">${back}</div>` : ''}
</div>`;
}

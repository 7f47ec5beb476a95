import { randomBytes } from 'node:crypto';
import { formatAmount, purpose, t, type Lang } from './i18n';
import { CSS } from './styles';
import { clientScript } from './scripts';
import type { PaymentView } from '../../money/bank-port/payment';

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** HTML-escape text for element content and quoted attribute values. */
export function esc(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ENTITIES[c]);
}

export function newNonce(): string {
  return randomBytes(16).toString('base64');
}

/** The origin of a return_url, for CSP form-action (forms end in a redirect there); null when absent or malformed. */
export function returnOrigin(returnUrl: string | null | undefined): string | null {
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
export function kindOf(p: PaymentView): string {
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

export function page(shell: Shell, body: string): string {
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

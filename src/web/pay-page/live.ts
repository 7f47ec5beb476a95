import QRCode from 'qrcode';
import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../../money/core/core';
import type { PaymentView } from '../../money/bank-port/payment';
import { getPayment } from '../../money/payments/store';
import type { PageSession } from '../../money/bank-port/port';
import { esc } from './layout';
import { t, type Lang } from './i18n';
import { renderPage } from './render';
import { processingScreen } from './screens';

// The hosted page of a live payment whose session is open: the buyer pays on the acquirer's side, never
// on kopek's (no card number reaches kopek). kopek sends the buyer to the bank's page, or shows the SBP QR
// payload the bank gave, and waits; the bank sends the buyer back here (?back=) to see the outcome.

/** The live bank session of a processing payment, as its bank tells the page; undefined when its bank has none. */
export async function liveSession(ctx: Ctx<Pick<Core, 'store' | 'banks'>>, p: PaymentView): Promise<PageSession | undefined> {
  const row = await getPayment(ctx.app.store, p.id);
  return row && row.status === 'processing' ? (await ctx.app.banks.for(ctx.app.store, row.shop_id, row.mode)).pageSession(row) : undefined;
}

/** The step the status route reports for a live session, so the waiting page reloads once the bank answered. */
export function liveStep(s: PageSession | undefined): string {
  return s ? `bank_${s.kind}` : '';
}

/** The screen of a live processing payment. GET only reads: the session opened on the buyer's POST. */
export async function liveScreen(ctx: Ctx, lang: Lang, p: PaymentView, s: PageSession | undefined): Promise<Reply> {
  const back = ctx.query.get('back') !== null;
  const poll = { poll: true, pollStep: liveStep(s) };
  if (s?.kind === 'redirect' && !back) {
    const body = `<div class="status"><div class="spinner" aria-hidden="true"></div>
<h2>${esc(t(lang, 'live_to_bank_title'))}</h2>
<p class="muted">${esc(t(lang, 'live_to_bank_text'))}</p>
<a class="btn" id="to-bank" href="${esc(s.url)}">${esc(t(lang, 'live_to_bank_button'))}</a></div>`;
    return renderPage(ctx, lang, p, body, { redirect: s.url, redirectMs: 0 });
  }
  if (s?.kind === 'qr') {
    const svg = (await QRCode.toString(s.payload, { type: 'svg', margin: 1, errorCorrectionLevel: 'M' })).replace('<svg ', '<svg class="qr" focusable="false" aria-hidden="true" ');
    const link = /^https:\/\//.test(s.payload) ? `<a class="btn" href="${esc(s.payload)}">${esc(t(lang, 'sbp_open_bank'))}</a>` : '';
    const body = `<h2>${esc(t(lang, 'sbp_title'))}</h2>
<p class="muted">${esc(t(lang, 'sbp_scan'))}</p>
<div role="img" aria-label="${esc(t(lang, 'sbp_qr_label'))}" data-qr-payload="${esc(s.payload)}">${svg}</div>
${link}
<p class="muted" role="status">${esc(t(lang, 'sbp_waiting'))}</p>`;
    return renderPage(ctx, lang, p, body, poll);
  }
  return renderPage(ctx, lang, p, processingScreen({ lang, p }), poll);
}

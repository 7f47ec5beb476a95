import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../../money/core/core';
import type { PaymentsCore } from '../../money/payments/core';
import { badRequest } from '../../platform/http/errors';
import { esc } from '../pay-page/render';
import { formatAmount, type Lang } from '../pay-page/i18n';
import type { PaymentRow } from '../../money/bank-port/payment';
import { getPayment, refundsOf } from '../../money/payments/store';
import { cancelTx } from '../../money/payments/state';
import { createRefundTx, refundableOf } from '../../money/refunds/refunds';
import { insertAudit } from './audit';
import { cabinetPage, field, postForm, table } from './layout';
import { actor, ownPayment, ownShop, shopOfOwn, change } from './scope';
import { form } from './guard';
import { ct, statusBadge, when, paymentStatusCell, bankText, codeText, counted, deliveryText } from './text';
import { eventSummary, timeline, TIMELINE_MAX, TIMELINE_SCAN_ROWS, webhookCell } from './timeline';
import { deliveryLog, listEndpoints, resendEvent } from '../../money/webhooks/store';

/** `events_from` of a payment page's query: where its timeline's window starts (a seq), or undefined. */
function eventsFrom(ctx: Ctx): number | undefined {
  const v = ctx.query.get('events_from');
  if (v === null) return undefined;
  if (!/^\d{1,15}$/.test(v)) throw badRequest(`Query parameter "events_from" must be a whole number, got "${v.slice(0, 32)}"`, 'events_from');
  return Number(v);
}

/** The payment's fields as a definition list (the shop by its name). */
function fieldList(lang: Lang, p: PaymentRow, shopName: string): string {
  const amount = (n: number) => esc(formatAmount(lang, n, p.currency));
  const kv = (label: string, value: string) => `<div><dt>${esc(label)}</dt><dd>${value}</dd></div>`;
  return `<dl class="kv">
${kv('Id', `<span class="mono">${esc(p.id)}</span>`)}
${kv(ct(lang, 'payment'), esc(p.public_id))}
${kv(ct(lang, 'order'), esc(p.order_id))}
${kv(ct(lang, 'amount'), amount(p.amount))}
${kv(ct(lang, 'refunds'), amount(p.amount_refunded))}
${kv(ct(lang, 'status'), paymentStatusCell(lang, p))}
${kv(ct(lang, 'method'), esc(codeText(lang, p.method)))}
${kv(ct(lang, 'mode'), esc(codeText(lang, p.mode)))}
${kv(ct(lang, 'shop'), esc(shopName))}
${kv(ct(lang, 'created'), esc(when(p.created_at)))}
${p.description ? kv(ct(lang, 'description'), esc(p.description)) : ''}
${p.card_mask ? kv(ct(lang, 'card'), esc(`${p.card_brand} ${p.card_mask}`)) : ''}
${p.bank_name ? kv(ct(lang, 'bank'), esc(bankText(lang, p.bank_name))) : ''}
${p.rrn ? kv('RRN', esc(p.rrn)) : ''}
</dl>`;
}

/** GET /cabinet/payments/:id: the payment's fields, refunds, timeline of events, webhook attempts and actions. */
export async function paymentPage(ctx: Ctx<Core>): Promise<Reply> {
  const p = await ownPayment(ctx, ctx.params.id);
  const lang = ctx.cabinet!.lang;
  const shop = await ownShop(ctx, p.shop_id);
  const { store } = ctx.app;
  const amount = (n: number) => esc(formatAmount(lang, n, p.currency));
  const left = await refundableOf(store, p);
  const fields = fieldList(lang, p, shop.name);

  const actions: string[] = [];
  if (p.status === 'succeeded' && left > 0) {
    actions.push(`<h2>${esc(ct(lang, 'refund'))}</h2><p class="muted">${esc(ct(lang, 'refundable'))}: ${amount(left)}</p>
${postForm(
  ctx,
  `/cabinet/payments/${p.id}/refund`,
  `<div class="inline">${field('r-amount', ct(lang, 'refund_amount'), `<input id="r-amount" name="amount" inputmode="decimal" autocomplete="off">`)}
${field('r-reason', ct(lang, 'reason'), `<input id="r-reason" name="reason" maxlength="500">`)}
<button class="btn" type="submit">${esc(ct(lang, 'refund'))}</button></div>`,
  { confirm: ct(lang, 'confirm') },
)}`);
  }
  if (p.status === 'pending') {
    actions.push(postForm(ctx, `/cabinet/payments/${p.id}/cancel`, `<button class="btn danger" type="submit">${esc(ct(lang, 'cancel_payment'))}</button>`, { confirm: ct(lang, 'confirm') }));
  }

  const refunds = table(
    [{ label: ct(lang, 'created') }, { label: ct(lang, 'amount'), num: true }, { label: ct(lang, 'status') }, { label: ct(lang, 'reason') }],
    (await refundsOf(store, p.id)).map((r) => [esc(when(r.created_at)), amount(r.amount), statusBadge(lang, r.status), esc(r.reason)]),
    ct(lang, 'nothing'),
  );

  const from = eventsFrom(ctx);
  const { events, next } = await timeline(store, p, from);
  const back = `/cabinet/payments/${p.id}`;
  const log = await deliveryLog(store, { paymentId: p.id, limit: TIMELINE_MAX });
  const sent = { delivered: new Set(log.map((a) => a.event_id)), endpoints: await listEndpoints(store, p.shop_id), back };
  const timelineTable = table(
    [{ label: ct(lang, 'time') }, { label: ct(lang, 'event') }, { label: ct(lang, 'details') }, { label: ct(lang, 'webhooks') }],
    events.map((e) => [esc(when(e.at)), `<span class="mono nowrap">${esc(e.kind)}</span>`, esc(eventSummary(lang, e.payload, p.currency)), webhookCell(ctx, e, sent)]),
    ct(lang, 'nothing'),
  );
  const attempts = table(
    [{ label: ct(lang, 'time') }, { label: ct(lang, 'event') }, { label: ct(lang, 'attempt'), num: true }, { label: ct(lang, 'status') }, { label: ct(lang, 'answer') }, { label: 'URL' }],
    log.map((a) => [
      esc(a.attempted_at ? when(a.attempted_at) : `→ ${when(a.next_attempt_at)}`),
      `<span class="mono">${esc(a.event)}</span>`,
      String(a.attempt),
      `<span class="badge ${esc(a.status)}">${esc(deliveryText(lang, a.status))}</span>`,
      esc(a.response_code ?? a.error ?? ''),
      `<span class="mono">${esc(a.url)}</span>`,
    ]),
    ct(lang, 'nothing'),
  );
  const body = `<p><a href="/cabinet/payments">← ${esc(ct(lang, 'payments'))}</a></p>
<h1>${esc(ct(lang, 'payment'))} ${esc(p.public_id)} · ${amount(p.amount)}</h1>
${fields}
${actions.join('\n')}
<h2>${esc(ct(lang, 'refunds'))}</h2>${refunds}
<h2>${esc(ct(lang, 'timeline'))}</h2>${timelineTable}
${from !== undefined ? `<p><a href="/cabinet/payments/${esc(p.id)}">${esc(ct(lang, 'first_page'))}</a></p>` : ''}
${next !== null ? `<p class="muted" role="status">${esc(ct(lang, 'timeline_more').replace('{n}', TIMELINE_SCAN_ROWS.toLocaleString(lang === 'ru' ? 'ru-RU' : 'en-GB')))} <a href="/cabinet/payments/${esc(p.id)}?events_from=${next}">${esc(ct(lang, 'timeline_search_on'))}</a></p>` : ''}
<h2>${esc(ct(lang, 'webhook_attempts'))}</h2>${attempts}`;
  return cabinetPage(ctx, { title: `${ct(lang, 'payment')} ${p.public_id}`, active: 'payments', body });
}

/** Rubles typed into the refund form as minor units; empty means the whole remainder (0). */
function refundAmount(text: string): number {
  const t = text.replace(/\s/g, '').replace(',', '.');
  if (t === '') return 0;
  if (!/^\d{1,10}(\.\d{1,2})?$/.test(t) || Number(t) <= 0) throw new Error(`Cannot refund: the amount must be rubles like 150 or 150.50, got "${text.slice(0, 32)}"`);
  return Math.round(Number(t) * 100);
}

// POST /cabinet/payments/:id/refund {amount, reason}: the refund of POST /v1/public/payments/{id}/refund (amount 0: the
// whole remainder), audited in the same commit.
export async function postRefund(ctx: Ctx<Core>): Promise<Reply> {
  const p = await ownPayment(ctx, ctx.params.id);
  const f = form(ctx);
  const who = actor(ctx);
  return change(ctx, { action: 'payment.refund', target: p.id, back: `/cabinet/payments/${p.id}`, auditedInside: true }, () => {
    const input = { amount: refundAmount(f.get('amount') ?? ''), reason: (f.get('reason') ?? '').slice(0, 500) };
    return ctx.app.store.write(async (tx) => {
      const r = await createRefundTx(ctx.app, tx, (await getPayment(tx, p.id))!, { ...input, keyId: `cabinet:${who.userId}` });
      const detail = `refund ${r.id}: ${r.amount} ${p.currency}${input.reason ? ` (${input.reason})` : ''}`;
      await insertAudit(tx, who, 'payment.refund', p.id, detail, ctx.app.clocks.real());
      return r;
    });
  });
}

/** POST /cabinet/payments/:id/cancel: the cancel of POST /v1/public/payments/{id}/cancel, audited in the same commit. */
export async function postCancel(ctx: Ctx<PaymentsCore>): Promise<Reply> {
  const p = await ownPayment(ctx, ctx.params.id);
  return change(ctx, { action: 'payment.cancel', target: p.id, back: `/cabinet/payments/${p.id}`, auditedInside: true }, () =>
    ctx.app.store.write(async (tx) => {
      const after = await cancelTx(ctx.app, tx, (await getPayment(tx, p.id))!);
      await insertAudit(tx, actor(ctx), 'payment.cancel', p.id, '', ctx.app.clocks.real());
      return after;
    }),
  );
}

/** POST /cabinet/events/:id/resend {back}: sends a webhook event again, as `kopek webhook resend` does. */
export async function postResend(ctx: Ctx<Core>): Promise<Reply> {
  const id = ctx.params.id;
  const ev = await ctx.app.store.get<{ shop_id: string }>('SELECT shop_id FROM events WHERE id = ?', id);
  await shopOfOwn(ctx, ev?.shop_id, `Cannot find event "${id.slice(0, 64)}"`);
  const backField = form(ctx).get('back') ?? '';
  const back = /^\/cabinet\/[A-Za-z0-9/?=&._-]*$/.test(backField) ? backField : '/cabinet/webhooks';
  return change(ctx, { action: 'webhook.resend', target: id, back }, async () => {
    // The attempts' jobs wake the scheduler once committed: sent now.
    const n = await ctx.app.store.tx((tx) => resendEvent(tx, ctx.app.scheduler, id, ctx.app.clocks.real()));
    return counted(ctx.cabinet!.lang, n, 'deliveries');
  });
}

import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../../money/core/core';
import type { PaymentsCore } from '../../money/payments/core';
import { badRequest } from '../../platform/http/errors';
import { esc } from '../pay-page/render';
import { formatAmount, type Lang, failureReason } from '../pay-page/i18n';
import type { PaymentRow } from '../../money/bank-port/payment';
import { getPayment, refundsOf } from '../../money/payments/store';
import { cancelTx } from '../../money/payments/state';
import { createRefundTx, refundableOf } from '../../money/refunds/refunds';
import { insertAudit, actor, ownPayment, ownShop, shopOfOwn, change } from './scope';
import { cabinetPage, field, postForm, table } from './layout';
import { form } from './sessions';
import { ct, statusBadge, when, paymentStatusCell, bankText, codeText, counted, deliveryText, statusText, type CabKey } from './text';
import { deliveryLog, listEndpoints, resendEvent, type Endpoint } from '../../money/webhooks/store';
import type { Engine, Reader } from '../../platform/storage/store';
import { indexedBy } from '../../platform/storage/dialect';
import { eventIdPrefix } from '../../platform/util/ids';

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

/** POST /cabinet/payments/:id/refund {amount, reason}: the refund of POST /v1/public/payments/{id}/refund, audited in the same commit. */
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

/** Events shown on a payment's timeline; a payment has a handful, this only bounds a pathological one. */
const TIMELINE_MAX = 200;
/** Events of the shop's log one timeline page reads at most, from where the payment's events begin. */
export const TIMELINE_SCAN_ROWS = 20_000;

interface TimelineEvent {
  seq: number;
  id: string;
  kind: string;
  payload: string;
  at: number;
  webhook_event: string | null;
}

/** Ids of the events stamped at the payment's creation, one millisecond: the range its payment.created event lies in. */
export const CREATED_EVENT_SQL = 'SELECT min(seq) AS seq FROM events WHERE id >= ? AND id < ? AND payment_id = ?';
const windowSql = (engine: Engine) => `SELECT seq, id, kind, payload, at, webhook_event FROM (
  SELECT seq, id, kind, payload, at, webhook_event, payment_id FROM events${indexedBy(engine, 'events_shop_seq')}
  WHERE shop_id = ? AND mode = ? AND seq >= ? ORDER BY seq LIMIT ?
) AS win WHERE payment_id = ? ORDER BY seq LIMIT ?`;
const windowEndSql = (engine: Engine) =>
  `SELECT seq FROM events${indexedBy(engine, 'events_shop_seq')} WHERE shop_id = ? AND mode = ? AND seq >= ? ORDER BY seq LIMIT 1 OFFSET ?`;
/** A window of the shop's log from a seq, and the payment's events in it. */
export const WINDOW_SQL = { sqlite: windowSql('sqlite'), postgres: windowSql('postgres') };
/** The last seq of such a window, read from the index alone; none when the window was not full. */
export const WINDOW_END_SQL = { sqlite: windowEndSql('sqlite'), postgres: windowEndSql('postgres') };

// The payment's events in one window of at most TIMELINE_SCAN_ROWS shop events from `from` (default: its payment.created);
// events long after (a refund weeks later in a busy shop) may lie past it: `next` says where the following window starts
// (null when this one reached the end of the shop's log).
export async function timeline(q: Reader, p: PaymentRow, from?: number): Promise<{ events: TimelineEvent[]; next: number | null }> {
  // Unless given, from the payment.created event, found by the index on `id` within the creation millisecond.
  const start = from ?? (await q.get<{ seq: number | null }>(CREATED_EVENT_SQL, eventIdPrefix(p.created_at), eventIdPrefix(p.created_at + 1), p.id))?.seq ?? 0;
  const events = await q.all<TimelineEvent>(WINDOW_SQL[q.engine], p.shop_id, p.mode, start, TIMELINE_SCAN_ROWS, p.id, TIMELINE_MAX);
  const end = await q.get<{ seq: number }>(WINDOW_END_SQL[q.engine], p.shop_id, p.mode, start, TIMELINE_SCAN_ROWS - 1);
  // A window that held more of the payment's events than a page shows goes on after the last one shown.
  if (events.length === TIMELINE_MAX) return { events, next: events[events.length - 1].seq + 1 };
  return { events, next: end ? end.seq + 1 : null };
}

/** Fields of an event payload the timeline shows, with how each reads: money as money, codes in words. */
const SHOWN: Array<[string, CabKey, (lang: Lang, v: unknown, currency: string) => string]> = [
  ['status', 'status', (lang, v) => statusText(lang, String(v))],
  ['amount', 'amount', (lang, v, currency) => (typeof v === 'number' ? formatAmount(lang, v, currency) : String(v))],
  ['amount_refunded', 'refunds', (lang, v, currency) => (typeof v === 'number' ? formatAmount(lang, v, currency) : String(v))],
  ['failure_code', 'reason', (lang, v) => failureReason(lang, String(v)).replace(/\.$/, '')],
  ['method', 'method', (lang, v) => codeText(lang, String(v))],
];

/** An event payload in one short line in the page's language: its status, amounts, failure and method when it has them. */
function eventSummary(lang: Lang, payload: string, currency: string): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(payload) as Record<string, unknown>;
  } catch {
    return '';
  }
  return SHOWN.filter(([k]) => o[k] !== undefined && o[k] !== '' && !(k === 'amount_refunded' && o[k] === 0))
    .map(([k, label, show]) => `${ct(lang, label)}: ${show(lang, o[k], currency)}`)
    .join('; ');
}

/** A timeline event's webhook cell: Resend when it went to an endpoint; when it went to none, Send only if an endpoint takes it now. */
function webhookCell(ctx: Ctx, e: TimelineEvent, o: { delivered: Set<string>; endpoints: Endpoint[]; back: string }): string {
  if (!e.webhook_event) return '—';
  const lang = ctx.cabinet!.lang;
  const send = (label: CabKey) =>
    postForm(
      ctx,
      `/cabinet/events/${e.id}/resend`,
      `<input type="hidden" name="back" value="${esc(o.back)}"><button class="chip" type="submit" aria-label="${esc(`${ct(lang, label)} ${e.webhook_event}`)}">${esc(ct(lang, label))}</button>`,
    );
  const name = `<span class="mono">${esc(e.webhook_event)}</span>`;
  if (o.delivered.has(e.id)) return `${name} ${send('resend')}`;
  // An endpoint takes it now when enabled and listing it or listing no event.
  const now = o.endpoints.some((x) => x.disabled_at === null && (x.events === '' || x.events.split(',').includes(e.webhook_event!)));
  return `${name} <small class="muted">${esc(ct(lang, 'no_endpoint_received'))}</small>${now ? ` ${send('send_now')}` : ''}`;
}

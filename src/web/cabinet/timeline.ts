import type { Ctx } from '../../platform/http/types';
import type { Engine, Reader } from '../../platform/storage/store';
import { indexedBy } from '../../platform/storage/dialect';
import { eventIdPrefix } from '../../platform/util/ids';
import type { PaymentRow } from '../../money/bank-port/payment';
import type { Endpoint } from '../../money/webhooks/store';
import { esc } from '../pay-page/render';
import { failureReason, formatAmount, type Lang } from '../pay-page/i18n';
import { postForm } from './layout';
import { codeText, ct, statusText, type CabKey } from './text';

/** Events shown on a payment's timeline; a payment has a handful, this only bounds a pathological one. */
export const TIMELINE_MAX = 200;
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

/** Where a payment's events begin: its payment.created event, found by the index on `id` within the creation millisecond; null when gone. */
async function firstEventSeq(q: Reader, p: PaymentRow): Promise<number | null> {
  const r = await q.get<{ seq: number | null }>(CREATED_EVENT_SQL, eventIdPrefix(p.created_at), eventIdPrefix(p.created_at + 1), p.id);
  return r?.seq ?? null;
}

// The payment's events in one window of at most TIMELINE_SCAN_ROWS shop events from `from` (default: its payment.created);
// events long after (a refund weeks later in a busy shop) may lie past it: `next` says where the following window starts
// (null when this one reached the end of the shop's log).
export async function timeline(q: Reader, p: PaymentRow, from?: number): Promise<{ events: TimelineEvent[]; next: number | null }> {
  const start = from ?? (await firstEventSeq(q, p)) ?? 0;
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
export function eventSummary(lang: Lang, payload: string, currency: string): string {
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

/** True when an endpoint takes an event now (enabled, and listing it or listing none). */
function takes(e: Endpoint, event: string): boolean {
  return e.disabled_at === null && (e.events === '' || e.events.split(',').includes(event));
}

/** A timeline event's webhook cell: Resend when it went to an endpoint; when it went to none, Send only if an endpoint takes it now. */
export function webhookCell(ctx: Ctx, e: TimelineEvent, o: { delivered: Set<string>; endpoints: Endpoint[]; back: string }): string {
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
  const now = o.endpoints.some((x) => takes(x, e.webhook_event!));
  return `${name} <small class="muted">${esc(ct(lang, 'no_endpoint_received'))}</small>${now ? ` ${send('send_now')}` : ''}`;
}

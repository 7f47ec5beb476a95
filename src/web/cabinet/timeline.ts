import type { Reader } from '../../platform/storage/store';
import { eventIdPrefix } from '../../platform/util/ids';
import type { PaymentRow } from '../../money/bank-port/payment';

/** Events shown on a payment's timeline; a payment has a handful, this only bounds a pathological one. */
export const TIMELINE_MAX = 200;
/** Events of the shop's log one timeline page reads at most, from where the payment's events begin. */
export const TIMELINE_SCAN_ROWS = 20_000;

/** One event of a payment's timeline. */
export interface TimelineEvent {
  seq: number;
  id: string;
  kind: string;
  payload: string;
  at: number;
  webhook_event: string | null;
}

/** A page of a payment's timeline, and where the next one starts when the window ended before the log did. */
export interface Timeline {
  events: TimelineEvent[];
  /** The seq the next window starts at; null when this one reached the end of the shop's log. */
  next: number | null;
}

/** Ids of the events stamped at the payment's creation, one millisecond: the range its payment.created event lies in. */
export const CREATED_EVENT_SQL = 'SELECT min(seq) AS seq FROM events WHERE id >= ? AND id < ? AND payment_id = ?';
/** A window of the shop's log from a seq, and the payment's events in it. */
export const WINDOW_SQL = {
  sqlite: `SELECT seq, id, kind, payload, at, webhook_event FROM (
  SELECT seq, id, kind, payload, at, webhook_event, payment_id FROM events INDEXED BY events_shop_seq
  WHERE shop_id = ? AND mode = ? AND seq >= ? ORDER BY seq LIMIT ?
) AS win WHERE payment_id = ? ORDER BY seq LIMIT ?`,
  postgres: `SELECT seq, id, kind, payload, at, webhook_event FROM (
  SELECT seq, id, kind, payload, at, webhook_event, payment_id FROM events
  WHERE shop_id = ? AND mode = ? AND seq >= ? ORDER BY seq LIMIT ?
) AS win WHERE payment_id = ? ORDER BY seq LIMIT ?`,
};
/** The last seq of such a window, read from the index alone; none when the window was not full. */
export const WINDOW_END_SQL = {
  sqlite: 'SELECT seq FROM events INDEXED BY events_shop_seq WHERE shop_id = ? AND mode = ? AND seq >= ? ORDER BY seq LIMIT 1 OFFSET ?',
  postgres: 'SELECT seq FROM events WHERE shop_id = ? AND mode = ? AND seq >= ? ORDER BY seq LIMIT 1 OFFSET ?',
};

/**
 * Where a payment's events begin in the shop's log: its payment.created event. The event is stamped with the
 * payment's creation time, and event ids begin with their time, so the unique index on `id` narrows the search
 * to that one millisecond (of every shop). Null when the event is gone (retention).
 */
export async function firstEventSeq(q: Reader, p: PaymentRow): Promise<number | null> {
  const r = await q.get<{ seq: number | null }>(CREATED_EVENT_SQL, eventIdPrefix(p.created_at), eventIdPrefix(p.created_at + 1), p.id);
  return r?.seq ?? null;
}

/**
 * The payment's events in one window of at most TIMELINE_SCAN_ROWS of the shop's events from `from` (by
 * default from its payment.created event, or the start of the log when that is gone). Events the payment
 * gets long after it was made (a refund weeks later in a busy shop) may lie past the window: `next` says
 * where the following window starts.
 */
export async function timeline(q: Reader, p: PaymentRow, from?: number): Promise<Timeline> {
  const start = from ?? (await firstEventSeq(q, p)) ?? 0;
  const events = await q.all<TimelineEvent>(WINDOW_SQL[q.engine], p.shop_id, p.mode, start, TIMELINE_SCAN_ROWS, p.id, TIMELINE_MAX);
  const end = await q.get<{ seq: number }>(WINDOW_END_SQL[q.engine], p.shop_id, p.mode, start, TIMELINE_SCAN_ROWS - 1);
  // A window that held more of the payment's events than a page shows goes on after the last one shown.
  if (events.length === TIMELINE_MAX) return { events, next: events[events.length - 1].seq + 1 };
  return { events, next: end ? end.seq + 1 : null };
}

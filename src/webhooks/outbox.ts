import type { Store, Tx } from '../db/store';
import type { EventRow } from '../events/emit';
import type { Clocks, Mode } from '../scheduler/clock';
import type { Scheduler } from '../scheduler/jobs';
import { disableEndpoint, matchingEndpoints } from './store';

/** Delays before retry 1..8, counted from the failure, on the shop's clock (test mode) or real time. */
export const RETRY_DELAYS_MS: readonly number[] = [
  10_000,
  60_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  6 * 3_600_000,
  24 * 3_600_000,
  48 * 3_600_000,
];

/** Job kind that wakes a delivery for its next retry. */
export const RETRY_JOB = 'webhook.retry';

/** A delivery row of the outbox. */
export interface DeliveryRow {
  id: number;
  event_seq: number;
  event_id: string;
  event: string;
  shop_id: string;
  mode: Mode;
  endpoint_id: string | null;
  url: string;
  payment_id: string | null;
  state: 'pending' | 'succeeded' | 'failed';
  attempts: number;
  round_start: number;
  next_attempt_at: number | null;
  created_at: number;
}

/**
 * Write the deliveries of a webhook-worthy event in the event's own transaction: one row for a payment's
 * own URL, else one per enabled endpoint of the event's shop whose filter takes it. Returns their ids.
 */
export function enqueueDeliveries(tx: Tx, clocks: Clocks, row: EventRow): number[] {
  if (!row.webhook_event) return [];
  const now = clocks.now(row.shop_id, row.mode);
  const targets: Array<{ endpoint_id: string | null; url: string }> = row.webhook_url
    ? [{ endpoint_id: null, url: row.webhook_url }]
    : matchingEndpoints(tx.db, row.shop_id, row.webhook_event).map((e) => ({ endpoint_id: e.id, url: e.url }));
  const insert = tx.stmt(
    `INSERT INTO webhook_deliveries (event_seq, event_id, event, shop_id, mode, endpoint_id, url, payment_id, next_attempt_at, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  return targets.map(
    (t) =>
      Number(insert.run(row.seq, row.id, row.webhook_event, row.shop_id, row.mode, t.endpoint_id, t.url, row.payment_id, now, now).lastInsertRowid),
  );
}

/** One finished attempt, as the worker measured it. */
export interface AttemptResult {
  /** The delivery as loaded before the attempt: recording is skipped if it changed meanwhile. */
  delivery: DeliveryRow;
  url: string;
  /** Start of the attempt on the shop's clock as read when it began. */
  started_at: number;
  latency_ms: number;
  response_code: number | null;
  error: string | null;
  /** Real time, for the endpoint's disabled_at. */
  real_now: number;
}

/** What recording decided. */
export interface Recorded {
  attempt: number;
  state: DeliveryRow['state'];
  next_attempt_at: number | null;
  disabled_endpoint: boolean;
}

/**
 * Record an attempt and decide what follows, in one transaction: success on any 2xx; 410 fails the
 * delivery and disables its endpoint; otherwise the next retry is scheduled, until the eighth retry failed.
 */
export function recordAttempt(tx: Tx, scheduler: Scheduler, clocks: Clocks, r: AttemptResult): Recorded | null {
  const d = r.delivery;
  const cur = tx.stmt('SELECT state, attempts FROM webhook_deliveries WHERE id = ?').get(d.id) as
    | { state: string; attempts: number }
    | undefined;
  if (!cur || cur.state !== 'pending' || cur.attempts !== d.attempts) return null;
  const attempt = d.attempts + 1;
  // During a test-clock advance the clock reads the retry's due time (pinned), earlier than the start read
  // after the advance: the attempt counts at its due time, so one advance walks the whole schedule.
  const attempted_at = Math.min(r.started_at, clocks.now(d.shop_id, d.mode));
  const code = r.response_code;
  const ok = code !== null && code >= 200 && code < 300;
  const gone = code === 410;
  const retry = attempt - d.round_start - 1;
  let state: DeliveryRow['state'] = 'pending';
  let next: number | null = null;
  if (ok) state = 'succeeded';
  else if (gone || retry >= RETRY_DELAYS_MS.length) state = 'failed';
  else next = attempted_at + r.latency_ms + RETRY_DELAYS_MS[retry];
  tx
    .stmt(
      `INSERT INTO webhook_attempts (delivery_id, shop_id, mode, attempt, url, attempted_at, latency_ms, response_code, error, succeeded, next_attempt_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .run(d.id, d.shop_id, d.mode, attempt, r.url, attempted_at, r.latency_ms, code, r.error, ok ? 1 : 0, next);
  tx.stmt('UPDATE webhook_deliveries SET attempts = ?, state = ?, next_attempt_at = ? WHERE id = ?').run(attempt, state, next, d.id);
  if (next !== null) {
    scheduler.schedule(tx, { kind: RETRY_JOB, subjectId: String(d.id), shopId: d.shop_id, mode: d.mode, dueAt: next, payload: { attempts: attempt } });
  }
  let disabled = false;
  if (gone && d.endpoint_id) disabled = disableEndpoint(tx.db, d.endpoint_id, `receiver answered 410 Gone to event ${d.event_id}`, r.real_now);
  return { attempt, state, next_attempt_at: next, disabled_endpoint: disabled };
}

/** End a pending delivery without an attempt (its endpoint was disabled or deleted meanwhile). */
export function abandonDelivery(tx: Tx, d: DeliveryRow): void {
  tx.stmt(`UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL WHERE id = ? AND state = 'pending'`).run(d.id);
}

/**
 * Send an event again, with a fresh retry schedule (attempt numbers continue), to whoever takes it now: the
 * payment's own URL, or each enabled endpoint of the shop whose filter takes the event, including one added
 * since (an endpoint deleted and added again after a 410 gets the events it missed). Deliveries to deleted or
 * disabled endpoints stay as they are. Works from the CLI while the server runs: the worker's sweep finds
 * the due rows. Returns how many deliveries were queued; throws when there is nothing to send it to.
 */
export function resendEvent(tx: Tx, eventId: string, realNow: number): number {
  const ev = tx
    .stmt(
      `SELECT e.seq, e.shop_id, e.mode, e.webhook_event, e.webhook_url, e.payment_id, s.test_clock_offset_ms AS off
       FROM events e JOIN shops s ON s.id = e.shop_id WHERE e.id = ?`,
    )
    .get(eventId) as
    | { seq: number; shop_id: string; mode: Mode; webhook_event: string | null; webhook_url: string | null; payment_id: string | null; off: number }
    | undefined;
  if (!ev) throw new Error(`cannot resend event "${eventId}": no such event`);
  if (!ev.webhook_event) throw new Error(`cannot resend event "${eventId}": it is a stream event that sends no webhook`);
  const now = ev.mode === 'test' ? realNow + ev.off : realNow;
  const targets: Array<{ endpoint_id: string | null; url: string }> = ev.webhook_url
    ? [{ endpoint_id: null, url: ev.webhook_url }]
    : matchingEndpoints(tx.db, ev.shop_id, ev.webhook_event).map((e) => ({ endpoint_id: e.id, url: e.url }));
  if (targets.length === 0) {
    throw new Error(`cannot resend event "${eventId}": no enabled webhook endpoint of shop "${ev.shop_id}" takes ${ev.webhook_event}`);
  }
  const existing = tx.stmt('SELECT id, endpoint_id FROM webhook_deliveries WHERE event_id = ?').all(eventId) as Array<{ id: number; endpoint_id: string | null }>;
  const requeue = tx.stmt(`UPDATE webhook_deliveries SET state = 'pending', round_start = attempts, next_attempt_at = ? WHERE id = ?`);
  const insert = tx.stmt(
    `INSERT INTO webhook_deliveries (event_seq, event_id, event, shop_id, mode, endpoint_id, url, payment_id, next_attempt_at, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  for (const t of targets) {
    const d = existing.find((x) => x.endpoint_id === t.endpoint_id);
    // A retry job still pending for a re-queued row is harmless: the worker runs a delivery once per attempt count.
    if (d) requeue.run(now, d.id);
    else insert.run(ev.seq, eventId, ev.webhook_event, ev.shop_id, ev.mode, t.endpoint_id, t.url, ev.payment_id, now, now);
  }
  return targets.length;
}

/** Where a delivery goes: its shop, its endpoint (null for a payment's own webhook_url) and URL. */
export function deliveryTarget(store: Pick<Store, 'stmt'>, id: number): { shop_id: string; endpoint_id: string | null; url: string } | undefined {
  return store.stmt('SELECT shop_id, endpoint_id, url FROM webhook_deliveries WHERE id = ?').get(id) as
    | { shop_id: string; endpoint_id: string | null; url: string }
    | undefined;
}

/** Deliveries whose round has not begun and that are due on their own clock (a test shop's, or real time), at most `limit`. */
export function dueFirstAttempts(store: Pick<Store, 'stmt'>, realNow: number, limit: number): number[] {
  const rows = store
    .stmt(
      `SELECT d.id FROM webhook_deliveries d JOIN shops s ON s.id = d.shop_id
       WHERE d.state = 'pending' AND d.attempts = d.round_start
         AND d.next_attempt_at <= ? + (CASE WHEN d.mode = 'test' THEN s.test_clock_offset_ms ELSE 0 END)
       ORDER BY d.next_attempt_at LIMIT ?`,
    )
    .all(realNow, limit) as Array<{ id: number }>;
  return rows.map((r) => r.id);
}

/** A delivery row by id. */
export function getDelivery(store: Pick<Store, 'stmt'>, id: number): DeliveryRow | undefined {
  return store.stmt(`SELECT * FROM webhook_deliveries WHERE id = ?`).get(id) as DeliveryRow | undefined;
}

/** The time and webhook body of the event a delivery carries, if the event still exists. */
export function deliveryEvent(store: Pick<Store, 'stmt'>, seq: number): { at: number; webhook_data: string | null } | undefined {
  return store.stmt('SELECT at, webhook_data FROM events WHERE seq = ?').get(seq) as { at: number; webhook_data: string | null } | undefined;
}

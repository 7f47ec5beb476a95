import type { Reader, Tx } from '../../platform/storage/store';
import type { EventRow } from '../events/emit';
import type { Clocks, Mode } from '../../platform/clock';
import type { Scheduler } from '../../platform/queue/jobs';
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
export async function enqueueDeliveries(tx: Tx, clocks: Clocks, row: EventRow): Promise<number[]> {
  if (!row.webhook_event) return [];
  const now = await clocks.now(tx, row.shop_id, row.mode);
  const targets: Array<{ endpoint_id: string | null; url: string }> = row.webhook_url
    ? [{ endpoint_id: null, url: row.webhook_url }]
    : (await matchingEndpoints(tx, row.shop_id, row.webhook_event)).map((e) => ({ endpoint_id: e.id, url: e.url }));
  const ids: number[] = [];
  for (const t of targets) {
    const { lastInsertRowid } = await tx.run(
      `INSERT INTO webhook_deliveries (event_seq, event_id, event, shop_id, mode, endpoint_id, url, payment_id, next_attempt_at, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
      row.seq,
      row.id,
      row.webhook_event,
      row.shop_id,
      row.mode,
      t.endpoint_id,
      t.url,
      row.payment_id,
      now,
      now,
    );
    ids.push(Number(lastInsertRowid));
  }
  return ids;
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
export async function recordAttempt(tx: Tx, scheduler: Scheduler, clocks: Clocks, r: AttemptResult): Promise<Recorded | null> {
  const d = r.delivery;
  const cur = await tx.get<{ state: string; attempts: number }>('SELECT state, attempts FROM webhook_deliveries WHERE id = ?', d.id);
  if (!cur || cur.state !== 'pending' || cur.attempts !== d.attempts) return null;
  const attempt = d.attempts + 1;
  // During a test-clock advance the clock reads the retry's due time (pinned), earlier than the start read
  // after the advance: the attempt counts at its due time, so one advance walks the whole schedule.
  const attempted_at = Math.min(r.started_at, await clocks.now(tx, d.shop_id, d.mode));
  const code = r.response_code;
  const ok = code !== null && code >= 200 && code < 300;
  const gone = code === 410;
  const retry = attempt - d.round_start - 1;
  let state: DeliveryRow['state'] = 'pending';
  let next: number | null = null;
  if (ok) state = 'succeeded';
  else if (gone || retry >= RETRY_DELAYS_MS.length) state = 'failed';
  else next = attempted_at + r.latency_ms + RETRY_DELAYS_MS[retry];
  await tx.run(
    `INSERT INTO webhook_attempts (delivery_id, shop_id, mode, attempt, url, attempted_at, latency_ms, response_code, error, succeeded, next_attempt_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    d.id,
    d.shop_id,
    d.mode,
    attempt,
    r.url,
    attempted_at,
    r.latency_ms,
    code,
    r.error,
    ok ? 1 : 0,
    next,
  );
  await tx.run('UPDATE webhook_deliveries SET attempts = ?, state = ?, next_attempt_at = ? WHERE id = ?', attempt, state, next, d.id);
  if (next !== null) {
    await scheduler.schedule(tx, { kind: RETRY_JOB, subjectId: String(d.id), shopId: d.shop_id, mode: d.mode, dueAt: next, payload: { attempts: attempt } });
  }
  let disabled = false;
  if (gone && d.endpoint_id) disabled = await disableEndpoint(tx, d.endpoint_id, `receiver answered 410 Gone to event ${d.event_id}`, r.real_now);
  return { attempt, state, next_attempt_at: next, disabled_endpoint: disabled };
}

/** End a pending delivery without an attempt (its endpoint was disabled or deleted meanwhile). */
export async function abandonDelivery(tx: Tx, d: DeliveryRow): Promise<void> {
  await tx.run(`UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL WHERE id = ? AND state = 'pending'`, d.id);
}

/**
 * Send an event again, with a fresh retry schedule (attempt numbers continue), to whoever takes it now: the
 * payment's own URL, or each enabled endpoint of the shop whose filter takes the event, including one added
 * since (an endpoint deleted and added again after a 410 gets the events it missed). Deliveries to deleted or
 * disabled endpoints stay as they are. Works from the CLI while the server runs: the worker's sweep finds
 * the due rows. Returns how many deliveries were queued; throws when there is nothing to send it to.
 */
export async function resendEvent(tx: Tx, eventId: string, realNow: number): Promise<number> {
  const ev = await tx.get<{ seq: number; shop_id: string; mode: Mode; webhook_event: string | null; webhook_url: string | null; payment_id: string | null; off: number }>(
    `SELECT e.seq, e.shop_id, e.mode, e.webhook_event, e.webhook_url, e.payment_id, s.test_clock_offset_ms AS off
     FROM events e JOIN shops s ON s.id = e.shop_id WHERE e.id = ?`,
    eventId,
  );
  if (!ev) throw new Error(`cannot resend event "${eventId}": no such event`);
  if (!ev.webhook_event) throw new Error(`cannot resend event "${eventId}": it is a stream event that sends no webhook`);
  const now = ev.mode === 'test' ? realNow + ev.off : realNow;
  const targets: Array<{ endpoint_id: string | null; url: string }> = ev.webhook_url
    ? [{ endpoint_id: null, url: ev.webhook_url }]
    : (await matchingEndpoints(tx, ev.shop_id, ev.webhook_event)).map((e) => ({ endpoint_id: e.id, url: e.url }));
  if (targets.length === 0) {
    throw new Error(`cannot resend event "${eventId}": no enabled webhook endpoint of shop "${ev.shop_id}" takes ${ev.webhook_event}`);
  }
  const existing = await tx.all<{ id: number; endpoint_id: string | null }>('SELECT id, endpoint_id FROM webhook_deliveries WHERE event_id = ?', eventId);
  for (const t of targets) {
    const d = existing.find((x) => x.endpoint_id === t.endpoint_id);
    // A retry job still pending for a re-queued row is harmless: the worker runs a delivery once per attempt count.
    if (d) await tx.run(`UPDATE webhook_deliveries SET state = 'pending', round_start = attempts, next_attempt_at = ? WHERE id = ?`, now, d.id);
    else {
      await tx.run(
        `INSERT INTO webhook_deliveries (event_seq, event_id, event, shop_id, mode, endpoint_id, url, payment_id, next_attempt_at, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        ev.seq,
        eventId,
        ev.webhook_event,
        ev.shop_id,
        ev.mode,
        t.endpoint_id,
        t.url,
        ev.payment_id,
        now,
        now,
      );
    }
  }
  return targets.length;
}

/** Where a delivery goes: its shop, its endpoint (null for a payment's own webhook_url) and URL. */
export function deliveryTarget(q: Reader, id: number): Promise<{ shop_id: string; endpoint_id: string | null; url: string } | undefined> {
  return q.get<{ shop_id: string; endpoint_id: string | null; url: string }>('SELECT shop_id, endpoint_id, url FROM webhook_deliveries WHERE id = ?', id);
}

/**
 * Deliveries whose round has not begun and that are due on their own clock (a test shop's, or real time), at most
 * `limit`; those due at the same instant in the order they were written (the events of one change, in order), which
 * PostgreSQL keeps only when told.
 */
export async function dueFirstAttempts(q: Reader, realNow: number, limit: number): Promise<number[]> {
  const rows = await q.all<{ id: number }>(
    `SELECT d.id FROM webhook_deliveries d JOIN shops s ON s.id = d.shop_id
     WHERE d.state = 'pending' AND d.attempts = d.round_start
       AND d.next_attempt_at <= ? + (CASE WHEN d.mode = 'test' THEN s.test_clock_offset_ms ELSE 0 END)
     ORDER BY d.next_attempt_at, d.id LIMIT ?`,
    realNow,
    limit,
  );
  return rows.map((r) => r.id);
}

/**
 * Take a delivery's first attempt for this node (PostgreSQL, where every node's sweep finds the same due
 * deliveries): its due time moves `lease_ms` ahead, compared against the time read, so exactly one node wins and
 * the others' sweeps pass it by. Recording the attempt sets the due time anew; a node that dies meanwhile leaves
 * it due again once the lease is over, and another node's sweep takes it.
 */
export async function claimFirstAttempt(tx: Tx, d: Pick<DeliveryRow, 'id' | 'next_attempt_at'>, lease_ms: number): Promise<boolean> {
  if (d.next_attempt_at === null) return false;
  const r = await tx.run(
    `UPDATE webhook_deliveries SET next_attempt_at = ? WHERE id = ? AND state = 'pending' AND attempts = round_start AND next_attempt_at = ?`,
    d.next_attempt_at + lease_ms,
    d.id,
    d.next_attempt_at,
  );
  return r.changes === 1;
}

/** Give back a first attempt claimed with claimFirstAttempt and not made (shutdown): due again at once, for any node. */
export async function releaseFirstAttempt(tx: Tx, d: Pick<DeliveryRow, 'id' | 'next_attempt_at'>, lease_ms: number): Promise<void> {
  if (d.next_attempt_at === null) return;
  await tx.run(
    `UPDATE webhook_deliveries SET next_attempt_at = ? WHERE id = ? AND state = 'pending' AND attempts = round_start AND next_attempt_at = ?`,
    d.next_attempt_at,
    d.id,
    d.next_attempt_at + lease_ms,
  );
}

/** A delivery row by id. */
export function getDelivery(q: Reader, id: number): Promise<DeliveryRow | undefined> {
  return q.get<DeliveryRow>(`SELECT * FROM webhook_deliveries WHERE id = ?`, id);
}

/** The time and webhook body of the event a delivery carries, if the event still exists. */
export function deliveryEvent(q: Reader, seq: number): Promise<{ at: number; webhook_data: string | null } | undefined> {
  return q.get<{ at: number; webhook_data: string | null }>('SELECT at, webhook_data FROM events WHERE seq = ?', seq);
}

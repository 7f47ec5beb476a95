import type { Tx } from '../../platform/storage/store';
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

/** The job kind of every attempt of a delivery, the first and the retries (attempt.ts runs it). */
export const ATTEMPT_JOB = 'webhook.attempt';

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
 * Write the deliveries of a webhook-worthy event in the event's own transaction, each with the job of its first
 * attempt (due now, the event's time on its clock: the commit wakes the scheduler): one row for a payment's own
 * URL, else one per enabled endpoint of the event's shop whose filter takes it. Returns their ids.
 */
export async function enqueueDeliveries(tx: Tx, scheduler: Scheduler, row: EventRow): Promise<number[]> {
  if (!row.webhook_event) return [];
  const now = row.at;
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
    const id = Number(lastInsertRowid);
    await scheduleAttempt(tx, scheduler, { id, shop_id: row.shop_id, mode: row.mode, attempts: 0, ...t }, now);
    ids.push(id);
  }
  return ids;
}

/** Schedule the attempt a delivery waits for (its attempt count now) at `dueAt` on its clock. */
function scheduleAttempt(tx: Tx, scheduler: Pick<Scheduler, 'schedule'>, d: Pick<DeliveryRow, 'id' | 'shop_id' | 'mode' | 'attempts' | 'endpoint_id' | 'url'>, dueAt: number): Promise<number> {
  return scheduler.schedule(tx, { kind: ATTEMPT_JOB, subjectId: String(d.id), shopId: d.shop_id, mode: d.mode, dueAt, payload: { attempts: d.attempts, receiver: receiverKey(d) } });
}

/** A delivery's receiver, for its limit (attempt.ts): its endpoint, or the host of a payment's own webhook_url. */
function receiverKey(row: { endpoint_id: string | null; url: string }): string {
  if (row.endpoint_id) return `ep:${row.endpoint_id}`;
  try {
    return `url:${new URL(row.url).host}`;
  } catch {
    return `url:${row.url}`;
  }
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
  // Only the delivery as loaded: one that moved on meanwhile (another attempt, a resend) records nothing.
  const moved = await tx.run(
    `UPDATE webhook_deliveries SET attempts = ?, state = ?, next_attempt_at = ? WHERE id = ? AND state = 'pending' AND attempts = ?`,
    attempt,
    state,
    next,
    d.id,
    d.attempts,
  );
  if (moved.changes !== 1) return null;
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
  if (next !== null) await scheduleAttempt(tx, scheduler, { ...d, attempts: attempt }, next);
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
 * disabled endpoints stay as they are. Each gets the job of its first attempt, due now: from the server, its
 * commit wakes the scheduler; from the CLI, the server's next re-read of the jobs table finds it. Returns how
 * many deliveries were queued; throws when there is nothing to send it to.
 */
export async function resendEvent(tx: Tx, scheduler: Pick<Scheduler, 'schedule'>, eventId: string, realNow: number): Promise<number> {
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
  const existing = await tx.all<{ id: number; endpoint_id: string | null; attempts: number }>('SELECT id, endpoint_id, attempts FROM webhook_deliveries WHERE event_id = ?', eventId);
  for (const t of targets) {
    const d = existing.find((x) => x.endpoint_id === t.endpoint_id);
    let id = d?.id ?? 0;
    // A retry job still pending for a re-queued row is harmless: a job runs only for the attempt count it names.
    if (d) await tx.run(`UPDATE webhook_deliveries SET state = 'pending', round_start = attempts, next_attempt_at = ? WHERE id = ?`, now, d.id);
    else {
      const r = await tx.run(
        `INSERT INTO webhook_deliveries (event_seq, event_id, event, shop_id, mode, endpoint_id, url, payment_id, next_attempt_at, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
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
      id = Number(r.lastInsertRowid);
    }
    await scheduleAttempt(tx, scheduler, { id, shop_id: ev.shop_id, mode: ev.mode, attempts: d?.attempts ?? 0, ...t }, now);
  }
  return targets.length;
}

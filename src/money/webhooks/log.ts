import type { Reader } from '../../platform/storage/store';
import { isoOrNull } from '../../platform/util/time';
import type { Mode } from '../../platform/clock';

/** One line of the delivery log: a made attempt, or the attempt a pending delivery waits for. */
export interface AttemptItem {
  event_id: string;
  event: string;
  url: string;
  attempt: number;
  status: 'succeeded' | 'failed' | 'pending';
  response_code: number | null;
  error: string | null;
  latency_ms: number | null;
  attempted_at: string | null;
  next_attempt_at: string | null;
}

/** An item with the owner fields the cabinet shows. */
export interface CabinetAttemptItem extends AttemptItem {
  shop_id: string;
  mode: Mode;
  delivery_id: number;
}

/** Filters of the delivery log; all optional. */
export interface LogFilter {
  shopId?: string;
  mode?: Mode;
  eventId?: string;
  paymentId?: string;
  /** Most items returned (the newest are kept). */
  limit?: number;
}

interface Row {
  delivery_id: number;
  shop_id: string;
  mode: Mode;
  event_id: string;
  event: string;
  d_url: string;
  d_state: 'pending' | 'succeeded' | 'failed';
  d_attempts: number;
  d_next: number | null;
  attempt: number | null;
  a_url: string | null;
  attempted_at: number | null;
  latency_ms: number | null;
  response_code: number | null;
  error: string | null;
  succeeded: number | null;
  a_next: number | null;
}

/**
 * The delivery log, oldest first: every attempt made, then, for a delivery still pending, one `pending`
 * item for the attempt it waits for (its `next_attempt_at`). Times are on the shop's clock.
 */
export async function deliveryLog(q: Reader, f: LogFilter): Promise<CabinetAttemptItem[]> {
  const where: string[] = [];
  const args: unknown[] = [];
  if (f.shopId) where.push('d.shop_id = ?'), args.push(f.shopId);
  if (f.mode) where.push('d.mode = ?'), args.push(f.mode);
  if (f.eventId) where.push('d.event_id = ?'), args.push(f.eventId);
  if (f.paymentId) where.push('d.payment_id = ?'), args.push(f.paymentId);
  const limit = Math.max(1, Math.min(f.limit ?? 1000, 5000));
  const rows = await q.all<Row>(
    `SELECT d.id AS delivery_id, d.shop_id, d.mode, d.event_id, d.event, d.url AS d_url, d.state AS d_state,
            d.attempts AS d_attempts, d.next_attempt_at AS d_next,
            a.attempt, a.url AS a_url, a.attempted_at, a.latency_ms, a.response_code, a.error, a.succeeded, a.next_attempt_at AS a_next
     FROM webhook_deliveries d LEFT JOIN webhook_attempts a ON a.delivery_id = d.id
     ${where.length ? 'WHERE ' + where.join(' AND ') : ''}
     ORDER BY d.id DESC, a.attempt DESC LIMIT ?`,
    ...args,
    limit,
  );
  const items: Array<CabinetAttemptItem & { sort: number }> = [];
  const pendingAdded = new Set<number>();
  for (const r of rows) {
    const base = { shop_id: r.shop_id, mode: r.mode, delivery_id: r.delivery_id, event_id: r.event_id, event: r.event };
    if (r.attempt !== null) {
      items.push({
        ...base,
        url: r.a_url ?? r.d_url,
        attempt: r.attempt,
        status: r.succeeded ? 'succeeded' : 'failed',
        response_code: r.response_code,
        error: r.error,
        latency_ms: r.latency_ms,
        attempted_at: isoOrNull(r.attempted_at),
        next_attempt_at: isoOrNull(r.a_next),
        sort: r.attempted_at ?? 0,
      });
    }
    if (r.d_state === 'pending' && !pendingAdded.has(r.delivery_id)) {
      pendingAdded.add(r.delivery_id);
      items.push({
        ...base,
        url: r.d_url,
        attempt: r.d_attempts + 1,
        status: 'pending',
        response_code: null,
        error: null,
        latency_ms: null,
        attempted_at: null,
        next_attempt_at: isoOrNull(r.d_next),
        sort: r.d_next ?? Number.MAX_SAFE_INTEGER,
      });
    }
  }
  items.sort((a, b) => a.sort - b.sort || a.delivery_id - b.delivery_id || a.attempt - b.attempt);
  return items.map(({ sort: _sort, ...item }) => item);
}

import type { Reader, Store, Tx } from '../../platform/storage/store';
import type { Mode } from '../../platform/clock';
import type { Scheduler } from '../../platform/queue/jobs';
import type { EventSink } from '../events/events';
import { secret as newSecret, uuid, WEBHOOK_SECRET_RE } from '../../platform/util/ids';
import { seal, unseal } from '../../platform/secrets/at-rest';
import { allowListOf, literalRefusal, TEST_MODE_PERMITS } from './url-safety';
import { urlControlChar } from '../../platform/http/body';
import { isoOrNull } from '../../platform/util/time';

/** Every webhook event a shop can receive; an endpoint's filter must name only these. */
export const WEBHOOK_EVENTS = [
  'payment.succeeded',
  'payment.failed',
  'payment.cancelled',
  'payment.expired',
  'payment.refunded',
  'payout.succeeded',
  'payout.failed',
  'subscription.activated',
  'subscription.charge_succeeded',
  'subscription.charge_failed',
  'subscription.past_due',
  'subscription.cancelled',
  'token.activated',
  'token.cancelled',
] as const;

/** Signature version of an endpoint: v2 (timestamped, default) or v1 (legacy). */
export type SignatureVersion = 'v1' | 'v2';

/** A webhook endpoint row (secrets live in their own table). */
export interface Endpoint {
  id: string;
  shop_id: string;
  url: string;
  events: string;
  signature: SignatureVersion;
  disabled_at: number | null;
  disabled_reason: string | null;
  created_at: number;
}

/** Reads that also unseal secrets: a Reader that knows its database's path (the Store). */
export type SecretReader = Reader & Pick<Store, 'path'>;

/** Longest overlap a rotation may keep the old secret valid for. */
export const MAX_OVERLAP_HOURS = 24 * 30;

/**
 * An absolute http(s) URL without credentials whose IP host, if any, is loopback, public or in `allow`
 * (--webhook-allow); a host name is checked at each delivery. Throws a one-line error.
 */
export function checkEndpointUrl(url: string, allow: readonly string[] = []): string {
  const control = urlControlChar(url);
  if (control) throw new Error(`cannot use webhook URL ${JSON.stringify(url.slice(0, 64))}: it holds a control character written raw (${control}); percent-encode it`);
  if (!URL.canParse(url)) throw new Error(`cannot use webhook URL "${url}": not an absolute URL`);
  const u = new URL(url);
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new Error(`cannot use webhook URL "${url}": scheme must be https (or http for test mode)`);
  if (u.username || u.password) throw new Error(`cannot use webhook URL "${url}": credentials in the URL are not allowed`);
  if (url.length > 2000) throw new Error(`cannot use webhook URL "${url.slice(0, 64)}…": longer than 2000 characters`);
  const why = literalRefusal(u, allowListOf(allow), TEST_MODE_PERMITS);
  if (why) throw new Error(`cannot use webhook URL "${url}": webhooks never reach the ${why} (an operator opens a range with --webhook-allow)`);
  return u.toString();
}

/** Parse an event filter (comma list); empty means all events. */
export function parseEventFilter(text: string | undefined): string[] {
  const list = (text ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = list.find((e) => !(WEBHOOK_EVENTS as readonly string[]).includes(e));
  if (unknown !== undefined) throw new Error(`cannot use event filter "${unknown}": not a webhook event; known: ${WEBHOOK_EVENTS.join(', ')}`);
  return [...new Set(list)];
}

/** Its first secret is returned once: `secret` (serve --webhook-secret) or a new one. `allow`: --webhook-allow. */
export async function addEndpoint(
  store: Store,
  input: { shopId: string; url: string; events?: string; signature?: string; allow?: readonly string[]; secret?: string },
  now: number,
): Promise<{ endpoint: Endpoint; secret: string }> {
  if (input.secret !== undefined && !WEBHOOK_SECRET_RE.test(input.secret)) {
    throw new Error('cannot add webhook endpoint: a webhook secret is whs_ followed by 16 to 200 letters, digits, _ or -');
  }
  const shop = await store.get('SELECT id FROM shops WHERE id = ?', input.shopId);
  if (!shop) throw new Error(`cannot add webhook endpoint: shop "${input.shopId}" not found`);
  const signature = input.signature ?? 'v2';
  if (signature !== 'v1' && signature !== 'v2') throw new Error(`cannot add webhook endpoint: --signature must be v1 or v2, got "${signature}"`);
  const endpoint: Endpoint = {
    id: uuid(),
    shop_id: input.shopId,
    url: checkEndpointUrl(input.url, input.allow),
    events: parseEventFilter(input.events).join(','),
    signature,
    disabled_at: null,
    disabled_reason: null,
    created_at: now,
  };
  const secret = input.secret ?? newSecret('whs_');
  await store.tx(async (tx) => {
    await tx.run(`INSERT INTO webhook_endpoints (id, shop_id, url, events, signature, created_at) VALUES (?, ?, ?, ?, ?, ?)`, endpoint.id, endpoint.shop_id, endpoint.url, endpoint.events, endpoint.signature, now);
    await tx.run('INSERT INTO webhook_secrets (endpoint_id, secret, created_at) VALUES (?, ?, ?)', endpoint.id, seal(store.path, secret, `webhook_secrets:${endpoint.id}`), now);
  });
  return { endpoint, secret };
}

/** Oldest first, disabled ones included. */
export function listEndpoints(q: Reader, shopId: string): Promise<Endpoint[]> {
  return q.all<Endpoint>('SELECT * FROM webhook_endpoints WHERE shop_id = ? ORDER BY created_at, id', shopId);
}

export function getEndpoint(q: Reader, id: string): Promise<Endpoint | undefined> {
  return q.get<Endpoint>('SELECT * FROM webhook_endpoints WHERE id = ?', id);
}

/** Its secrets go with it; its pending deliveries end as failed. */
export async function deleteEndpoint(store: Store, id: string): Promise<void> {
  await store.tx(async (tx) => {
    if (!(await getEndpoint(tx, id))) throw new Error(`cannot delete webhook endpoint "${id}": not found`);
    await tx.run('DELETE FROM webhook_endpoints WHERE id = ?', id);
    await tx.run(`UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL WHERE endpoint_id = ? AND state = 'pending'`, id);
  });
}

/** Without overlap every older secret stops at once; else those valid now stay valid `overlap_h` hours more (at most). */
export async function rotateSecret(store: Store, id: string, overlap_h: number, now: number): Promise<string> {
  if (!(overlap_h >= 0 && overlap_h <= MAX_OVERLAP_HOURS)) {
    throw new Error(`cannot rotate webhook secret: --overlap must be 0..${MAX_OVERLAP_HOURS} hours, got "${overlap_h}"`);
  }
  const secret = newSecret('whs_');
  await store.tx(async (tx) => {
    if (!(await getEndpoint(tx, id))) throw new Error(`cannot rotate webhook secret of endpoint "${id}": not found`);
    const until = now + Math.round(overlap_h * 3_600_000);
    if (overlap_h === 0) {
      await tx.run('DELETE FROM webhook_secrets WHERE endpoint_id = ?', id);
    } else {
      await tx.run('DELETE FROM webhook_secrets WHERE endpoint_id = ? AND expires_at IS NOT NULL AND expires_at <= ?', id, now);
      // The earlier of each secret's expiry (none: never) and `until`.
      await tx.run('UPDATE webhook_secrets SET expires_at = CASE WHEN expires_at < ? THEN expires_at ELSE ? END WHERE endpoint_id = ?', until, until, id);
    }
    await tx.run('INSERT INTO webhook_secrets (endpoint_id, secret, created_at) VALUES (?, ?, ?)', id, seal(store.path, secret, `webhook_secrets:${id}`), now);
  });
  return secret;
}

/** The secrets of an endpoint valid at real time `now`, newest first (unsealed with the master key of `store`'s database). */
export async function validSecrets(store: SecretReader, endpointId: string, now: number): Promise<string[]> {
  const rows = await store.all<{ secret: string }>(
    'SELECT secret FROM webhook_secrets WHERE endpoint_id = ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY id DESC',
    endpointId,
    now,
  );
  return rows.map((r) => unseal(store.path, r.secret, `webhook_secrets:${endpointId}`));
}

/** A payment's own webhook_url is signed as the shop's oldest enabled endpoint, else v2 with the shop's fallback secret. */
export async function paymentUrlSigning(store: SecretReader, shopId: string, now: number): Promise<{ signature: SignatureVersion; secrets: string[] }> {
  const oldest = await store.get<{ id: string; signature: SignatureVersion }>(
    'SELECT id, signature FROM webhook_endpoints WHERE shop_id = ? AND disabled_at IS NULL ORDER BY created_at, id LIMIT 1',
    shopId,
  );
  if (oldest) {
    const secrets = await validSecrets(store, oldest.id, now);
    if (secrets.length > 0) return { signature: oldest.signature, secrets };
  }
  const shop = await store.get<{ webhook_secret: string }>('SELECT webhook_secret FROM shops WHERE id = ?', shopId);
  return { signature: 'v2', secrets: shop ? [unseal(store.path, shop.webhook_secret, `shops.webhook_secret:${shopId}`)] : [] };
}

/** The job kind of every attempt of a delivery, the first and the retries (delivery.ts runs it). */
export const ATTEMPT_JOB = 'webhook.attempt';

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

const ENABLED_ENDPOINTS = 'SELECT id, url, events FROM webhook_endpoints WHERE shop_id = ? AND disabled_at IS NULL ORDER BY created_at, id';
const INSERT_DELIVERY = `INSERT INTO webhook_deliveries (event_seq, event_id, event, shop_id, mode, endpoint_id, url, payment_id, next_attempt_at, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`;

/** The outbox: in the event's transaction, its deliveries, each with its first attempt's job, due at the event's time. */
export function outboxSink(scheduler: Pick<Scheduler, 'schedule'>): EventSink {
  return async (tx, row) => {
    // Sinks run only for events that send a webhook.
    const event = row.webhook_event!;
    for (const t of await targetsOf(tx, row.shop_id, row.webhook_url, event)) {
      const { lastInsertRowid } = await tx.run(INSERT_DELIVERY, row.seq, row.id, event, row.shop_id, row.mode, t.id, t.url, row.payment_id, row.at, row.at);
      await scheduleAttempt(tx, scheduler, { id: Number(lastInsertRowid), shop_id: row.shop_id, mode: row.mode, attempts: 0, endpoint_id: t.id, url: t.url }, row.at);
    }
  };
}

/** Where an event goes now: a payment's own URL (id null), else each enabled endpoint whose filter (empty: all) takes it. */
async function targetsOf(tx: Tx, shopId: string, webhookUrl: string | null, event: string): Promise<Array<{ id: string | null; url: string }>> {
  if (webhookUrl) return [{ id: null, url: webhookUrl }];
  const takers: Array<{ id: string; url: string }> = [];
  for (const t of await tx.all<{ id: string; url: string; events: string }>(ENABLED_ENDPOINTS, shopId)) {
    if (t.events === '' || t.events.split(',').includes(event)) takers.push(t);
  }
  return takers;
}

/** The attempt a delivery waits for. Its receiver, for the limits in flight (delivery.ts): the endpoint, else the URL's host. */
export function scheduleAttempt(tx: Tx, scheduler: Pick<Scheduler, 'schedule'>, d: Pick<DeliveryRow, 'id' | 'shop_id' | 'mode' | 'attempts' | 'endpoint_id' | 'url'>, dueAt: number): Promise<number> {
  const receiver = d.endpoint_id ? `ep:${d.endpoint_id}` : `url:${URL.canParse(d.url) ? new URL(d.url).host : d.url}`;
  return scheduler.schedule(tx, { kind: ATTEMPT_JOB, subjectId: String(d.id), shopId: d.shop_id, mode: d.mode, dueAt, payload: { attempts: d.attempts, receiver } });
}

/**
 * Send an event again, with a fresh retry schedule (attempt numbers continue), to whoever takes it now, an endpoint
 * added since included (one re-added after a 410 gets what it missed); deliveries to deleted or disabled endpoints
 * stay as they are. Returns how many deliveries were queued; throws when there is nothing to send it to.
 */
export async function resendEvent(tx: Tx, scheduler: Pick<Scheduler, 'schedule'>, eventId: string, realNow: number): Promise<number> {
  const ev = await tx.get<{ seq: number; shop_id: string; mode: Mode; webhook_event: string | null; webhook_url: string | null; payment_id: string | null; off: number }>(
    `SELECT e.seq, e.shop_id, e.mode, e.webhook_event, e.webhook_url, e.payment_id, s.test_clock_offset_ms AS off
     FROM events e JOIN shops s ON s.id = e.shop_id WHERE e.id = ?`,
    eventId,
  );
  if (!ev) throw new Error(`cannot resend event "${eventId}": no such event`);
  const event = ev.webhook_event;
  if (!event) throw new Error(`cannot resend event "${eventId}": it is a stream event that sends no webhook`);
  const now = ev.mode === 'test' ? realNow + ev.off : realNow;
  const targets = await targetsOf(tx, ev.shop_id, ev.webhook_url, event);
  if (targets.length === 0) {
    throw new Error(`cannot resend event "${eventId}": no enabled webhook endpoint of shop "${ev.shop_id}" takes ${event}`);
  }
  const existing = await tx.all<{ id: number; endpoint_id: string | null; attempts: number }>('SELECT id, endpoint_id, attempts FROM webhook_deliveries WHERE event_id = ?', eventId);
  for (const t of targets) {
    const d = existing.find((x) => x.endpoint_id === t.id);
    let id = d?.id ?? 0;
    // A retry job still pending for a re-queued row is harmless: a job runs only for the attempt count it names.
    if (d) await tx.run(`UPDATE webhook_deliveries SET state = 'pending', round_start = attempts, next_attempt_at = ? WHERE id = ?`, now, d.id);
    else id = Number((await tx.run(INSERT_DELIVERY, ev.seq, eventId, event, ev.shop_id, ev.mode, t.id, t.url, ev.payment_id, now, now)).lastInsertRowid);
    await scheduleAttempt(tx, scheduler, { id, shop_id: ev.shop_id, mode: ev.mode, attempts: d?.attempts ?? 0, endpoint_id: t.id, url: t.url }, now);
  }
  return targets.length;
}

/** One line of the delivery log: a made attempt, or the attempt a pending delivery waits for, with its owner. */
export interface AttemptItem {
  shop_id: string;
  mode: Mode;
  delivery_id: number;
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

/** Oldest first: every attempt made, and one `pending` item per delivery still waiting (on the shop's clock); `limit` keeps the newest. */
export async function deliveryLog(q: Reader, f: { shopId?: string; mode?: Mode; eventId?: string; paymentId?: string; limit?: number }): Promise<AttemptItem[]> {
  const given = Object.entries({ 'd.shop_id': f.shopId, 'd.mode': f.mode, 'd.event_id': f.eventId, 'd.payment_id': f.paymentId }).filter(([, v]) => v);
  const where = given.map(([column]) => `${column} = ?`);
  const limit = Math.max(1, Math.min(f.limit ?? 1000, 5000));
  const rows = await q.all<Row>(
    `SELECT d.id AS delivery_id, d.shop_id, d.mode, d.event_id, d.event, d.url AS d_url, d.state AS d_state,
            d.attempts AS d_attempts, d.next_attempt_at AS d_next,
            a.attempt, a.url AS a_url, a.attempted_at, a.latency_ms, a.response_code, a.error, a.succeeded, a.next_attempt_at AS a_next
     FROM webhook_deliveries d LEFT JOIN webhook_attempts a ON a.delivery_id = d.id
     ${where.length ? 'WHERE ' + where.join(' AND ') : ''}
     ORDER BY d.id DESC, a.attempt DESC LIMIT ?`,
    ...given.map(([, v]) => v),
    limit,
  );
  const items: Array<AttemptItem & { sort: number }> = [];
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

import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { once } from 'node:events';
import { isIP } from 'node:net';
import type { Core } from '../core/core';
import type { Module } from '../core/module';
import type { AsyncJobKind, Job } from '../../platform/queue/jobs';
import type { Tx } from '../../platform/storage/store';
import { hmacHex } from '../../platform/util/ids';
import { unseal } from '../../platform/secrets/at-rest';
import { webhookBody } from '../events/events';
import { ATTEMPT_JOB, outboxSink, paymentUrlSigning, scheduleAttempt, type DeliveryRow, type SignatureVersion } from './store';
import { fixedLookup, UrlPolicy, type Resolved } from './url-safety';

/** Delays before retry 1..8, counted from the failure, on the shop's clock (test mode) or real time. */
export const RETRY_DELAYS_MS: readonly number[] = [10_000, 60_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000, 6 * 3_600_000, 24 * 3_600_000, 48 * 3_600_000];

/** Attempts in flight in this process, in all, per shop and per receiver: a shop whose receivers hang holds only its share. */
export const WORKER_LIMITS = { global: 64, perShop: 16, perReceiver: 4 };

/** Bytes of a response body read (then dropped) before the connection is closed. */
const MAX_RESPONSE_BYTES = 64 * 1024;

/** A delivery with its event, shop clock and endpoint: one row per secret valid now, newest first (null: none). */
type Loaded = DeliveryRow & {
  event_at: number | null;
  event_data: string | null;
  clock_offset: number | null;
  ep_signature: SignatureVersion | null;
  ep_disabled_at: number | null;
  ep_secret: string | null;
};

const LOAD_SQL = `SELECT d.*, e.at AS event_at, e.webhook_data AS event_data, s.test_clock_offset_ms AS clock_offset,
    ep.signature AS ep_signature, ep.disabled_at AS ep_disabled_at, ws.secret AS ep_secret
  FROM webhook_deliveries d
  LEFT JOIN events e ON e.seq = d.event_seq
  LEFT JOIN shops s ON s.id = d.shop_id
  LEFT JOIN webhook_endpoints ep ON ep.id = d.endpoint_id
  LEFT JOIN webhook_secrets ws ON ws.endpoint_id = d.endpoint_id AND (ws.expires_at IS NULL OR ws.expires_at > ?)
  WHERE d.id = ?
  ORDER BY ws.id DESC`;

/** Hears every recorded attempt: its receiver's answer, whether it delivered, and the delivery's state after it (metrics). */
export type AttemptObserver = (responseCode: number | null, succeeded: boolean, deliveryState: string) => void;

interface AttemptResult {
  /** As loaded before the attempt: nothing is recorded if it changed meanwhile. */
  delivery: DeliveryRow;
  /** On the shop's clock. */
  started_at: number;
  latency_ms: number;
  response_code: number | null;
  error: string | null;
}

/** The outbox sink and the attempt job, whose attempts in flight are cut at shutdown. Builds only. */
export function webhooksModule(core: Core, observe?: AttemptObserver): Module & { readonly attempts: WebhookAttempts } {
  const attempts = new WebhookAttempts(core, observe);
  return {
    name: 'webhooks',
    // A failed run means shutdown or a bug, never a receiver's answer (that is a recorded attempt).
    jobs: [{ kind: ATTEMPT_JOB, async: attempts, opts: { maxAttempts: 20 } }],
    sinks: [outboxSink(core.scheduler)],
    stop: () => attempts.stop(),
    attempts,
  };
}

/**
 * Each attempt of a delivery is a job whose payload names the attempt count it was scheduled for (a job whose
 * delivery moved on does nothing) and the receiver; its POST runs outside any transaction, its outcome is recorded
 * in the job's. A job over a limit of WORKER_LIMITS is not claimed and stays due in the table.
 */
export class WebhookAttempts implements AsyncJobKind<AttemptResult | null> {
  private active = 0;
  private readonly perShop = new Map<string, number>();
  private readonly perReceiver = new Map<string, number>();
  private readonly abort = new AbortController();
  private readonly policy: UrlPolicy;
  private stopped = false;
  /** Room for DNS and the receiver's deadline. */
  readonly deadline_ms: number;

  constructor(
    private readonly core: Pick<Core, 'config' | 'log' | 'store' | 'clocks' | 'scheduler'>,
    private readonly observe?: AttemptObserver,
  ) {
    this.policy = new UrlPolicy(core.config.webhookAllow);
    this.deadline_ms = core.config.webhookTimeoutMs + 15_000;
  }

  get inFlight(): number {
    return this.active;
  }

  /** A slot for the job's receiver and shop, or null at a limit. */
  admit(job: Pick<Job, 'shop_id' | 'subject_id' | 'payload'>): (() => void) | null {
    const shop = job.shop_id ?? '';
    const receiver = typeof job.payload.receiver === 'string' ? job.payload.receiver : `delivery:${job.subject_id}`;
    const { perShop, perReceiver } = this;
    const ofShop = perShop.get(shop) ?? 0;
    const ofReceiver = perReceiver.get(receiver) ?? 0;
    if (this.stopped || this.active >= WORKER_LIMITS.global) return null;
    if (ofShop >= WORKER_LIMITS.perShop || ofReceiver >= WORKER_LIMITS.perReceiver) return null;
    this.active++;
    perShop.set(shop, ofShop + 1);
    perReceiver.set(receiver, ofReceiver + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.active--;
      const s = perShop.get(shop)! - 1;
      const r = perReceiver.get(receiver)! - 1;
      if (s > 0) perShop.set(shop, s);
      else perShop.delete(shop);
      if (r > 0) perReceiver.set(receiver, r);
      else perReceiver.delete(receiver);
    };
  }

  /** Null when the delivery moved on or has nothing to send (then it ends). Throws only on shutdown, never on a receiver's failure. */
  async run(job: Job): Promise<AttemptResult | null> {
    if (this.stopped) throw new Error('cannot attempt a webhook: shutting down');
    const { clocks, store, config } = this.core;
    const rows = await store.all<Loaded>(LOAD_SQL, clocks.real(), Number(job.subject_id));
    if (rows.length === 0 || rows[0].state !== 'pending' || rows[0].attempts !== job.payload.attempts) return null;
    const { event_at, event_data, clock_offset, ep_signature, ep_disabled_at, ep_secret: _, ...d } = rows[0];
    let signature = ep_signature;
    let secrets: string[] = [];
    if (d.endpoint_id === null) ({ signature, secrets } = await paymentUrlSigning(store, d.shop_id, clocks.real()));
    else if (ep_disabled_at === null) {
      for (const r of rows) if (r.ep_secret !== null) secrets.push(unseal(store.path, r.ep_secret, `webhook_secrets:${d.endpoint_id}`));
    }
    if (event_at === null || signature === null || secrets.length === 0) {
      await store.tx((tx) => tx.run(`UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL WHERE id = ? AND state = 'pending'`, d.id));
      this.core.log.warn('webhook delivery abandoned', { delivery_id: d.id, event_id: d.event_id, reason: event_at !== null ? 'endpoint disabled or deleted' : 'event gone' });
      return null;
    }
    const body = webhookBody(d.event_id, d.event, new Date(event_at).toISOString(), event_data ?? 'null');
    const url = new URL(d.url);
    const started = clocks.real();
    // The shop's clock as Clocks.now reads it outside a transaction: real time, plus the test clock's offset.
    const started_at = d.mode === 'test' ? started + (clock_offset ?? 0) : started;
    let outcome: PostOutcome;
    try {
      // Connects only to the address it checked (no second lookup).
      const resolved = await this.policy.check(url, d.mode);
      const headers = webhookHeaders(d.event_id, signature, secrets, Math.floor(started / 1000), body);
      outcome = await postWebhook({ url, body, headers, timeout_ms: config.webhookTimeoutMs, resolved, signal: this.abort.signal });
    } catch (err) {
      outcome = { response_code: null, error: (err as Error).message.slice(0, 300), latency_ms: Math.max(0, clocks.real() - started), aborted_by_shutdown: false };
    }
    if (outcome.aborted_by_shutdown) throw new Error('cannot finish a webhook attempt: shutting down');
    return { delivery: d, started_at, response_code: outcome.response_code, error: outcome.error, latency_ms: outcome.latency_ms };
  }

  /** Any 2xx succeeds; 410 fails the delivery and disables its endpoint; else the next retry, until the eighth failed. */
  async complete(tx: Tx, _job: Job, r: AttemptResult | null): Promise<void> {
    if (!r) return;
    const d = r.delivery;
    const attempt = d.attempts + 1;
    // During a test-clock advance the clock reads the retry's due time (pinned), earlier than the start read
    // after the advance: the attempt counts at its due time, so one advance walks the whole schedule.
    const attempted_at = Math.min(r.started_at, await this.core.clocks.now(tx, d.shop_id, d.mode));
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
    if (moved.changes !== 1) return;
    await tx.run(
      `INSERT INTO webhook_attempts (delivery_id, shop_id, mode, attempt, url, attempted_at, latency_ms, response_code, error, succeeded, next_attempt_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      d.id,
      d.shop_id,
      d.mode,
      attempt,
      d.url,
      attempted_at,
      r.latency_ms,
      code,
      r.error,
      ok ? 1 : 0,
      next,
    );
    if (next !== null) await scheduleAttempt(tx, this.core.scheduler, { ...d, attempts: attempt }, next);
    const disable = 'UPDATE webhook_endpoints SET disabled_at = ?, disabled_reason = ? WHERE id = ? AND disabled_at IS NULL';
    const disabled = gone && d.endpoint_id !== null && (await tx.run(disable, this.core.clocks.real(), `receiver answered 410 Gone to event ${d.event_id}`, d.endpoint_id)).changes > 0;
    tx.afterCommit(() => {
      this.observe?.(code, ok, state);
      const fields = {
        delivery_id: d.id,
        event_id: d.event_id,
        event: d.event,
        attempt,
        response_code: code,
        error: r.error,
        latency_ms: r.latency_ms,
        state,
        next_attempt_at: next === null ? null : new Date(next).toISOString(),
      };
      if (ok) this.core.log.info('webhook delivered', fields);
      else this.core.log.warn('webhook attempt failed', fields);
      if (disabled) this.core.log.warn('webhook endpoint disabled: receiver answered 410 Gone', { endpoint_id: d.endpoint_id, event_id: d.event_id });
    });
  }

  /** Cut attempts in flight (their jobs fail and run again later) and admit no more. */
  stop(): void {
    this.stopped = true;
    this.abort.abort();
  }
}

/**
 * The headers of a delivery and of `kopek listen` (without Content-Length). X-PSP-Signature, v2: `t=<unix>,v1=<hex>,v2=<hex>`,
 * both HMAC-SHA256(secret, `<t>.<body>`), a pair per valid secret (newest first), so Stripe-style verifiers accept it;
 * v1 (legacy): `sha256=<hex of HMAC(body)>` per valid secret. The key is the whole secret, prefix included.
 */
export function webhookHeaders(eventId: string, version: SignatureVersion, secrets: readonly string[], t_s: number, rawBody: string): Record<string, string> {
  if (secrets.length === 0) throw new Error('cannot sign a webhook: no valid secret');
  if (!Number.isSafeInteger(t_s) || t_s < 0) throw new Error(`cannot sign a webhook: bad timestamp ${t_s}`);
  const parts: string[] = version === 'v1' ? [] : [`t=${t_s}`];
  for (const s of secrets) {
    if (version === 'v1') parts.push(`sha256=${hmacHex(s, rawBody)}`);
    else {
      const h = hmacHex(s, `${t_s}.${rawBody}`);
      parts.push(`v1=${h}`, `v2=${h}`);
    }
  }
  return {
    'Content-Type': 'application/json',
    'User-Agent': 'psp-webhook/1.0',
    'X-PSP-Event-Id': eventId,
    'X-PSP-Signature': parts.join(','),
    'X-PSP-Timestamp': String(t_s),
  };
}

export interface PostSpec {
  url: URL;
  headers: Record<string, string>;
  body: string;
  timeout_ms: number;
  /** Connect to this checked address instead of resolving the host again (live mode). */
  resolved?: Resolved;
  /** Aborts on shutdown. */
  signal?: AbortSignal;
}

export interface PostOutcome {
  response_code: number | null;
  error: string | null;
  latency_ms: number;
  /** True when the attempt was cut by shutdown: it is not recorded, and runs again after restart. */
  aborted_by_shutdown: boolean;
}

/** Listens to a request's or response's late errors, which the awaits below have already accounted for. */
function ignore(): void {}

/**
 * POST once. An answer (a 3xx too: redirects are not followed) counts once its body is read, up to
 * MAX_RESPONSE_BYTES, within the deadline; no answer, or a body cut by the deadline or shutdown, is an error.
 */
export async function postWebhook(spec: PostSpec): Promise<PostOutcome> {
  const started = performance.now();
  const deadline = AbortSignal.timeout(spec.timeout_ms);
  const signal = spec.signal ? AbortSignal.any([deadline, spec.signal]) : deadline;
  const buf = Buffer.from(spec.body, 'utf8');
  const options: Record<string, unknown> = { method: 'POST', headers: { ...spec.headers, 'Content-Length': String(buf.length) }, signal, agent: false };
  // An IP address is connected to as it is; a host name only at the address checked.
  if (spec.resolved && !isIP(spec.url.hostname.replace(/^\[|\]$/g, ''))) options.lookup = fixedLookup(spec.resolved);
  const req = (spec.url.protocol === 'https:' ? httpsRequest : httpRequest)(spec.url, options);
  req.on('error', ignore);
  req.end(buf);
  let response_code: number | null = null;
  let latency_ms = 0;
  try {
    const [res] = (await once(req, 'response')) as [IncomingMessage];
    response_code = res.statusCode ?? 0;
    latency_ms = Math.round(performance.now() - started);
    res.on('error', ignore);
    let read = 0;
    for await (const chunk of res) {
      read += (chunk as Buffer).length;
      if (read > MAX_RESPONSE_BYTES) break;
    }
  } catch (err) {
    // A body cut short by a reset still came with its answer.
    if (response_code === null || signal.aborted) {
      const e = err as NodeJS.ErrnoException;
      const byShutdown = !!spec.signal?.aborted && !deadline.aborted;
      const error = deadline.aborted ? `timeout: no answer within ${spec.timeout_ms} ms` : byShutdown ? 'shutdown' : `${e.code ?? 'error'}: ${e.message}`.slice(0, 300);
      return { response_code: null, error, latency_ms: Math.round(performance.now() - started), aborted_by_shutdown: byShutdown };
    }
  }
  return { response_code, error: null, latency_ms, aborted_by_shutdown: false };
}

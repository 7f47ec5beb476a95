import type { Core } from '../core/core';
import type { AsyncJobKind, Job } from '../../platform/queue/jobs';
import type { Tx } from '../../platform/storage/store';
import { postWebhook, type PostOutcome } from './deliver';
import { abandonDelivery, recordAttempt, type AttemptResult, type DeliveryRow, type Recorded } from './outbox';
import { signatureHeader, webhookBody, webhookHeaders } from './sign';
import { paymentUrlSigning, validSecrets, type SignatureVersion } from './store';
import { UrlPolicy } from './url-safety';

/** A delivery with its event's time and body, its endpoint's signature and state, and its shop's clock offset. */
type Loaded = DeliveryRow & {
  event_at: number | null;
  event_data: string | null;
  clock_offset: number | null;
  ep_signature: SignatureVersion | null;
  ep_disabled_at: number | null;
};

const LOAD_SQL = `SELECT d.*, e.at AS event_at, e.webhook_data AS event_data, s.test_clock_offset_ms AS clock_offset,
    ep.signature AS ep_signature, ep.disabled_at AS ep_disabled_at
  FROM webhook_deliveries d
  LEFT JOIN events e ON e.seq = d.event_seq
  LEFT JOIN shops s ON s.id = d.shop_id
  LEFT JOIN webhook_endpoints ep ON ep.id = d.endpoint_id
  WHERE d.id = ?`;

/**
 * Attempts in flight in this process: at most `global` in all, `perShop` for one shop, `perReceiver` for one
 * receiver; so a shop whose receivers hang holds at most its share, and every other shop keeps the rest.
 */
export const WORKER_LIMITS = { global: 64, perShop: 16, perReceiver: 4 };

/** Hears every recorded attempt: its receiver's answer, whether it delivered, and the delivery's state after it (metrics). */
export type AttemptObserver = (responseCode: number | null, succeeded: boolean, deliveryState: string) => void;

/** What an attempt uses of the core: the webhook settings, the log, the store, the clocks and the scheduler (the next attempt). */
export type AttemptCore = Pick<Core, 'config' | 'log' | 'store' | 'clocks' | 'scheduler'>;

/**
 * The one job kind of webhook delivery (`webhook.attempt`, outbox.ts schedules it): each attempt of a delivery,
 * the first as its event commits (or a resend), the next after a failure, is a job of the jobs table whose
 * payload names the attempt count it was scheduled for (a job whose delivery moved on is stale, and does
 * nothing) and the receiver. The HTTP call happens outside any transaction and its outcome is recorded in the
 * job's own. `admit` keeps the limits of WORKER_LIMITS: a job whose receiver, shop or the process is at its
 * limit is not claimed and stays due in the table, so a slow or hanging receiver holds only its own slots.
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
    private readonly core: AttemptCore,
    private readonly observe?: AttemptObserver,
  ) {
    this.policy = new UrlPolicy(core.config.webhookAllow);
    this.deadline_ms = core.config.webhookTimeoutMs + 15_000;
  }

  /** Attempts in flight now, for metrics. */
  get inFlight(): number {
    return this.active;
  }

  /** Take a slot for the job's receiver and shop, or null when one of the limits is reached. */
  admit(job: Pick<Job, 'shop_id' | 'subject_id' | 'payload'>): (() => void) | null {
    const shop = job.shop_id ?? '';
    const receiver = typeof job.payload.receiver === 'string' ? job.payload.receiver : `delivery:${job.subject_id}`;
    if (this.stopped || this.active >= WORKER_LIMITS.global) return null;
    if ((this.perShop.get(shop) ?? 0) >= WORKER_LIMITS.perShop || (this.perReceiver.get(receiver) ?? 0) >= WORKER_LIMITS.perReceiver) return null;
    this.active++;
    add(this.perShop, shop, 1);
    add(this.perReceiver, receiver, 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.active--;
      add(this.perShop, shop, -1);
      add(this.perReceiver, receiver, -1);
    };
  }

  /**
   * The attempt the job was scheduled for, or null when its delivery moved on or there is nothing to send (then
   * the delivery ends). One read finds the delivery, its event, its endpoint and its shop's clock. Never rejects
   * on a receiver's failure; throws only on shutdown.
   */
  async run(job: Job): Promise<AttemptResult | null> {
    if (this.stopped) throw new Error('cannot attempt a webhook: shutting down');
    const { clocks, store, config } = this.core;
    const row = await store.get<Loaded>(LOAD_SQL, Number(job.subject_id));
    if (!row || row.state !== 'pending' || row.attempts !== job.payload.attempts) return null;
    const { event_at, event_data, clock_offset, ep_signature, ep_disabled_at, ...d } = row;
    const signing =
      d.endpoint_id === null
        ? await paymentUrlSigning(store, d.shop_id, clocks.real())
        : ep_signature !== null && ep_disabled_at === null
          ? { signature: ep_signature, secrets: await validSecrets(store, d.endpoint_id, clocks.real()) }
          : null;
    if (event_at === null || !signing || signing.secrets.length === 0) {
      await store.tx((tx) => abandonDelivery(tx, d));
      this.core.log.warn('webhook delivery abandoned', { delivery_id: d.id, event_id: d.event_id, reason: event_at !== null ? 'endpoint disabled or deleted' : 'event gone' });
      return null;
    }
    const body = webhookBody(d.event_id, d.event, new Date(event_at).toISOString(), event_data ?? 'null');
    const url = new URL(d.url);
    const started = clocks.real();
    // The shop's clock as Clocks.now reads it outside a transaction: real time, plus the test clock's offset.
    const started_at = d.mode === 'test' ? started + (clock_offset ?? 0) : started;
    const t_s = Math.floor(started / 1000);
    let outcome: PostOutcome;
    try {
      // Either mode connects only to the address it checked (no second lookup): test mode may reach http and
      // loopback, and otherwise follows the live rule.
      const resolved = await this.policy.check(url, d.mode);
      outcome = await postWebhook({
        url,
        body,
        headers: webhookHeaders(d.event_id, signatureHeader(signing.signature, signing.secrets, t_s, body), t_s),
        timeout_ms: config.webhookTimeoutMs,
        resolved,
        signal: this.abort.signal,
      });
    } catch (err) {
      outcome = { response_code: null, error: (err as Error).message.slice(0, 300), latency_ms: Math.max(0, clocks.real() - started), aborted_by_shutdown: false };
    }
    if (outcome.aborted_by_shutdown) throw new Error('cannot finish a webhook attempt: shutting down');
    return { delivery: d, url: d.url, started_at, real_now: clocks.real(), response_code: outcome.response_code, error: outcome.error, latency_ms: outcome.latency_ms };
  }

  /** Record the attempt (and schedule the next one) in the job's transaction; log it once committed. */
  async complete(tx: Tx, _job: Job, r: AttemptResult | null): Promise<void> {
    if (!r) return;
    const rec = await recordAttempt(tx, this.core.scheduler, this.core.clocks, r);
    tx.afterCommit(() => this.report(r, rec));
  }

  /** Cut attempts in flight (their jobs fail and run again later) and admit no more. */
  stop(): void {
    this.stopped = true;
    this.abort.abort();
  }

  /** Log what recording decided. */
  private report(r: AttemptResult, rec: Recorded | null): void {
    if (!rec) return;
    this.observe?.(r.response_code, rec.state === 'succeeded', rec.state);
    const d = r.delivery;
    const fields = {
      delivery_id: d.id,
      event_id: d.event_id,
      event: d.event,
      attempt: rec.attempt,
      response_code: r.response_code,
      error: r.error,
      latency_ms: r.latency_ms,
      state: rec.state,
      next_attempt_at: rec.next_attempt_at === null ? null : new Date(rec.next_attempt_at).toISOString(),
    };
    if (rec.state === 'succeeded') this.core.log.info('webhook delivered', fields);
    else this.core.log.warn('webhook attempt failed', fields);
    if (rec.disabled_endpoint) this.core.log.warn('webhook endpoint disabled: receiver answered 410 Gone', { endpoint_id: d.endpoint_id, event_id: d.event_id });
  }
}

function add(m: Map<string, number>, k: string, by: number): void {
  const n = (m.get(k) ?? 0) + by;
  if (n <= 0) m.delete(k);
  else m.set(k, n);
}

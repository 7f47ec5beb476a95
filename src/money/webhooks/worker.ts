import type { Core } from '../core/core';
import type { Job } from '../../platform/queue/jobs';
import { iso } from '../../platform/util/time';
import { postWebhook, type PostOutcome } from './deliver';
import { abandonDelivery, claimFirstAttempt, deliveryEvent, releaseFirstAttempt, deliveryTarget, dueFirstAttempts, getDelivery, recordAttempt, type AttemptResult, type DeliveryRow, type Recorded } from './outbox';
import { signatureHeader, webhookBody, webhookHeaders } from './sign';
import { getEndpoint, paymentUrlSigning, validSecrets, type SignatureVersion } from './store';
import { UrlPolicy } from './url-safety';
import { Gate } from './gate';

/** Limits of the worker: attempts in flight overall and per receiver, ids waiting in memory, sweep period. */
/**
 * Attempts in flight: at most `global` in all, `perShop` for one shop, `perReceiver` for one receiver; so a
 * shop whose receivers hang holds at most its share, and every other shop keeps the rest.
 */
export const WORKER_LIMITS = { global: 64, perShop: 16, perReceiver: 4, queued: 10_000, sweep_ms: 5_000 };
/** Most due deliveries one sweep queues; the next sweep takes the rest. */
const SWEEP_BATCH = 1000;

/** Hears every recorded attempt: its receiver's answer, whether it delivered, and the delivery's state after it (metrics). */
export type AttemptObserver = (responseCode: number | null, succeeded: boolean, deliveryState: string) => void;

/** What the worker uses of the core: the webhook settings, the log, the store, the clocks and the scheduler (retries). */
export type WorkerCore = Pick<Core, 'config' | 'log' | 'store' | 'clocks' | 'scheduler'>;

/**
 * Delivers the outbox. The table is the truth. The first attempt of a round (a new delivery, or one
 * re-queued by `resend`) is made by this worker: kicked after commit, and found by a periodic sweep after a
 * restart or a resend from the CLI. Retries are scheduler jobs whose run calls `attemptFor`. Either way the
 * HTTP call happens outside any transaction and its outcome is recorded in one; a per-receiver limit keeps a
 * slow or dead receiver from holding more than a few of the global slots.
 */
export class DeliveryWorker {
  /** First attempts waiting, per shop and receiver (key `shop receiver`), served round-robin. */
  private readonly queues = new Map<string, { shop: string; receiver: string; ids: number[] }>();
  private readonly waiting = new Set<number>();
  private readonly running = new Map<number, Promise<void>>();
  /** kick() calls still reading their deliveries' targets; stop() waits for them too. */
  private readonly kicking = new Set<Promise<void>>();
  private readonly gate = new Gate(WORKER_LIMITS.global, WORKER_LIMITS.perReceiver, WORKER_LIMITS.perShop);
  private readonly abort = new AbortController();
  private readonly policy: UrlPolicy;
  private sweepTimer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly core: WorkerCore,
    private readonly observe?: AttemptObserver,
  ) {
    this.policy = new UrlPolicy(core.config.webhookAllow);
  }

  /** Begin: sweep what is already due (after a restart), then every `sweep_ms`. */
  start(): void {
    setImmediate(() => void this.sweep());
    this.sweepTimer = setInterval(() => void this.sweep(), WORKER_LIMITS.sweep_ms);
    this.sweepTimer.unref();
  }

  /** Stop taking work, cut attempts in flight (they stay pending, with their attempt count), and wait for them. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.abort.abort();
    await Promise.allSettled([...this.kicking]);
    await Promise.allSettled([...this.running.values()]);
  }

  /** Attempts in flight now, for metrics. */
  get inFlight(): number {
    return this.gate.active;
  }

  /**
   * Queue first attempts that are due now (ids already queued or running are skipped). Resolves once they are
   * queued; never rejects (a failed read is logged, and the sweep finds the delivery later).
   */
  kick(ids: readonly number[]): Promise<void> {
    const p = this.enqueue(ids)
      .catch((err: unknown) => this.core.log.error('webhook queueing failed', { error: String((err as Error)?.stack ?? err) }))
      .finally(() => this.kicking.delete(p));
    this.kicking.add(p);
    return p;
  }

  private async enqueue(ids: readonly number[]): Promise<void> {
    // Taken before the reads: a kick or sweep meanwhile skips them, so none is queued twice.
    const taken: number[] = [];
    for (const id of ids) {
      if (this.stopped || this.waiting.has(id) || this.running.has(id) || this.waiting.size >= WORKER_LIMITS.queued) continue;
      this.waiting.add(id);
      taken.push(id);
    }
    try {
      while (taken.length > 0) {
        const id = taken[0];
        const row = this.stopped ? undefined : await deliveryTarget(this.core.store, id);
        taken.shift();
        if (!row) {
          this.waiting.delete(id);
          continue;
        }
        const receiver = receiverKey(row);
        const key = `${row.shop_id} ${receiver}`;
        let q = this.queues.get(key);
        if (!q) this.queues.set(key, (q = { shop: row.shop_id, receiver, ids: [] }));
        q.ids.push(id);
      }
    } finally {
      // After a failed read: the ids not queued are free for the next sweep.
      for (const id of taken) this.waiting.delete(id);
      this.pump();
    }
  }

  /** Queue every delivery whose round has not begun and that is due on its own clock. Never rejects. */
  async sweep(): Promise<void> {
    if (this.stopped) return;
    let due: number[];
    try {
      due = await dueFirstAttempts(this.core.store, this.core.clocks.real(), SWEEP_BATCH);
    } catch (err) {
      this.core.log.error('webhook sweep failed', { error: String((err as Error)?.stack ?? err) });
      return;
    }
    await this.kick(due);
  }

  /** A retry job's run: the attempt its delivery waits for, or null when the job is stale. Never rejects on a receiver's failure. */
  async attemptFor(job: Job): Promise<AttemptResult | null> {
    const id = Number(job.subject_id);
    const d = await this.load(id);
    if (!d || d.attempts !== job.payload.attempts || d.attempts === d.round_start) return null;
    const key = receiverKey(d);
    await this.gate.acquire(key, d.shop_id);
    try {
      if (this.stopped) throw new Error('cannot attempt a webhook: shutting down');
      return await this.perform(id);
    } finally {
      this.gate.release(key, d.shop_id);
      this.pump();
    }
  }

  /** Log what recording decided. */
  report(r: AttemptResult, rec: Recorded | null): void {
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
      next_attempt_at: rec.next_attempt_at === null ? null : iso(rec.next_attempt_at),
    };
    if (rec.state === 'succeeded') this.core.log.info('webhook delivered', fields);
    else this.core.log.warn('webhook attempt failed', fields);
    if (rec.disabled_endpoint) this.core.log.warn('webhook endpoint disabled: receiver answered 410 Gone', { endpoint_id: d.endpoint_id, event_id: d.event_id });
  }

  // Round-robin over shops' receivers; a receiver or a shop at its limit waits while others proceed.
  private pump(): void {
    let progressed = true;
    while (!this.stopped && progressed && this.gate.hasRoom()) {
      progressed = false;
      for (const [key, q] of this.queues) {
        if (!this.gate.hasRoom()) break;
        if (q.ids.length === 0) {
          this.queues.delete(key);
          continue;
        }
        if (!this.gate.tryAcquire(q.receiver, q.shop)) continue;
        const id = q.ids.shift()!;
        this.waiting.delete(id);
        const p = this.firstAttempt(id)
          .catch((err: unknown) => this.core.log.error('webhook attempt crashed', { delivery_id: id, error: String((err as Error)?.stack ?? err) }))
          .finally(() => {
            this.running.delete(id);
            this.gate.release(q.receiver, q.shop);
            this.pump();
          });
        this.running.set(id, p);
        progressed = true;
      }
    }
  }

  private async firstAttempt(id: number): Promise<void> {
    const d = await this.load(id);
    if (!d || d.attempts !== d.round_start) return;
    // Nodes sharing a PostgreSQL database all sweep the same deliveries: one claims the attempt in the table.
    // One process over SQLite needs no claim: its own queue already holds each delivery once.
    const lease = this.core.config.webhookTimeoutMs + Math.round(this.core.config.jobLeaseSeconds * 1000);
    const claimed = this.core.store.engine === 'postgres';
    if (claimed && !(await this.core.store.tx((tx) => claimFirstAttempt(tx, d, lease)))) return;
    let r: AttemptResult | null;
    try {
      r = await this.perform(id);
    } catch (err) {
      // Not made (cut by shutdown, or the attempt failed to run): due again at once, so another node need not
      // wait for the lease.
      if (claimed) await this.core.store.tx((tx) => releaseFirstAttempt(tx, d, lease)).catch(() => {});
      throw err;
    }
    if (!r || this.stopped) return;
    const { store, scheduler, clocks } = this.core;
    this.report(r, await store.write((tx) => recordAttempt(tx, scheduler, clocks, r)));
  }

  private async load(id: number): Promise<DeliveryRow | null> {
    const d = await getDelivery(this.core.store, id);
    return d && d.state === 'pending' ? d : null;
  }

  /** Make one attempt of a pending delivery; null when there is nothing to send. Throws only on shutdown. */
  private async perform(id: number): Promise<AttemptResult | null> {
    const { clocks, store, config } = this.core;
    const d = await this.load(id);
    if (!d) return null;
    const ev = await deliveryEvent(store, d.event_seq);
    const signing = await this.signing(d);
    if (!ev || !signing || signing.secrets.length === 0) {
      await store.tx((tx) => abandonDelivery(tx, d));
      this.core.log.warn('webhook delivery abandoned', { delivery_id: d.id, event_id: d.event_id, reason: ev ? 'endpoint disabled or deleted' : 'event gone' });
      return null;
    }
    const body = webhookBody(d.event_id, d.event, iso(ev.at), ev.webhook_data ?? 'null');
    const url = new URL(d.url);
    const started_at = await clocks.now(store, d.shop_id, d.mode);
    const started = clocks.real();
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

  private async signing(d: DeliveryRow): Promise<{ signature: SignatureVersion; secrets: string[] } | null> {
    const { store, clocks } = this.core;
    if (d.endpoint_id === null) return paymentUrlSigning(store, d.shop_id, clocks.real());
    const ep = await getEndpoint(store, d.endpoint_id);
    return ep && ep.disabled_at === null ? { signature: ep.signature, secrets: await validSecrets(store, ep.id, clocks.real()) } : null;
  }
}

function receiverKey(row: { endpoint_id: string | null; url: string }): string {
  if (row.endpoint_id) return `ep:${row.endpoint_id}`;
  try {
    return `url:${new URL(row.url).host}`;
  } catch {
    return `url:${row.url}`;
  }
}

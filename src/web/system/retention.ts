import type { Config } from '../../platform/config';
import type { Logger } from '../../platform/log';
import type { Store, Tx } from '../../platform/storage/store';
import type { Clocks } from '../../platform/clock';
import type { Module } from '../../money/core/module';
import { purgeIdempotencySlice } from '../../money/idempotency/idempotency';
import { DAY_MS } from '../../platform/util/time';

/** Rows per batch (one small group-committed body, so requests never wait long behind it), batches per run, run interval. */
export const RETENTION_LIMITS = { batch_rows: 500, batches_per_run: 20, interval_ms: 60_000 };

export type RetentionConfig = Pick<Config, 'retainJobsDays' | 'retainDeliveriesDays' | 'retainEventsDays' | 'retainIdempotencyHours'>;

export interface RetentionDeps {
  readonly store: Store;
  readonly clocks: Clocks;
  readonly log: Logger;
  readonly config: RetentionConfig;
}

/** What one table keeps, and a purge of one batch of its rows older than `cutoff` (`more`: another batch may find more). */
interface Rule {
  name: string;
  keep_ms(config: RetentionConfig): number;
  purge(tx: Tx, cutoff: number, limit: number): Promise<{ deleted: number; more: boolean }>;
}

/** A purge by one DELETE of a batch of the oldest rows: another may follow while a batch is full. */
function oldest(sql: string, order: 'cutoff, limit' | 'limit, cutoff' = 'limit, cutoff'): Rule['purge'] {
  return async (tx, cutoff, limit) => {
    const deleted = (await tx.run(sql, ...(order === 'cutoff, limit' ? [cutoff, limit] : [limit, cutoff]))).changes;
    return { deleted, more: deleted === limit };
  };
}

const days = (key: 'retainJobsDays' | 'retainDeliveriesDays' | 'retainEventsDays') => (config: RetentionConfig) => config[key] * DAY_MS;

// The books (payments, refunds, payouts, tokens, subscriptions, ledger) are never purged; what goes is finished work: done
// jobs, ended deliveries and their attempts, old events (not one a delivery waits on), idempotency records. Each but the
// jobs reads the oldest rows by id only, so a run reads a bounded number of rows.
const RULES: Rule[] = [
  {
    name: 'jobs',
    keep_ms: days('retainJobsDays'),
    // Finished jobs by their finish time (real time), through the partial index jobs_finished.
    purge: oldest(
      `DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE state IN ('done', 'cancelled') AND finished_at < ? ORDER BY finished_at LIMIT ?)`,
      'cutoff, limit',
    ),
  },
  {
    name: 'webhook_attempts',
    keep_ms: days('retainDeliveriesDays'),
    purge: oldest(`DELETE FROM webhook_attempts WHERE id IN (
         SELECT a.id FROM (SELECT id, delivery_id, attempted_at FROM webhook_attempts ORDER BY id LIMIT ?) a
         JOIN webhook_deliveries d ON d.id = a.delivery_id
         WHERE d.state <> 'pending' AND a.attempted_at < ?)`),
  },
  {
    name: 'webhook_deliveries',
    keep_ms: days('retainDeliveriesDays'),
    purge: oldest(`DELETE FROM webhook_deliveries WHERE id IN (
         SELECT d.id FROM (SELECT id, state, created_at FROM webhook_deliveries ORDER BY id LIMIT ?) d
         WHERE d.state <> 'pending' AND d.created_at < ?
           AND NOT EXISTS (SELECT 1 FROM webhook_attempts a WHERE a.delivery_id = d.id))`),
  },
  {
    name: 'events',
    keep_ms: days('retainEventsDays'),
    purge: oldest(`DELETE FROM events WHERE seq IN (
         SELECT e.seq FROM (SELECT seq, id, at FROM events ORDER BY seq LIMIT ?) e
         WHERE e.at < ? AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.state = 'pending'))`),
  },
  // Records are in the order they were made: the oldest first, up to the first still kept.
  { name: 'idempotency_keys', keep_ms: (config) => config.retainIdempotencyHours * 3_600_000, purge: purgeIdempotencySlice },
];

/** Deletes what need not be kept, in small batches through the group commit, once a minute; times are real (a test shop's events by its clock). */
export class Retention {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<Record<string, number>> | null = null;

  constructor(private readonly deps: RetentionDeps) {}

  start(): void {
    this.timer = setInterval(() => void this.runOnce().catch((err: unknown) => this.deps.log.error('retention sweep failed', { error: String(err) })), RETENTION_LIMITS.interval_ms);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined);
  }

  /** One run: per table, batches of old rows until one finds no more (or the run's bound); rows deleted per table. */
  runOnce(): Promise<Record<string, number>> {
    this.running ??= this.run().finally(() => (this.running = null));
    return this.running;
  }

  private async run(): Promise<Record<string, number>> {
    const deleted: Record<string, number> = {};
    for (const rule of RULES) {
      const cutoff = this.deps.clocks.real() - rule.keep_ms(this.deps.config);
      let total = 0;
      for (let b = 0; b < RETENTION_LIMITS.batches_per_run; b++) {
        const r = await this.deps.store.write(async (tx) => rule.purge(tx, cutoff, RETENTION_LIMITS.batch_rows));
        total += r.deleted;
        if (!r.more) break;
      }
      deleted[rule.name] = total;
    }
    if (Object.values(deleted).some((n) => n > 0)) this.deps.log.info('retention sweep', deleted);
    return deleted;
  }
}

/** Built here, started once the server listens, stopped (awaiting a run under way) at shutdown; it registers no job: its timer is its own. */
export function retentionModule(deps: RetentionDeps): Module & { readonly retention: Retention } {
  const retention = new Retention(deps);
  return { name: 'retention', retention, start: () => retention.start(), stop: () => retention.stop() };
}

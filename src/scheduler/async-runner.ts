import type { Store, Tx } from '../db/store';
import type { Clocks } from './clock';
import type { Logger } from '../log';
import { toJob, type Job, type JobRow } from './jobs-table';

/**
 * A job kind whose work needs I/O (a webhook's HTTP call), so it cannot run inside a transaction:
 * `run(job)` runs outside any transaction; `complete(tx, job, result)` then records the outcome in the job's
 * own transaction, which also marks the job done. `run` should turn expected failures (a receiver answering
 * 500) into a result that `complete` records; a rejection, a throw in `complete`, or a run longer than
 * `deadline_ms` is a failed run that the scheduler retries with backoff and finally marks dead.
 * A crash between run and complete runs the job again after restart (at least once).
 */
export interface AsyncJobKind<R> {
  run(job: Job): Promise<R>;
  complete(tx: Tx, job: Job, result: R): Promise<void>;
  /** Longest a run may take before it counts as failed (default 30 s). */
  deadline_ms?: number;
}

/** A shop's test clock reading while a job of an advance runs. */
export interface Pin {
  shopId: string;
  at: number;
}

/** What the runner reports back to the scheduler. */
export interface RunnerHooks {
  /** A run failed: record it (retry or dead). */
  fail(row: JobRow, err: unknown, pin: Pin | null): Promise<void>;
  /** A run is over, whatever the outcome. */
  settled(id: number): void;
}

const DEFAULT_DEADLINE_MS = 30_000;

/** Runs async jobs, at most `cap` at once; each job id runs at most once at a time. */
export class AsyncRunner {
  private readonly inflight = new Map<number, Promise<void>>();
  private active = 0;
  private readonly slotWaiters: Array<() => void> = [];

  constructor(
    private readonly store: Store,
    private readonly clocks: Clocks,
    private readonly log: Logger,
    private readonly cap: number,
    private readonly hooks: RunnerHooks,
  ) {}

  /** True while job `id` is waiting for a slot or running. */
  running(id: number): boolean {
    return this.inflight.has(id);
  }

  /** True while any job is waiting for a slot or running. */
  busy(): boolean {
    return this.inflight.size > 0;
  }

  /** Jobs waiting for a slot or running. */
  count(): number {
    return this.inflight.size;
  }

  /** Start a run (or join the one in flight); the promise never rejects. */
  start(row: JobRow, kind: AsyncJobKind<unknown>, pin: Pin | null): Promise<void> {
    const had = this.inflight.get(row.id);
    if (had) return had;
    const p = this.runOne(row, kind, pin).finally(() => {
      this.inflight.delete(row.id);
      this.hooks.settled(row.id);
    });
    this.inflight.set(row.id, p);
    return p;
  }

  /** Wait until nothing is in flight (runs end by their deadlines). */
  async drain(): Promise<void> {
    while (this.inflight.size > 0) await Promise.all([...this.inflight.values()]);
  }

  private async runOne(row: JobRow, kind: AsyncJobKind<unknown>, pin: Pin | null): Promise<void> {
    await this.slot();
    try {
      const job = toJob(row);
      const result = await withDeadline(kind.run(job), kind.deadline_ms ?? DEFAULT_DEADLINE_MS, row);
      if (!this.store.isOpen) return;
      await this.store.write(async (tx) => {
        const body = async (): Promise<void> => {
          const cur = await tx.get<{ state: string }>(`SELECT state FROM jobs WHERE id = ?`, row.id);
          if (cur?.state !== 'pending') return;
          await kind.complete(tx, job, result);
          await tx.run(`UPDATE jobs SET state = 'done', finished_at = ? WHERE id = ?`, this.clocks.real(), row.id);
        };
        if (pin) await this.clocks.pinned(pin.shopId, pin.at, body);
        else await body();
      });
    } catch (err) {
      try {
        await this.hooks.fail(row, err, pin);
      } catch (e) {
        this.log.error('cannot record a failed job run', { job_id: row.id, kind: row.kind, error: String((e as Error)?.message ?? e) });
      }
    } finally {
      this.release();
    }
  }

  private slot(): Promise<void> {
    if (this.active < this.cap) {
      this.active++;
      return Promise.resolve();
    }
    // The slot passes straight from the finishing run to the next waiter, so `active` stays at the cap.
    return new Promise((resolve) => this.slotWaiters.push(resolve));
  }

  private release(): void {
    const next = this.slotWaiters.shift();
    if (next) next();
    else this.active--;
  }
}

/** `p`, or a rejection once `deadline_ms` passed (the late result is dropped). */
function withDeadline<R>(p: Promise<R>, deadline_ms: number, row: JobRow): Promise<R> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`job ${row.id} (${row.kind}) timed out after ${deadline_ms} ms`)), deadline_ms);
    timer.unref();
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

import type { Reader, Row, RunResult, Store, Tx } from '../db/store';
import type { Clocks } from './clock';
import type { Logger } from '../log';
import { toJob, type Job, type JobKey, type JobRow, type JobsTable } from './jobs-table';
import type { AsyncJobKind, Pin } from './async-runner';

/**
 * A job handler runs inside the job's own transaction (a savepoint of a batch) and the job is marked done in
 * it; it may schedule more jobs through the tx it gets. It must be idempotent (check the subject's state
 * first) and must not open a transaction of its own. Throwing rolls back its writes and retries the job.
 */
export type JobHandler = (tx: Tx, job: Job) => Promise<void>;

/** Per-kind options. */
export interface JobKindOptions {
  /** Failed runs before the job is dead (default MAX_ATTEMPTS). */
  maxAttempts?: number;
}

/** Failed runs before a job is marked dead. */
export const MAX_ATTEMPTS = 8;

/** A registered job kind: a synchronous handler, or an async run-then-complete pair. */
export type Kind = { sync: JobHandler; maxAttempts: number } | { async: AsyncJobKind<unknown>; maxAttempts: number };

/** Retry timing: the first delay, doubling per failure up to the cap. */
export interface Backoff {
  backoffMs: number;
  maxBackoffMs: number;
  /** Most sync jobs per transaction. */
  batch: number;
  /** Longest a transaction of sync jobs runs before it commits. */
  txMs: number;
}

/** What the executor tells the scheduler. */
export interface ExecutorHooks {
  /** A counter that every schedule() bumps. */
  seq(): number;
  /** A job was run (or found finished) and is no longer in memory. */
  ran(id: number): void;
  /** A failed job will run again at this key. */
  retry(key: JobKey): void;
}

/** What a batch of sync jobs did (see Executor.runSyncBatch). */
export interface BatchOutcome {
  consumed: number;
  ran: number;
  stale: boolean;
  rest: JobRow[];
  pin: number;
}

/**
 * Hands a batch the jobs scheduled since it last looked, merged into the rows it has still to run (`rest`), and
 * returns the list to go on with; `q` is the batch's transaction, `whole` true when the batch has no savepoints.
 */
export type Refetch = (q: Reader, rest: JobRow[], whole: boolean) => Promise<JobRow[]>;

/** A job of a batch without savepoints threw: the batch's transaction is rolled back and run again with them. */
class RunAgain extends Error {
  constructor(cause: unknown) {
    super('a job of the batch failed: running the batch again with a savepoint per job', { cause });
  }
}

/**
 * Runs sync jobs in batches (one transaction; each job's writes and its `done` mark commit or roll back
 * together) and records failures: retry after a doubling backoff, dead at last.
 */
export class Executor {
  /** Registered kinds by name. */
  readonly kinds = new Map<string, Kind>();

  constructor(
    private readonly store: Store,
    private readonly clocks: Clocks,
    private readonly log: Logger,
    private readonly table: JobsTable,
    private readonly limits: Backoff,
    private readonly hooks: ExecutorHooks,
  ) {}

  /** Register a kind; a kind registered twice is a start-up error. */
  addKind(kind: string, k: Kind): void {
    if (this.kinds.has(kind)) throw new Error(`cannot register job kind "${kind}" twice`);
    if (!(Number.isInteger(k.maxAttempts) && k.maxAttempts >= 1)) throw new Error(`cannot register job kind "${kind}": maxAttempts ${k.maxAttempts} is under 1`);
    this.kinds.set(kind, k);
  }

  /**
   * Run sync jobs rows[from..] in one transaction, up to the next async job, `batch` jobs or `txMs` of running;
   * each job's writes and its `done` mark commit or roll back together. When a job schedules another, due order
   * may have changed: with `refetch` the batch hands it the rows not yet run and goes on with the list it
   * returns, in the same transaction; without it, it stops there. With `pinShop`, the shop's test clock reads
   * each job's due time while it runs. Returns how many rows it consumed, how many of them it ran (a row no
   * longer pending is skipped), whether the caller's row list is stale (then `rest` holds the rows still to
   * run, merged), and the pin reached; throws when the transaction itself fails (nothing committed: the jobs
   * stay pending and the sweep finds them).
   *
   * The batch first runs its jobs one after another with no savepoint of their own: a savepoint copies the
   * first version of every page its job changes, a tenth of a subscription charge's cost. Should a job throw,
   * that transaction is rolled back whole and the batch runs again from the same rows with a savepoint per
   * job, so that the failing job alone is rolled back and recorded as failed while the others commit. Jobs
   * check their subject's state first and keep their in-memory effects for after commit, so the run that was
   * rolled back leaves nothing behind.
   */
  async runSyncBatch(
    rows: JobRow[],
    from: number,
    pinShop: string | null,
    pinFloor: number,
    stopOnSchedule: boolean,
    refetch?: Refetch,
  ): Promise<BatchOutcome> {
    const fast = await this.runBatch(rows, from, pinShop, pinFloor, stopOnSchedule, refetch, false);
    return fast ?? (await this.runBatch(rows, from, pinShop, pinFloor, stopOnSchedule, refetch, true))!;
  }

  /** One try of runSyncBatch; without savepoints, undefined when a job threw (and nothing was committed). */
  private async runBatch(
    rows: JobRow[],
    from: number,
    pinShop: string | null,
    pinFloor: number,
    stopOnSchedule: boolean,
    refetch: Refetch | undefined,
    savepoints: boolean,
  ): Promise<BatchOutcome | undefined> {
    const retries: JobKey[] = [];
    const consumed: number[] = [];
    let ran = 0;
    const seen = new Set<number>();
    let list = rows;
    let i = from;
    let stale = false;
    let pin = pinFloor;
    let threw = false;
    // The job running now, read by `once` (one closure per batch, not per job).
    let current: JobRow;
    let currentKind: Kind | undefined;
    let batchTx: Tx;
    const once = async (): Promise<void> => {
      if (!savepoints) {
        if (await this.runOne(batchTx, current, currentKind)) ran++;
        return;
      }
      const out = await this.runOneInSavepoint(batchTx, current, currentKind);
      if (out.ran) ran++;
      if (out.retry) retries.push(out.retry);
    };
    try {
      await this.store.tx(
        async (tx) => {
          batchTx = tx;
          let seq = this.hooks.seq();
          const started = performance.now();
          while (i < list.length && consumed.length < this.limits.batch && (consumed.length === 0 || performance.now() - started < this.limits.txMs)) {
            const row = list[i];
            const kind = this.kinds.get(row.kind);
            if (kind && 'async' in kind) break;
            i++;
            if (seen.has(row.id)) continue;
            seen.add(row.id);
            consumed.push(row.id);
            pin = Math.max(pin, row.due_at);
            current = row;
            currentKind = kind;
            try {
              if (pinShop) await this.clocks.pinned(pinShop, pin, once);
              else await once();
            } catch (err) {
              if (savepoints) throw err;
              threw = true;
              throw new RunAgain(err);
            }
            if (stopOnSchedule && this.hooks.seq() !== seq) {
              if (!refetch) break;
              // Without savepoints every job this batch scheduled commits with it or not at all.
              list = await refetch(tx, list.slice(i), !savepoints);
              i = 0;
              stale = true;
              seq = this.hooks.seq();
            }
          }
          // Durable later: the next batch runs while this one's WAL sync is on the thread pool.
        },
        { durable: 'later' },
      );
    } catch (err) {
      if (threw && err instanceof RunAgain) return undefined;
      throw err;
    } finally {
      if (!threw) for (const id of consumed) this.hooks.ran(id);
    }
    for (const r of retries) this.hooks.retry(r);
    return { consumed: consumed.length, ran, stale, rest: stale ? list.slice(i) : [], pin };
  }

  /** One job in `tx`, no savepoint: skipped if no longer pending (false); a throw is the caller's. */
  private async runOne(tx: Tx, row: JobRow, kind: Kind | undefined): Promise<boolean> {
    if ((await this.table.state(tx, row.id)) !== 'pending') return false;
    if (!kind || !('sync' in kind)) throw new Error(`cannot run job ${row.id}: no handler for kind "${row.kind}"`);
    await kind.sync(tx, toJob(row));
    await this.table.done(tx, row.id, this.clocks.real());
    return true;
  }

  /** One job in a savepoint of `tx`: skipped if no longer pending; on a throw, rolled back and recorded as failed. */
  private async runOneInSavepoint(tx: Tx, row: JobRow, kind: Kind | undefined): Promise<{ ran: boolean; retry: JobKey | null }> {
    // The job's after-commit actions are kept apart and handed to the batch only once its savepoint is released.
    const hooks: Array<() => void> = [];
    let ran = false;
    try {
      await tx.savepoint(async (sp) => {
        if ((await this.table.state(sp, row.id)) !== 'pending') return;
        ran = true;
        if (!kind || !('sync' in kind)) throw new Error(`cannot run job ${row.id}: no handler for kind "${row.kind}"`);
        await kind.sync(new HookedTx(sp, hooks), toJob(row));
        await this.table.done(sp, row.id, this.clocks.real());
      });
    } catch (err) {
      return { ran, retry: await this.fail(tx, row, err) };
    }
    for (const h of hooks) tx.afterCommit(h);
    return { ran, retry: null };
  }

  /** Record a failed run in `tx`: retry after a doubling backoff on the job's clock, or dead after maxAttempts. */
  private async fail(tx: Tx, row: JobRow, err: unknown): Promise<JobKey | null> {
    const kind = this.kinds.get(row.kind);
    const attempt = row.attempt + 1;
    const dead = attempt >= (kind?.maxAttempts ?? MAX_ATTEMPTS);
    const backoff_ms = Math.min(this.limits.maxBackoffMs, this.limits.backoffMs * 2 ** (attempt - 1));
    const real = this.clocks.real();
    const dueAt = this.clocks.now(row.shop_id, row.mode) + backoff_ms;
    const runAt = this.clocks.toReal(row.shop_id, row.mode, dueAt);
    const error = String((err as Error)?.message ?? err).slice(0, 500);
    await this.table.failed(tx, row.id, { attempt, error, dead, dueAt, runAt, now_ms: real });
    const fields = { job_id: row.id, kind: row.kind, subject_id: row.subject_id, attempt, error };
    if (dead) this.log.error('job dead', fields);
    else this.log.warn('job failed; will retry', { ...fields, retry_in_ms: backoff_ms });
    return dead ? null : { id: row.id, runAt };
  }

  /** The async runner's failure path: its own transaction, on the clock the run had. */
  async failInTx(row: JobRow, err: unknown, pin: Pin | null): Promise<void> {
    if (!this.store.isOpen) return;
    await this.store.tx(async (tx) => {
      const record = async (): Promise<void> => {
        const cur = await tx.get<{ attempt: number; state: string }>(`SELECT attempt, state FROM jobs WHERE id = ?`, row.id);
        if (cur?.state === 'pending') await this.fail(tx, { ...row, attempt: cur.attempt }, err);
      };
      if (pin) await this.clocks.pinned(pin.shopId, pin.at, record);
      else await record();
    });
  }
}

/**
 * A job's view of its savepoint: reads, writes and nested savepoints go to the savepoint; after-commit actions
 * are collected in `hooks`, so that a job rolled back to its savepoint leaves none behind.
 */
class HookedTx implements Tx {
  constructor(
    private readonly sp: Tx,
    private readonly hooks: Array<() => void>,
  ) {}

  get connection(): object {
    return this.sp.connection;
  }

  get<T = Row>(sql: string, ...params: unknown[]): Promise<T | undefined> {
    return this.sp.get<T>(sql, ...params);
  }

  all<T = Row>(sql: string, ...params: unknown[]): Promise<T[]> {
    return this.sp.all<T>(sql, ...params);
  }

  run(sql: string, ...params: unknown[]): Promise<RunResult> {
    return this.sp.run(sql, ...params);
  }

  savepoint<T>(fn: (tx: Tx) => Promise<T> | T): Promise<T> {
    // A nested savepoint's actions join this job's only if it is released (a throw in it drops them).
    return this.sp.savepoint(async (inner) => {
      const mine: Array<() => void> = [];
      const out = await fn(new HookedTx(inner, mine));
      for (const h of mine) this.hooks.push(h);
      return out;
    });
  }

  afterCommit(fn: () => void): void {
    this.hooks.push(fn);
  }
}

import type { Reader, Store, Tx } from '../storage/store';
import { endsTransaction } from '../storage/store';
import type { Clocks } from '../clock';
import { HookedTx, inRun, runOf, type RunClaim } from './hooked-tx';
import type { Logger } from '../log';
import { toJob, type Claim, type Job, type JobRow, type JobsTable } from './jobs-table';
import type { AsyncJobKind, RunAt } from './async-runner';

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

/** Retry timing (the first delay, doubling per failure up to the cap), batch sizes and the claims' lease. */
export interface Backoff {
  backoffMs: number;
  maxBackoffMs: number;
  /** Most sync jobs per transaction. */
  batch: number;
  /** Longest a transaction of sync jobs runs before it commits. */
  txMs: number;
  /** How long a claim holds without renewal. */
  leaseMs: number;
}

/** What the executor asks of the scheduler. */
export interface ExecutorHooks {
  /** A counter that every schedule() bumps. */
  seq(): number;
  /** A failed job will run again at this real time. */
  retry(runAt: number): void;
  /** Claims lapsing by the time returned count as free at real time `now` (Scheduler.threshold). */
  threshold(now: number): number;
}

/** How a batch runs (see Executor.runSyncBatch). */
export interface BatchOptions<C> {
  /** The shop's run the batch is part of (its jobs may carry its token), each job in it at its due time, never earlier than `floor`. */
  run: RunClaim | null;
  floor: number;
  /** The token of a pass's claim on the rows (PostgreSQL claims them before they run), when not a shop run's. */
  token?: string;
  /** Stop when a job schedules another (due order may have changed), or hand the rest to `refetch`. */
  stopOnSchedule: boolean;
  refetch?: Refetch;
  /** Read the rows in the batch's own transaction instead of taking the caller's (the due query of a pass). */
  select?: (q: Reader) => Promise<JobRow[]>;
  /** Rows to pass over (run or held by this process already). */
  skip?: (row: JobRow) => boolean;
  /**
   * An async job: claim it in the batch's transaction and return what starts it once the batch committed, or
   * null to leave it (`claimedSoFar`: what this try of the batch claimed before). Without it the batch stops at
   * the first async job.
   */
  onAsync?: (tx: Tx, row: JobRow, kind: AsyncJobKind<unknown>, threshold: number, claimedSoFar: readonly C[]) => Promise<C | null>;
}

/** What a batch of sync jobs did (see Executor.runSyncBatch). */
export interface BatchOutcome<C> {
  /** Rows gone through (run, skipped, claimed or found no longer runnable). */
  consumed: number;
  ran: number;
  stale: boolean;
  rest: JobRow[];
  /** The due time a run's jobs reached. */
  moment: number;
  /** The rows the batch worked on (its own read with `select`), and the index it reached in them. */
  list: JobRow[];
  reached: number;
  /** What `onAsync` returned for the async jobs it claimed. */
  claimed: C[];
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

/** A job's `done` matched no row: another process took it while it ran here. Its writes are rolled back, not a failure. */
class TakenOver extends Error {
  constructor(id: number) {
    super(`job ${id} was taken by another process while it ran: its run is rolled back`);
  }
}

/**
 * Runs sync jobs in batches (one transaction; each job's writes and its `done` mark commit or roll back
 * together) and records failures: retry after a doubling backoff, dead at last.
 */
/** The state of one batch's sync runs: its transaction, the job running now, and what ran. */
interface BatchRun {
  tx: Tx;
  threshold: number;
  row: JobRow;
  kind: Kind | undefined;
  ran: number;
  /** Ids of jobs that failed in their savepoint and are retried later. */
  retries: number[];
}

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
   * each job's writes and its `done` mark commit or roll back together. With `select`, the rows are the batch's
   * own read in its transaction (a pass's due query) and async jobs are claimed there through `onAsync`. When a
   * job schedules another, due order may have changed: with `refetch` the batch hands it the rows not yet run
   * and goes on with the list it returns, in the same transaction; without it, it stops there. With `run`,
   * each job runs wrapped in the run's `around` at its due time. Each job runs only if it is still pending and
   * its claim is free, lapsed or the run's own; its `done` names the same condition. Returns how many rows
   * it consumed, how many of them it ran, whether the caller's row list is stale (then `rest` holds the rows
   * still to run, merged), and the due time reached; throws when the transaction itself fails (nothing committed:
   * the jobs stay pending and the next pass finds them).
   *
   * The batch first runs its jobs one after another with no savepoint of their own: a savepoint copies the
   * first version of every page its job changes, a tenth of a subscription charge's cost. Should a job throw,
   * that transaction is rolled back whole and the batch runs again from the same rows with a savepoint per
   * job, so that the failing job alone is rolled back and recorded as failed while the others commit. Jobs
   * check their subject's state first and keep their in-memory effects for after commit, so the run that was
   * rolled back leaves nothing behind.
   */
  async runSyncBatch<C = never>(rows: JobRow[], from: number, o: BatchOptions<C>): Promise<BatchOutcome<C>> {
    const fast = await this.runBatch(rows, from, o, false);
    return fast ?? (await this.runBatch(rows, from, o, true))!;
  }

  /** One try of runSyncBatch; without savepoints, undefined when a job threw (and nothing was committed). */
  private async runBatch<C>(rows: JobRow[], from: number, o: BatchOptions<C>, savepoints: boolean): Promise<BatchOutcome<C> | undefined> {
    const claimed: C[] = [];
    let consumed = 0;
    const seen = new Set<number>();
    let list = rows;
    let i = from;
    let stale = false;
    let moment = o.floor;
    let threw = false;
    const b = this.batchRunner(savepoints, o.run?.token ?? o.token ?? null);
    try {
      await this.store.tx(
        async (tx) => {
          // PostgreSQL may run the body again after a serialization failure: each run starts afresh.
          claimed.length = 0;
          consumed = 0;
          seen.clear();
          list = rows;
          i = from;
          stale = false;
          moment = o.floor;
          b.st.ran = 0;
          b.st.retries = [];
          b.st.tx = tx;
          const threshold = (b.st.threshold = this.hooks.threshold(this.clocks.real()));
          if (o.select) {
            list = await o.select(tx);
            i = 0;
          }
          let seq = this.hooks.seq();
          const started = performance.now();
          while (i < list.length && consumed < this.limits.batch && (consumed === 0 || performance.now() - started < this.limits.txMs)) {
            const row = list[i];
            const kind = this.kinds.get(row.kind);
            if (kind && 'async' in kind && !o.onAsync) break;
            i++;
            if (seen.has(row.id)) continue;
            seen.add(row.id);
            consumed++;
            if (o.skip?.(row)) continue;
            if (kind && 'async' in kind) {
              const c = await o.onAsync!(tx, row, kind.async, threshold, claimed);
              if (c !== null) claimed.push(c);
              continue;
            }
            moment = Math.max(moment, row.due_at);
            b.st.row = row;
            b.st.kind = kind;
            try {
              if (o.run) await inRun(tx, o.run, moment, b.once);
              else await b.once();
            } catch (err) {
              if (savepoints) throw err;
              threw = true;
              throw new RunAgain(err);
            }
            if (o.stopOnSchedule && this.hooks.seq() !== seq) {
              if (!o.refetch) break;
              // Without savepoints every job this batch scheduled commits with it or not at all.
              list = await o.refetch(tx, list.slice(i), !savepoints);
              i = 0;
              stale = true;
              seq = this.hooks.seq();
            }
          }
        },
      );
    } catch (err) {
      if (threw && err instanceof RunAgain) return undefined;
      throw err;
    }
    for (const r of b.st.retries) this.hooks.retry(r);
    return { consumed, ran: b.st.ran, stale, rest: stale ? list.slice(i) : [], moment, list, reached: i, claimed };
  }

  /**
   * What runs the sync jobs of one batch: `once` runs the job in `st` (one closure per batch, not one per job,
   * since `inRun` takes a function) and counts it.
   */
  private batchRunner(savepoints: boolean, token: string | null): { st: BatchRun; once: () => Promise<void> } {
    const st: BatchRun = { tx: undefined as unknown as Tx, threshold: 0, row: undefined as unknown as JobRow, kind: undefined, ran: 0, retries: [] };
    const once = async (): Promise<void> => {
      if (!savepoints) {
        if (await this.runOne(st.tx, st.row, st.kind, st.threshold, token)) st.ran++;
        return;
      }
      const out = await this.runOneInSavepoint(st.tx, st.row, st.kind, st.threshold, token);
      if (out.ran) st.ran++;
      if (out.retry !== null) st.retries.push(out.retry);
    };
    return { st, once };
  }

  /** One job in `tx`, no savepoint: skipped if it may no longer run here (false); a throw is the caller's. */
  private async runOne(tx: Tx, row: JobRow, kind: Kind | undefined, threshold: number, token: string | null): Promise<boolean> {
    if (!(await this.table.runnable(tx, row.id, threshold, token))) return false;
    if (!kind || !('sync' in kind)) throw new Error(`cannot run job ${row.id}: no handler for kind "${row.kind}"`);
    await kind.sync(tx, toJob(row));
    if (!(await this.table.done(tx, row.id, this.clocks.real(), threshold, token))) throw new TakenOver(row.id);
    return true;
  }

  /** One job in a savepoint of `tx`: skipped if it may no longer run here; on a throw, rolled back and recorded as failed. */
  private async runOneInSavepoint(tx: Tx, row: JobRow, kind: Kind | undefined, threshold: number, token: string | null): Promise<{ ran: boolean; retry: number | null }> {
    // The job's after-commit actions are kept apart and handed to the batch only once its savepoint is released.
    const hooks: Array<() => void> = [];
    let ran = false;
    try {
      await tx.savepoint(async (sp) => {
        if (!(await this.table.runnable(sp, row.id, threshold, token))) return;
        ran = true;
        if (!kind || !('sync' in kind)) throw new Error(`cannot run job ${row.id}: no handler for kind "${row.kind}"`);
        await kind.sync(new HookedTx(sp, hooks), toJob(row));
        if (!(await this.table.done(sp, row.id, this.clocks.real(), threshold, token))) throw new TakenOver(row.id);
      });
    } catch (err) {
      if (err instanceof TakenOver) {
        this.log.warn('job taken by another process while it ran; its run was rolled back', { job_id: row.id, kind: row.kind });
        return { ran: false, retry: null };
      }
      // The whole batch's transaction is lost (PostgreSQL aborted it, or its connection): the store runs it again.
      if (endsTransaction(err)) throw err;
      return { ran, retry: await this.fail(tx, row, err) };
    }
    for (const h of hooks) tx.afterCommit(h);
    return { ran, retry: null };
  }

  /**
   * Record a failed run in `tx`: retry after a doubling backoff on the job's clock, or dead after maxAttempts;
   * returns the retry's real run time, or null. The job's claim goes, unless a shop's run runs it and the retry
   * falls within the run: then the retry is the run's, so that no other pass runs it off its clock.
   */
  private async fail(tx: Tx, row: JobRow, err: unknown): Promise<number | null> {
    const kind = this.kinds.get(row.kind);
    const attempt = row.attempt + 1;
    const dead = attempt >= (kind?.maxAttempts ?? MAX_ATTEMPTS);
    const backoff_ms = Math.min(this.limits.maxBackoffMs, this.limits.backoffMs * 2 ** (attempt - 1));
    const real = this.clocks.real();
    const dueAt = (await this.clocks.now(tx, row.shop_id, row.mode)) + backoff_ms;
    const runAt = await this.clocks.toReal(tx, row.shop_id, row.mode, dueAt);
    const run = runOf(tx);
    const claim: Claim | null = !dead && run && dueAt <= run.dueBy ? { by: run.by, token: run.token, until: real + this.limits.leaseMs } : null;
    const error = String((err as Error)?.message ?? err).slice(0, 500);
    await this.table.failed(tx, row.id, { attempt, error, dead, dueAt, runAt, now_ms: real, claim });
    const fields = { job_id: row.id, kind: row.kind, subject_id: row.subject_id, attempt, error };
    if (dead) this.log.error('job dead', fields);
    else this.log.warn('job failed; will retry', { ...fields, retry_in_ms: backoff_ms });
    return dead ? null : runAt;
  }

  /**
   * The async runner's failure path: its own transaction, on the clock the run had. Recorded only while the job
   * is still this run's own (pending, under `token`); false when another process took it meanwhile.
   */
  async failInTx(row: JobRow, err: unknown, at: RunAt | null, token: string): Promise<boolean> {
    if (!this.store.isOpen) return true;
    let retry: number | null = null;
    let mine = false;
    await this.store.tx(async (tx) => {
      const record = async (): Promise<void> => {
        const cur = await tx.get<{ attempt: number; state: string; claim_token: string | null }>(`SELECT attempt, state, claim_token FROM jobs WHERE id = ?`, row.id);
        if (cur?.state !== 'pending' || cur.claim_token !== token) return;
        mine = true;
        retry = await this.fail(tx, { ...row, attempt: cur.attempt }, err);
      };
      if (at) await inRun(tx, at.run, at.at, record);
      else await record();
    });
    if (retry !== null) this.hooks.retry(retry);
    return mine;
  }
}

import { randomUUID } from 'node:crypto';
import { endsTransaction, type Reader, type Store, type Tx } from '../storage/store';
import type { Clocks } from '../clock';
import type { Logger } from '../log';
import { CLAIM, CLAIM_DUE, DONE, DUE, inRun, RELEASE, runOf, RUNNABLE, type Claim, type Job, type JobKey, type JobRow, type RunClaim, type SchedulerLimits } from './jobs-table';
import type { AsyncJobKind, AsyncRunner, RunAt } from './async-runner';

/**
 * A job handler runs in the job's own transaction, which also marks the job done, and may schedule more jobs
 * through it. It must be idempotent (check the subject's state first) and open no transaction of its own.
 * Throwing rolls back its writes and retries the job.
 */
export type JobHandler = (tx: Tx, job: Job) => Promise<void>;

export interface JobKindOptions {
  /** Failed runs before the job is dead (default MAX_ATTEMPTS). */
  maxAttempts?: number;
}

export const MAX_ATTEMPTS = 8;

export interface Kind {
  sync?: JobHandler;
  async?: AsyncJobKind<unknown>;
  maxAttempts: number;
}

/**
 * How a batch runs. `page`: a pass's due query, read in the batch's transaction (SQLite), async jobs claimed
 * there; `claimed`: the rows are a pass's claim under `token` (PostgreSQL), async ones started once the batch
 * commits; neither: a shop's run (`run`), which stops at an async job, and whose jobs run each at its due time,
 * never earlier than `floor`. With `refetch`, a job that schedules another hands it the rows not yet run
 * (due order may have changed) and the batch goes on with the list it returns.
 */
export interface BatchOptions {
  token: string | null;
  run?: RunClaim;
  floor?: number;
  refetch?: Refetch;
  page?: { now: number; after: JobKey };
  /** PostgreSQL's pass: the rows are claimed; by id, what gives back the slot their kind's `admit` took. */
  claimed?: Map<number, (() => void) | undefined>;
}

/** What a batch did: the rows it worked on and the index it reached, the jobs it ran, the due time reached. */
export interface BatchOutcome {
  list: JobRow[];
  reached: number;
  ran: number;
  moment: number;
  /** True when a refetch replaced the caller's rows: `list` from `reached` on is what is still to run. */
  stale: boolean;
}

/**
 * Hands a batch the jobs scheduled since it last looked, merged into the rows it has still to run (`rest`), and
 * returns the list to go on with; `q` is the batch's transaction, `whole` true when no attempt of it was rolled back.
 */
export type Refetch = (q: Reader, rest: JobRow[], whole: boolean) => Promise<JobRow[]>;

/** A job of a batch threw: the batch's transaction is rolled back and run again up to the job, which it records as failed. */
class RunAgain extends Error {
  constructor(
    readonly row: JobRow,
    readonly error: unknown,
  ) {
    super(`job ${row.id} of the batch failed: running the batch again up to it`, { cause: error });
  }
}

/** A job's `done` matched no row: another process took it while it ran here. Its writes are rolled back, not a failure. */
class TakenOver extends Error {
  constructor(id: number) {
    super(`job ${id} was taken by another process while it ran: its run is rolled back`);
  }
}

/** An async job a batch claimed: started once the batch committed, with the slot its kind's `admit` gave. */
interface Start {
  row: JobRow;
  job: Job;
  kind: AsyncJobKind<unknown>;
  token: string;
  give: (() => void) | undefined;
}

/** Runs sync jobs in batches of one transaction, claims and starts async ones, records failures (doubling backoff, then dead). */
export class Executor {
  readonly kinds = new Map<string, Kind>();
  /** Bumped by every schedule(), so a shop's run notices jobs created by the job it just ran. */
  seq = 0;
  /** Bumped by every cancel(), so a batch knows the rows its due read found are still pending. */
  cancels = 0;
  /** True once the scheduler is stopping (or before it started): passes and runs end after their batch. */
  stopped = true;
  /** A pass left due async jobs for want of a slot: the end of a run asks for another pass. */
  starved = false;
  /** Claims made before this real time (they lapse before it plus a lease) belong to a process that is gone (StartOptions.sole). */
  voidBefore = Number.MIN_SAFE_INTEGER;
  /** Tokens of the shop runs in this process: a pass leaves their jobs to them even when their claim looks lapsed. */
  readonly advanceTokens = new Set<string>();
  /** The transaction of a pass's batch running now (or last): a job it schedules for now is that pass's to run next. */
  passTx: Tx | null = null;

  constructor(
    readonly store: Store,
    readonly clocks: Clocks,
    readonly log: Logger,
    readonly runner: AsyncRunner,
    readonly processId: string,
    readonly limits: SchedulerLimits,
    /** A failed job will run again at this real time. */
    private readonly retry: (runAt: number) => void,
  ) {}

  /** Claims lapsing by the time returned count as free now: now itself, or, for a sole server shortly after its start, every claim made before the start. */
  threshold(): number {
    return Math.max(this.clocks.real(), this.voidBefore - 1);
  }

  /** A row this process holds already (a run in flight, a shop run's job), though its claim may look lapsed. */
  held(row: JobRow): boolean {
    return this.runner.inflight.has(row.id) || (row.claim_token !== null && this.advanceTokens.has(row.claim_token));
  }

  addKind(kind: string, k: Kind): void {
    if (this.kinds.has(kind)) throw new Error(`cannot register job kind "${kind}" twice`);
    if (!(Number.isInteger(k.maxAttempts) && k.maxAttempts >= 1)) throw new Error(`cannot register job kind "${kind}": maxAttempts ${k.maxAttempts} is under 1`);
    this.kinds.set(kind, k);
  }

  /**
   * Run jobs rows[from..] (or a pass's page, `o.page`) in one transaction, up to `batch` jobs or `txMs` of running;
   * each sync job is taken (if it may still run here), run there and marked done. Throws when the transaction
   * itself fails (nothing committed: the jobs stay pending and the next pass finds them).
   *
   * Jobs have no savepoint of their own (it copies the first version of every page its job changes, a tenth of a
   * subscription charge's cost). Should a job throw, the transaction is rolled back whole and the batch runs again
   * up to that job (`failed`), records its failure instead of running it and commits. Jobs check their subject's
   * state first and keep their in-memory effects for after commit, so the rolled-back run leaves nothing behind.
   */
  async runBatch(rows: JobRow[], from: number, o: BatchOptions, failed?: RunAgain): Promise<BatchOutcome> {
    const out: BatchOutcome = { list: rows, reached: from, ran: 0, moment: o.floor ?? -Infinity, stale: false };
    const starts: Start[] = [];
    let retry: number | null = null;
    try {
      await this.store.tx(async (tx) => {
        // PostgreSQL may run the body again after a serialization failure: each run starts afresh.
        if (starts.length > 0) giveBack(starts);
        if (!o.run) this.passTx = tx;
        Object.assign(out, { ran: 0, moment: o.floor ?? -Infinity, stale: false });
        retry = null;
        const threshold = Math.max(this.clocks.real(), this.voidBefore - 1);
        const a = o.page?.after;
        let list = (out.list = o.page ? await tx.all<JobRow>(DUE, a!.runAt, a!.runAt, a!.id, o.page.now, threshold, this.limits.batch) : rows);
        let i = o.page ? 0 : from;
        let seq = this.seq;
        const cancels = this.cancels;
        const t0 = performance.now();
        for (let n = 0; i < list.length && n < this.limits.batch && (n === 0 || failed !== undefined || performance.now() - t0 < this.limits.txMs); n++) {
          const row = list[i];
          const kind = this.kinds.get(row.kind);
          if (kind?.async && !o.page && !o.claimed) break;
          i++;
          if (o.page && row.claim_token !== null && this.held(row)) continue;
          if (kind?.async) {
            if (o.claimed) starts.push({ row, job: toJob(row), kind: kind.async, token: o.token!, give: undefined });
            else await this.claim(tx, row, kind.async, threshold, starts);
            continue;
          }
          out.moment = Math.max(out.moment, row.due_at);
          const seen = o.page !== undefined && this.cancels === cancels;
          if (row.id === failed?.row.id) {
            const record = (): Promise<number | null | undefined> => this.recordFailure(tx, row, threshold, o.token, seen, failed.error);
            const at = await (o.run ? inRun(tx, o.run, out.moment, record) : record());
            if (at !== undefined) out.ran++;
            retry = at ?? null;
            break;
          }
          try {
            if (await (o.run ? inRun(tx, o.run, out.moment, () => this.runOne(tx, row, kind, threshold, o.token, seen)) : this.runOne(tx, row, kind, threshold, o.token, seen))) out.ran++;
          } catch (err) {
            // An error that ends the whole transaction is the store's to run again (PostgreSQL), not the job's.
            throw endsTransaction(err) ? err : new RunAgain(row, err);
          }
          if (o.refetch && this.seq !== seq) {
            list = out.list = await o.refetch(tx, list.slice(i), failed === undefined);
            i = 0;
            out.stale = true;
            seq = this.seq;
          }
        }
        out.reached = i;
      });
    } catch (err) {
      giveBack(starts);
      if (err instanceof RunAgain) return this.runBatch(rows, from, o, err);
      throw err;
    }
    if (retry !== null) this.retry(retry);
    for (const s of starts) {
      void this.runner.start(s.row, s.job, s.kind, s.token, null, s.give ?? o.claimed?.get(s.row.id));
      o.claimed?.delete(s.row.id);
    }
    out.ran += starts.length;
    return out;
  }

  /**
   * PostgreSQL's page of a pass: the due rows after `after` are read, the ones this process takes (sync jobs,
   * async ones whose kind's `admit` or the runner has a slot for) claimed in one statement (CLAIM_DUE), then the
   * sync jobs run in transactions that name the claim's token and the async ones start under it. Returns the
   * jobs it ran or started, and the rows read (all of them gone through).
   */
  async pagePg(now: number, after: JobKey): Promise<{ ran: number; list: JobRow[]; reached: number }> {
    const read = await this.store.all<JobRow>(DUE, after.runAt, after.runAt, after.id, now, this.threshold(), this.limits.batch);
    const gives = new Map<number, (() => void) | undefined>();
    let shared = this.runner.free();
    const ids: number[] = [];
    for (const row of read) {
      if (row.claim_token !== null && this.held(row)) continue;
      const kind = this.kinds.get(row.kind)?.async;
      const give = !kind ? undefined : kind.admit ? kind.admit(toJob(row)) : shared-- > 0 ? undefined : null;
      if (give === null) this.starved = true;
      else ids.push(row.id);
      if (kind && give !== null) gives.set(row.id, give);
    }
    const claim = this.claimOf();
    let rows: JobRow[] = [];
    try {
      if (ids.length > 0) rows = await this.store.all<JobRow>(CLAIM_DUE, claim.by, claim.token, claim.until, ids, this.threshold(), [...this.advanceTokens]);
    } finally {
      const got = new Set(rows.map((r) => r.id));
      for (const [id, give] of gives) {
        if (got.has(id)) continue;
        gives.delete(id);
        give?.();
      }
    }
    rows.sort((a, b) => a.run_at - b.run_at || a.id - b.id);
    let ran = 0;
    let from = 0;
    try {
      while (from < rows.length && !this.stopped) {
        const out = await this.runBatch(rows, from, { token: claim.token, claimed: gives });
        ran += out.ran;
        from = out.reached;
      }
    } finally {
      for (const give of gives.values()) give?.();
      // What it did not get to (stopped, or a transaction failed) is anyone's again at once.
      if (from < rows.length && this.store.isOpen) {
        await this.store
          .tx(async (tx) => {
            for (const r of rows.slice(from)) await tx.run(RELEASE, r.id, claim.token);
          })
          .catch((err: unknown) => this.log.error('cannot release job claims; they lapse after the lease', { error: String((err as Error)?.message ?? err) }));
      }
    }
    return { ran, list: read, reached: read.length };
  }

  /** SQLite's pass claims an async job in the batch's transaction, under a fresh token, if its kind's `admit` or the runner has a slot for it. */
  private async claim(tx: Tx, row: JobRow, kind: AsyncJobKind<unknown>, threshold: number, starts: Start[]): Promise<void> {
    const job = toJob(row);
    const give = kind.admit ? kind.admit(job) : undefined;
    if (give === null || (!kind.admit && starts.filter((s) => s.give === undefined).length >= this.runner.free())) {
      this.starved = true;
      return;
    }
    const token = randomUUID();
    if ((await tx.run(CLAIM, this.processId, token, this.clocks.real() + this.limits.leaseMs, row.id, threshold, null)).changes > 0) starts.push({ row, job, kind, token, give });
    else give?.();
  }

  claimOf(): Claim {
    return { by: this.processId, token: randomUUID(), until: this.clocks.real() + this.limits.leaseMs };
  }

  /** Whether `row` may still run here: pending, its claim free, lapsed or `token`'s. */
  private async runnable(tx: Tx, row: JobRow, threshold: number, token: string | null): Promise<boolean> {
    const r = await tx.get<Pick<JobRow, 'state' | 'claim_token' | 'claim_until'>>(RUNNABLE, row.id);
    return r?.state === 'pending' && (r.claim_until === null || r.claim_until <= threshold || (token !== null && r.claim_token === token));
  }

  /**
   * One job in `tx`: false when it may no longer run here; a throw is the caller's. `seen`: this transaction's
   * due read found the job pending and free, and no job cancelled any since, so it is not read again.
   */
  private async runOne(tx: Tx, row: JobRow, kind: Kind | undefined, threshold: number, token: string | null, seen: boolean): Promise<boolean> {
    if (!seen && !(await this.runnable(tx, row, threshold, token))) return false;
    if (!kind?.sync) throw new Error(`cannot run job ${row.id}: no handler for kind "${row.kind}"`);
    await kind.sync(tx, toJob(row));
    if ((await tx.run(DONE, this.clocks.real(), row.id, threshold, token)).changes === 0) throw new TakenOver(row.id);
    return true;
  }

  /**
   * The job that threw in a batch's rolled-back attempt, reached again: its failure recorded in `tx` if it may
   * still run here. Returns the real time of its retry, null when it is dead, undefined when it was not recorded.
   */
  private async recordFailure(tx: Tx, row: JobRow, threshold: number, token: string | null, seen: boolean, err: unknown): Promise<number | null | undefined> {
    if (err instanceof TakenOver) {
      this.log.warn('job taken by another process while it ran; its run was rolled back', { job_id: row.id, kind: row.kind });
      return undefined;
    }
    if (!seen && !(await this.runnable(tx, row, threshold, token))) return undefined;
    return this.fail(tx, row, err);
  }

  /**
   * Record a failed run in `tx`: retry after a doubling backoff on the job's clock, or dead after maxAttempts;
   * returns the retry's real run time, or null. The job's claim goes, unless a shop's run runs it and the retry
   * falls within the run: then the retry is the run's, so that no other pass runs it off its clock.
   */
  private async fail(tx: Tx, row: JobRow, err: unknown): Promise<number | null> {
    const attempt = row.attempt + 1;
    const dead = attempt >= (this.kinds.get(row.kind)?.maxAttempts ?? MAX_ATTEMPTS);
    const backoff_ms = Math.min(this.limits.maxBackoffMs, this.limits.backoffMs * 2 ** (attempt - 1));
    const real = this.clocks.real();
    const dueAt = (await this.clocks.now(tx, row.shop_id, row.mode)) + backoff_ms;
    const runAt = await this.clocks.toReal(tx, row.shop_id, row.mode, dueAt);
    const run = runOf(tx);
    const claim: Claim | null = !dead && run && dueAt <= run.dueBy ? { by: run.by, token: run.token, until: real + this.limits.leaseMs } : null;
    const error = String((err as Error)?.message ?? err).slice(0, 500);
    await tx.run(
      `UPDATE jobs SET attempt = ?, last_error = ?, state = ?, finished_at = ?, due_at = coalesce(?, due_at), run_at = coalesce(?, run_at), claimed_by = ?, claim_token = ?, claim_until = ? WHERE id = ?`,
      ...[attempt, error, dead ? 'dead' : 'pending', dead ? real : null, dead ? null : dueAt, dead ? null : runAt, claim?.by ?? null, claim?.token ?? null, claim?.until ?? null, row.id],
    );
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
    if (retry !== null) this.retry(retry);
    return mine;
  }
}

/** Give back the slots a batch's claims took (its transaction did not commit, or is run again). */
function giveBack(starts: Start[]): void {
  for (const s of starts) s.give?.();
  starts.length = 0;
}

export function toJob(row: JobRow): Job {
  const { id, kind, subject_id, shop_id, mode, due_at, attempt } = row;
  return { id, kind, subject_id, shop_id, mode, due_at, attempt, payload: JSON.parse(row.payload) as Record<string, unknown> };
}

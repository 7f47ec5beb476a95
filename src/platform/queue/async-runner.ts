import { setTimeout as sleep } from 'node:timers/promises';
import { endsTransaction, type Body, type Store, type Tx } from '../storage/store';
import type { Clocks } from '../clock';
import type { Logger } from '../log';
import { FINISH, inRun, RELEASE, RENEW, type Job, type JobRow, type RunClaim } from './jobs-table';

/**
 * A job kind whose work needs I/O (a bank request): `run(job)` runs outside any transaction, then
 * `complete(tx, job, result)` records the outcome in a transaction that also marks the job done (shared with
 * the completions that end beside it, each in a savepoint of its own: see completeGathered). `run`
 * should turn expected failures (a receiver answering 500) into a result; a rejection, a throw in `complete` or
 * a run longer than `deadline_ms` is a failed run (retried with backoff, finally dead).
 *
 * The job is claimed while it runs (a token, renewed meanwhile). A process that dies between run and complete
 * loses the claim when it lapses and another runs the job again, so `run` must recognise work it already started
 * (a bank request marked sent becomes a status check, never a second send). A completion whose claim was taken
 * over is dropped.
 */
export interface AsyncJobKind<R> {
  run(job: Job): Promise<R>;
  complete(tx: Tx, job: Job, result: R): Promise<void>;
  /** Longest a run may take before it counts as failed (default 30 s). */
  deadline_ms?: number;
  /**
   * A kind with limits of its own (a webhook's receiver, shop and process): take a slot for the job and return
   * what gives it back, or null at its limit (the job stays due and unclaimed until a run ends). Such runs do not
   * count against maxAsyncRunning.
   */
  admit?(job: Job): (() => void) | null;
}

/** The shop's run a job belongs to, and the due time it runs and completes at. */
export interface RunAt {
  run: RunClaim;
  at: number;
}

/** What the runner needs from the scheduler. */
export interface RunnerHooks {
  /** A run failed: record it (retry or dead) if the job is still this claim's; false when it was not. */
  fail(row: JobRow, err: unknown, at: RunAt | null, token: string): Promise<boolean>;
  /** A run is over, whatever the outcome. */
  settled(): void;
}

const DEFAULT_DEADLINE_MS = 30_000;
const MAX_GATHERED = 64;

/** A finished run's completion waiting for the next write, and what its caller awaits. */
interface Completion {
  body: Body<boolean>;
  resolve(done: boolean): void;
  reject(err: unknown): void;
}

/**
 * Runs the async jobs this process claimed, at most `cap` at once (of kinds without limits of their own), each
 * job id once at a time here; its claim keeps other processes off it and is renewed every third of the lease.
 */
export class AsyncRunner {
  /** Runs waiting for a slot or running: job id → the promise that settles when it is over. */
  readonly inflight = new Map<number, Promise<void>>();
  /** Claims held: job id → token. Renewed together, dropped when the run is over. */
  readonly held = new Map<number, string>();
  private renewTimer: NodeJS.Timeout | null = null;
  private renewing: Promise<void> | null = null;
  private active = 0;
  /** Runs that count against `cap` (those of kinds without limits of their own), waiting or running. */
  private shared = 0;
  private readonly slotWaiters: Array<() => void> = [];
  /** Completions of runs that ended while a write of completions was under way; `completing` while one is. */
  private completions: Completion[] = [];
  private completing = false;

  constructor(
    private readonly store: Store,
    private readonly clocks: Clocks,
    private readonly log: Logger,
    private readonly cap: number,
    private readonly leaseMs: number,
    private readonly hooks: RunnerHooks,
  ) {}

  /** Runs of kinds without limits of their own that could start now without waiting for a slot. */
  free(): number {
    return Math.max(0, this.cap - this.shared);
  }

  /**
   * Run a job claimed under `token` (or join the run in flight); the promise never rejects. With `give` (what
   * gives back the slot its kind's `admit` took) it takes no slot of the runner's.
   */
  start(row: JobRow, job: Job, kind: AsyncJobKind<unknown>, token: string, at: RunAt | null, give?: () => void): Promise<void> {
    const had = this.inflight.get(row.id);
    if (had) {
      give?.();
      return had;
    }
    this.held.set(row.id, token);
    this.renewTimer ??= setInterval(() => this.renewAll(), Math.max(1, Math.floor(this.leaseMs / 3))).unref();
    const done = this.runOne(row, job, kind, token, at, give);
    this.inflight.set(row.id, done);
    return done;
  }

  /** Wait until nothing is in flight (runs end by their deadlines). */
  async drain(): Promise<void> {
    while (this.inflight.size > 0) await Promise.all([...this.inflight.values()]);
  }

  /** Give up every claim still held (shutdown): another process may take those jobs at once. */
  async releaseAll(): Promise<void> {
    this.stopRenewing();
    await this.renewing;
    const held = [...this.held];
    this.held.clear();
    if (held.length === 0 || !this.store.isOpen) return;
    await this.store.tx(async (tx) => {
      for (const [id, token] of held) await tx.run(RELEASE, id, token);
    });
  }

  private stopRenewing(): void {
    if (this.renewTimer !== null) clearInterval(this.renewTimer);
    this.renewTimer = null;
  }

  /** Renew every claim held (one group commit); a claim that matched no row was taken over: it is no longer held. */
  private renewAll(): void {
    if (this.held.size === 0) return this.stopRenewing();
    if (this.renewing || !this.store.isOpen) return;
    const held = [...this.held];
    const until = this.clocks.real() + this.leaseMs;
    this.renewing = this.store
      .write(async (tx) => {
        const lost: number[] = [];
        for (const [id, token] of held) if ((await tx.run(RENEW, until, id, token)).changes === 0) lost.push(id);
        return lost;
      })
      .then(
        (lost) => {
          for (const id of lost) {
            if (!this.held.delete(id)) continue;
            this.log.warn('job claim lost: another process took the job over (or it ended); this run will not record its result', { job_id: id });
          }
        },
        (err: unknown) => this.log.error('cannot renew job claims', { claims: held.length, error: String((err as Error)?.message ?? err) }),
      )
      .finally(() => (this.renewing = null));
  }

  private async runOne(row: JobRow, job: Job, kind: AsyncJobKind<unknown>, token: string, at: RunAt | null, give: (() => void) | undefined): Promise<void> {
    const deadline = new AbortController();
    try {
      if (!give) {
        this.shared++;
        await this.slot();
      }
      const ms = kind.deadline_ms ?? DEFAULT_DEADLINE_MS;
      const running = kind.run(job);
      // A late result is dropped. The deadline's timer is cancelled when the run ends (the race handles its rejection).
      const late = sleep(ms, undefined, { ref: false, signal: deadline.signal }).then(() => Promise.reject(new Error(`job ${row.id} (${row.kind}) timed out after ${ms} ms`)));
      const result = await Promise.race([running, late]);
      deadline.abort();
      if (!this.store.isOpen) return;
      const body = async (tx: Tx): Promise<boolean> => {
        // The first statement names the claim: a job another process took over (its claim lapsed here) is not
        // this run's to complete, and its result is dropped.
        if ((await tx.run(RENEW, this.clocks.real() + this.leaseMs, row.id, token)).changes === 0) return false;
        await kind.complete(tx, job, result);
        await tx.run(FINISH, this.clocks.real(), row.id, token);
        return true;
      };
      if (!(await this.complete(at ? (tx) => inRun(tx, at.run, at.at, () => body(tx)) : body))) {
        this.log.warn('job result dropped: another process took the job over (its claim lapsed) or it ended', { job_id: row.id, kind: row.kind });
      }
    } catch (err) {
      deadline.abort();
      try {
        if (!(await this.hooks.fail(row, err, at, token))) {
          this.log.warn('job failure dropped: another process took the job over (its claim lapsed) or it ended', { job_id: row.id, kind: row.kind, error: String((err as Error)?.message ?? err) });
        }
      } catch (e) {
        this.log.error('cannot record a failed job run', { job_id: row.id, kind: row.kind, error: String((e as Error)?.message ?? e) });
      }
    } finally {
      if (give) give();
      else {
        this.shared--;
        this.release();
      }
      this.inflight.delete(row.id);
      this.held.delete(row.id);
      this.hooks.settled();
    }
  }

  /** Record a completion with the others of its moment (completeGathered). */
  private complete(body: Body<boolean>): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.completions.push({ body, resolve, reject });
      if (!this.completing) void this.completeGathered();
    });
  }

  /**
   * One write records every completion that came while the last was under way, each in a savepoint of its own
   * (one that throws fails alone). On PostgreSQL, completions in transactions of their own, side by side, read
   * and write the same pages of the jobs table's indexes and fail one another's serialization; gathered, a
   * node runs one such transaction at a time.
   */
  private async completeGathered(): Promise<void> {
    this.completing = true;
    while (this.completions.length > 0) {
      const batch = this.completions.splice(0, MAX_GATHERED);
      let outcomes: Array<{ done: boolean } | { err: unknown }>;
      try {
        // Alone, a completion that throws rolls back its whole transaction; no savepoint is needed.
        outcomes = batch.length === 1 ? [{ done: await this.store.write(batch[0].body) }] : await this.store.write((tx) => completeEach(tx, batch));
      } catch (err) {
        outcomes = batch.map(() => ({ err }));
      }
      for (let i = 0; i < batch.length; i++) {
        const o = outcomes[i];
        if ('done' in o) batch[i].resolve(o.done);
        else batch[i].reject(o.err);
      }
    }
    this.completing = false;
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

/** Each completion in a savepoint of its own: a throw rolls back and fails only it (unless it ends the transaction). */
async function completeEach(tx: Tx, batch: Completion[]): Promise<Array<{ done: boolean } | { err: unknown }>> {
  const out: Array<{ done: boolean } | { err: unknown }> = [];
  for (const c of batch) {
    try {
      out.push({ done: await tx.savepoint(c.body) });
    } catch (err) {
      if (endsTransaction(err)) throw err;
      out.push({ err });
    }
  }
  return out;
}

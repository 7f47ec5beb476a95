import { randomUUID } from 'node:crypto';
import type { Store, Tx } from '../storage/store';
import type { Clocks } from '../clock';
import type { Logger } from '../log';
import { toJob, type Job, type JobRow, type JobsTable } from './jobs-table';
import { inRun, type RunClaim } from './hooked-tx';

/**
 * A job kind whose work needs I/O (a bank request), so it cannot run inside a transaction: `run(job)` runs
 * outside any transaction; `complete(tx, job, result)` then records the outcome in the job's own transaction,
 * which also marks the job done. `run` should turn expected failures (a receiver answering 500) into a result
 * that `complete` records; a rejection, a throw in `complete`, or a run longer than `deadline_ms` is a failed
 * run that the scheduler retries with backoff and finally marks dead.
 *
 * The job is claimed in the database while it runs (a token, renewed while `run` is in flight). A process that
 * dies between run and complete loses the claim when it lapses, and another process runs the job again: `run`
 * must therefore recognise work it already started (a bank request already marked sent becomes a status check,
 * never a second send). A completion whose claim was taken over is dropped.
 */
export interface AsyncJobKind<R> {
  run(job: Job): Promise<R>;
  complete(tx: Tx, job: Job, result: R): Promise<void>;
  /** Longest a run may take before it counts as failed (default 30 s). */
  deadline_ms?: number;
  /**
   * A kind with limits of its own (a webhook's receiver, shop and process): take a slot for the job and return
   * what gives it back, or null when its limit is reached; a pass then leaves the job due and unclaimed, and
   * looks again once a run ends. Such runs do not count against the scheduler's maxAsyncRunning.
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
  /** This process's id, written in its claims. */
  processId: string;
  /** Claims lapsing by the time returned count as free at real time `now`. */
  threshold(now: number): number;
  /** A run failed: record it (retry or dead) if the job is still this claim's; false when it was not. */
  fail(row: JobRow, err: unknown, at: RunAt | null, token: string): Promise<boolean>;
  /** A run is over, whatever the outcome. */
  settled(id: number): void;
}

const DEFAULT_DEADLINE_MS = 30_000;

/** A run in flight: its claim's token and the promise that settles when it is over. */
interface InFlight {
  token: string;
  done: Promise<void>;
}

/**
 * Runs async jobs that this process claimed, at most `cap` at once; each job id runs at most once at a time
 * here, and the claim in the table keeps other processes off it. Every claim held is renewed every third of
 * the lease while its run is in flight; completion is a write whose first statement names the claim's token.
 */
export class AsyncRunner {
  private readonly inflight = new Map<number, InFlight>();
  /** Claims held: job id → token. Renewed together, dropped when the run is over. */
  private readonly held = new Map<number, string>();
  private renewTimer: NodeJS.Timeout | null = null;
  private renewing: Promise<void> | null = null;
  private active = 0;
  /** Runs that count against `cap` (those of kinds without limits of their own), waiting or running. */
  private shared = 0;
  private readonly slotWaiters: Array<() => void> = [];

  constructor(
    private readonly store: Store,
    private readonly clocks: Clocks,
    private readonly log: Logger,
    private readonly table: JobsTable,
    private readonly cap: number,
    private readonly leaseMs: number,
    private readonly hooks: RunnerHooks,
  ) {}

  /** True while job `id` is waiting for a slot or running here. */
  running(id: number): boolean {
    return this.inflight.has(id);
  }

  /** The jobs waiting for a slot or running here. */
  ids(): number[] {
    return [...this.inflight.keys()];
  }

  /** True while any job is waiting for a slot or running. */
  busy(): boolean {
    return this.inflight.size > 0;
  }

  /** Jobs waiting for a slot or running. */
  count(): number {
    return this.inflight.size;
  }

  /** Runs of kinds without limits of their own that could start now without waiting for a slot. */
  free(): number {
    return Math.max(0, this.cap - this.shared);
  }

  /** Claims this process holds on async jobs. */
  claims(): number {
    return this.held.size;
  }

  /** A fresh claim of this process, lapsing a lease from now. */
  newClaim(): { by: string; token: string; until: number } {
    return { by: this.hooks.processId, token: randomUUID(), until: this.clocks.real() + this.leaseMs };
  }

  /**
   * Claim a job in `tx` (a batch's transaction) for a run by this process; the token, or null when another
   * process holds it (or it is no longer pending). `own`: a shop's run's token, whose jobs it may take.
   */
  async claim(tx: Tx, row: JobRow, threshold: number, own: string | null): Promise<string | null> {
    if (this.inflight.has(row.id)) return null;
    const c = this.newClaim();
    return (await this.table.claim(tx, row.id, c, threshold, own)) ? c.token : null;
  }

  /**
   * Start the run of a job claimed under `token` (or join the one in flight); the promise never rejects. With
   * `admitted` (what gives back the slot its kind's `admit` took) it takes no slot of the runner's.
   */
  start(row: JobRow, kind: AsyncJobKind<unknown>, token: string, at: RunAt | null, admitted?: () => void): Promise<void> {
    const had = this.inflight.get(row.id);
    if (had) {
      admitted?.();
      return had.done;
    }
    this.hold(row.id, token);
    const done = this.runOne(row, kind, token, at, admitted).finally(() => {
      this.inflight.delete(row.id);
      this.held.delete(row.id);
      this.hooks.settled(row.id);
    });
    this.inflight.set(row.id, { token, done });
    return done;
  }

  /**
   * Claim a job in a transaction of its own and start it (a shop's run's async jobs, in due order): the run (its
   * promise, wrapped so that awaiting the claim does not await the run), or null when another process holds
   * the job or it is no longer pending.
   */
  async claimAndStart(row: JobRow, kind: AsyncJobKind<unknown>, at: RunAt | null, own: string | null): Promise<{ done: Promise<void> } | null> {
    const had = this.inflight.get(row.id);
    if (had) return { done: had.done };
    let token: string | null = null;
    await this.store.write(async (tx) => {
      token = await this.claim(tx, row, this.hooks.threshold(this.clocks.real()), own);
    });
    if (token === null) return null;
    return { done: this.start(row, kind, token, at) };
  }

  /** The run of job `id` in flight here, if any. */
  joined(id: number): Promise<void> | null {
    return this.inflight.get(id)?.done ?? null;
  }

  /** Wait until nothing is in flight (runs end by their deadlines). */
  async drain(): Promise<void> {
    while (this.inflight.size > 0) await Promise.all([...this.inflight.values()].map((f) => f.done));
  }

  /** Give up every claim still held (shutdown): another process may take those jobs at once. */
  async releaseAll(): Promise<void> {
    this.stopRenewing();
    await this.renewing;
    const held = [...this.held];
    this.held.clear();
    if (held.length === 0 || !this.store.isOpen) return;
    await this.store.tx(async (tx) => {
      for (const [id, token] of held) await this.table.release(tx, id, token);
    });
  }

  private hold(id: number, token: string): void {
    this.held.set(id, token);
    if (this.renewTimer === null) {
      this.renewTimer = setInterval(() => this.renewAll(), Math.max(1, Math.floor(this.leaseMs / 3)));
      this.renewTimer.unref();
    }
  }

  private stopRenewing(): void {
    if (this.renewTimer !== null) clearInterval(this.renewTimer);
    this.renewTimer = null;
  }

  /** Renew every claim held (one group commit); a claim that matched no row was taken over: it is no longer held. */
  private renewAll(): void {
    if (this.held.size === 0) {
      this.stopRenewing();
      return;
    }
    if (this.renewing || !this.store.isOpen) return;
    const held = [...this.held];
    const until = this.clocks.real() + this.leaseMs;
    this.renewing = this.store
      .write(async (tx) => {
        const lost: number[] = [];
        for (const [id, token] of held) if (!(await this.table.renew(tx, id, token, until))) lost.push(id);
        return lost;
      })
      .then(
        (lost) => {
          for (const id of lost) {
            if (this.held.get(id) === undefined) continue;
            this.held.delete(id);
            this.log.warn('job claim lost: another process took the job over (or it ended); this run will not record its result', { job_id: id });
          }
        },
        (err: unknown) => this.log.error('cannot renew job claims', { claims: held.length, error: String((err as Error)?.message ?? err) }),
      )
      .finally(() => {
        this.renewing = null;
      });
  }

  private async runOne(row: JobRow, kind: AsyncJobKind<unknown>, token: string, at: RunAt | null, admitted: (() => void) | undefined): Promise<void> {
    if (!admitted) {
      this.shared++;
      await this.slot();
    }
    try {
      const job = toJob(row);
      const result = await withDeadline(kind.run(job), kind.deadline_ms ?? DEFAULT_DEADLINE_MS, row);
      if (!this.store.isOpen) return;
      let dropped = false;
      await this.store.write(async (tx) => {
        const body = async (): Promise<void> => {
          // The first statement names the claim: a job another process took over (its claim lapsed here) is
          // not this run's to complete, and its result is dropped.
          if (!(await this.table.renew(tx, row.id, token, this.clocks.real() + this.leaseMs))) {
            dropped = true;
            return;
          }
          await kind.complete(tx, job, result);
          await this.table.done(tx, row.id, this.clocks.real(), this.hooks.threshold(this.clocks.real()), token);
        };
        if (at) await inRun(tx, at.run, at.at, body);
        else await body();
      });
      if (dropped) this.log.warn('job result dropped: another process took the job over (its claim lapsed) or it ended', { job_id: row.id, kind: row.kind });
    } catch (err) {
      try {
        if (!(await this.hooks.fail(row, err, at, token))) {
          this.log.warn('job failure dropped: another process took the job over (its claim lapsed) or it ended', { job_id: row.id, kind: row.kind, error: String((err as Error)?.message ?? err) });
        }
      } catch (e) {
        this.log.error('cannot record a failed job run', { job_id: row.id, kind: row.kind, error: String((e as Error)?.message ?? e) });
      }
    } finally {
      if (admitted) admitted();
      else {
        this.shared--;
        this.release();
      }
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

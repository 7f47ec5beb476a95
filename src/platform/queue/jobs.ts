import { randomUUID } from 'node:crypto';
import type { Reader, Store, Tx } from '../storage/store';
import type { Clocks, Mode } from '../clock';
import type { Logger } from '../log';
import { JobsTable, type Claim } from './jobs-table';
import { AsyncRunner, type AsyncJobKind } from './async-runner';
import { Executor, MAX_ATTEMPTS, type JobHandler, type JobKindOptions } from './executor';
import { DEFAULT_LIMITS, type SchedulerLimits } from './limits';
import type { JobSpec, StartOptions } from './spec';
import { pendingRow, runShopJobs, type ShopRunDeps } from './shop-run';
import { runPass, WakeTimer, type PassDeps } from './pass';
import { runOf, type Around } from './hooked-tx';

export type { Job } from './jobs-table';
export type { AsyncJobKind } from './async-runner';
export type { JobHandler, JobKindOptions } from './executor';
export { MAX_ATTEMPTS } from './executor';
export type { SchedulerLimits } from './limits';
export type { JobSpec, StartOptions } from './spec';


/**
 * The durable scheduler. The jobs table is the truth and the only place jobs live; the process holds the time
 * of its next wake (one timer) and the claims it holds, nothing it could not read again.
 *
 * A pass (pass.ts) runs the due query (pending, run_at <= now, claim free or lapsed; the partial index
 * `jobs_run` in (run_at, id) order) a page at a time. On SQLite each page is read in the transaction that runs
 * it: sync jobs run and are marked done there, in batches of savepoints (executor.ts); async jobs are claimed
 * there (process id, a fresh token, claim_until a lease ahead). On PostgreSQL the page is claimed first, in one
 * `FOR UPDATE SKIP LOCKED` statement at READ COMMITTED, and its sync jobs then run in SERIALIZABLE batches that
 * name the claim's token. Async jobs run outside once claimed, renewing their claim, then complete in a write
 * that names the token (async-runner.ts); a kind may keep limits of its own (`admit`: a webhook's receiver and
 * shop), and a job at its limit stays due for a later pass. A job whose claim lapsed (its process died) is
 * taken again.
 *
 * The one timer is armed at the earliest run_at a pass could take (one indexed read after each pass), moved
 * earlier after a commit that schedules an earlier job, and never later than `rereadMs` ahead: jobs written by
 * other processes (admin commands, other nodes) and claims that lapsed are found by that periodic re-read.
 */
export class Scheduler {
  /** This process's id in the claims it writes: random per scheduler (one per process). */
  readonly processId: string = randomUUID();
  private readonly exec: Executor;
  private readonly table: JobsTable;
  private readonly limits: SchedulerLimits;
  private readonly runner: AsyncRunner;
  /** The one timer, at the next due job or the next re-read. */
  private readonly timer: WakeTimer;
  /** When the table is read again at the latest, whatever this process knows. */
  private nextRereadAt = 0;
  /** The pass running now, and whether another was asked for meanwhile. */
  private passing: Promise<number> | null = null;
  private again = false;
  /** The last pass left due async jobs for want of a slot: the end of a run asks for another pass. */
  private starved = false;
  private stopped = true;
  /** Claims made before this real time (they lapse before it plus a lease) belong to a process that is gone (StartOptions.sole). */
  private voidBefore = Number.MIN_SAFE_INTEGER;
  /** Tokens of the advances running in this process: a pass leaves their jobs to them even when their claim looks lapsed. */
  private readonly advanceTokens = new Set<string>();
  private readonly advances = new Set<Promise<number>>();
  /** Bumped by every schedule(), so a shop's advance notices jobs created by the job it just ran. */
  private scheduleSeq = 0;
  private idleWaiters: Array<() => void> = [];
  private readonly shopRun: ShopRunDeps;
  private readonly pass_: PassDeps;

  constructor(
    private readonly store: Store,
    private readonly clocks: Clocks,
    private readonly log: Logger,
    limits: Partial<SchedulerLimits> = {},
  ) {
    this.limits = { ...DEFAULT_LIMITS, ...limits };
    if (!(this.limits.leaseMs > 0)) throw new Error(`cannot start the scheduler: a job lease of ${this.limits.leaseMs} ms is not positive`);
    this.table = new JobsTable();
    this.timer = new WakeTimer(clocks.real, () => {
      if (!this.stopped) void this.pass();
    });
    const threshold = (now: number): number => this.threshold(now);
    this.exec = new Executor(store, clocks, log, this.table, this.limits, {
      seq: () => this.scheduleSeq,
      retry: (runAt) => this.wakeAt(runAt),
      threshold,
    });
    this.runner = new AsyncRunner(store, clocks, log, this.table, this.limits.maxAsyncRunning, this.limits.leaseMs, {
      processId: this.processId,
      threshold,
      fail: (row, err, at, token) => this.exec.failInTx(row, err, at, token),
      settled: () => this.settled(),
    });
    this.pass_ = {
      store,
      clocks,
      log,
      table: this.table,
      exec: this.exec,
      runner: this.runner,
      limits: this.limits,
      threshold,
      stopped: () => this.stopped,
      advanceTokens: this.advanceTokens,
      starved: () => {
        this.starved = true;
      },
    };
    this.shopRun = {
      store,
      clocks,
      table: this.table,
      exec: this.exec,
      runner: this.runner,
      limits: this.limits,
      log,
      processId: this.processId,
      threshold,
      stopped: () => this.stopped,
      seq: () => this.scheduleSeq,
      holding: (token, on) => {
        if (on) this.advanceTokens.add(token);
        else this.advanceTokens.delete(token);
      },
    };
  }

  /** Register the handler of a job kind; a kind registered twice is a start-up error. */
  register(kind: string, handler: JobHandler, opts: JobKindOptions = {}): void {
    this.exec.addKind(kind, { sync: handler, maxAttempts: opts.maxAttempts ?? MAX_ATTEMPTS });
  }

  /**
   * Register a kind whose work happens outside any transaction (an HTTP call): `run(job)` is awaited with a
   * deadline, then `complete(tx, job, result)` records the outcome in the job's own transaction, which also
   * marks it done. A rejection or a passed deadline counts as a failed run (retry with backoff, then dead).
   */
  registerAsync<R>(kind: string, spec: AsyncJobKind<R>, opts: JobKindOptions = {}): void {
    this.exec.addKind(kind, { async: spec as AsyncJobKind<unknown>, maxAttempts: opts.maxAttempts ?? MAX_ATTEMPTS });
  }

  /**
   * Write a job in the caller's transaction; returns the job id. Once it commits, the timer wakes for it if it
   * is due before the wake armed. A job that a job of a shop's run (runDueUpTo) schedules for that shop and
   * mode, due within the run, is written claimed by the run, which runs it.
   */
  async schedule(tx: Tx, spec: JobSpec): Promise<number> {
    if (!Number.isFinite(spec.dueAt)) throw new Error(`cannot schedule job "${spec.kind}": due time ${spec.dueAt} is not a number`);
    const dueAt = Math.round(spec.dueAt);
    const run = runOf(tx);
    const runAt = await this.clocks.toReal(tx, spec.shopId, spec.mode, dueAt);
    const payload = JSON.stringify(spec.payload ?? {});
    const createdAt = this.clocks.real();
    const claim: Claim | null =
      run && dueAt <= run.dueBy && spec.shopId === run.shopId && spec.mode === run.mode ? { by: run.by, token: run.token, until: createdAt + this.limits.leaseMs } : null;
    // Fields named one by one: a spread of the caller's spec (whose shape varies) cost more than the INSERT's binding.
    const id = await this.table.insert(tx, spec.kind, spec.subjectId, spec.shopId, spec.mode, dueAt, runAt, payload, createdAt, claim);
    this.scheduleSeq++;
    // A job the run claimed is the run's to run: no pass needs to wake for it.
    if (claim !== null) run!.scheduled(pendingRow(id, spec, dueAt, runAt, payload, createdAt, claim));
    else if (this.timer.sooner(runAt)) tx.afterCommit(() => this.wakeAt(runAt));
    return id;
  }

  /** Cancel the pending jobs of a kind for a subject, in the caller's transaction; returns how many. */
  async cancel(tx: Tx, kind: string, subjectId: string): Promise<number> {
    return (await this.table.cancel(tx, kind, subjectId, this.clocks.real())).length;
  }

  /** The earliest due time (on the shop's clock) of a subject's pending jobs of a kind, or null; in the caller's transaction (or the store outside one). */
  nextDue(q: Reader, kind: string, subjectId: string): Promise<number | null> {
    return this.table.nextDue(q, kind, subjectId);
  }

  /** Start running due jobs: the first pass comes at once (overdue jobs run in due order), then as the timer says. */
  start(opts: StartOptions = {}): void {
    this.stopped = false;
    const real = this.clocks.real();
    this.voidBefore = opts.sole ? real + this.limits.leaseMs : Number.MIN_SAFE_INTEGER;
    this.nextRereadAt = real;
    this.arm(real);
  }

  /**
   * Stop: no new pass; the pass and the advances running now end after their batch; async runs in flight finish
   * (within their deadlines); then every claim this process still holds is released, so that another process
   * may take those jobs at once. Pending jobs stay in the table.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.timer.clear();
    await this.passing?.catch(() => undefined);
    await Promise.all([...this.advances].map((a) => a.catch(() => undefined)));
    await this.runner.drain();
    try {
      await this.runner.releaseAll();
    } catch (err) {
      this.log.error('cannot release job claims at shutdown; they lapse after the lease', { error: String((err as Error)?.message ?? err) });
    }
    this.notifyIdle();
  }

  /**
   * Run a shop's jobs of a mode due by the moment `upTo` returns (run in the transaction that claims them, which
   * may write there), in due order, with those they create; each runs inside `around` (in its transaction, at
   * its due time, never earlier than a job already run). Async jobs are awaited. Resolves with the number of runs.
   */
  async runDueUpTo(shopId: string, mode: Mode, upTo: (tx: Tx) => Promise<number>, around: Around): Promise<number> {
    const run = runShopJobs(this.shopRun, shopId, mode, upTo, around);
    this.advances.add(run);
    try {
      return await run;
    } finally {
      this.advances.delete(run);
      // Jobs the run did not get to, or that moved closer with the clock: the next wake is read again.
      this.wakeAt(this.clocks.real());
    }
  }

  /** Run every job due now in real time and wait until they (and any async ones) finished; returns how many ran. */
  async runDue(): Promise<number> {
    let total = 0;
    for (;;) {
      const ran = await this.pass();
      total += ran;
      await this.idle();
      if (ran === 0) return total;
    }
  }

  /** Resolves when no pass runs and no async job is in flight here; for tests and shutdown. */
  idle(): Promise<void> {
    if (this.stopped || (this.passing === null && !this.runner.busy())) return Promise.resolve();
    return new Promise<void>((resolve) => this.idleWaiters.push(resolve)).then(() => this.idle());
  }

  /** What this process holds, for diagnostics: no job is kept in memory, only claims, runs and the next wake. */
  stats(): { asyncRunning: number; claimsHeld: number; advances: number; nextWakeAt: number } {
    return { asyncRunning: this.runner.count(), claimsHeld: this.runner.claims(), advances: this.advances.size, nextWakeAt: this.timer.at };
  }

  /**
   * Claims lapsing by the time returned count as free at real time `now`: `now` itself, or, for a sole server
   * shortly after its start, every claim made before the start.
   */
  private threshold(now: number): number {
    return Math.max(now, this.voidBefore - 1);
  }

  /** Wake no later than real time `at`. */
  private wakeAt(at: number): void {
    if (this.timer.sooner(at)) this.arm(at);
  }

  /** Arm the one timer for the earliest of `at` and the next re-read (only ever earlier than it is armed). */
  private arm(at: number): void {
    if (!this.stopped) this.timer.arm(Math.min(at, this.nextRereadAt));
  }

  /** Run a pass, or ask the one running now for another round; resolves with the jobs it ran (or started). */
  private pass(): Promise<number> {
    if (this.stopped) return Promise.resolve(0);
    if (this.passing) {
      this.again = true; // the running pass loops once more, from a fresh reading of the clock
      return this.passing;
    }
    const p = (async (): Promise<number> => {
      let total = 0;
      try {
        do {
          this.again = false;
          const started = this.clocks.real();
          try {
            this.nextRereadAt = started + this.limits.rereadMs;
            this.starved = false;
            total += await runPass(this.pass_, started);
          } catch (err) {
            // The table is the truth: what did not run stays pending there, and the next pass takes it.
            if (!this.stopped) this.log.error('cannot run due jobs', { error: String((err as Error)?.message ?? err) });
            this.again = false;
          }
          await this.rearm(started); // a caller that joined during the re-arm is owed a pass too
        } while (this.again && !this.stopped);
      } finally {
        this.passing = null; // in the turn of the loop's last check: a later pass() never joins an ended pass
        this.notifyIdle();
      }
      return total;
    })();
    this.passing = p;
    return p;
  }

  /**
   * After a pass begun at real time `started`: arm the timer at the earliest run_at a pass could take (one read
   * of the index). Rows due by `started` that are still there were left on purpose (held here, or waiting for a
   * slot: the end of a run asks for a pass): the re-read covers them.
   */
  private async rearm(started: number): Promise<void> {
    if (this.stopped) return;
    let next: number | null = null;
    try {
      next = await this.table.nextRunAt(this.store, this.threshold(this.clocks.real()));
    } catch (err) {
      if (!this.stopped) this.log.error('cannot read the next due job', { error: String((err as Error)?.message ?? err) });
    }
    this.arm(next === null || next <= started ? this.nextRereadAt : next);
  }

  /** An async run ended here: if a pass left due async jobs for want of a slot, run another. */
  private settled(): void {
    if (!this.stopped && this.starved) {
      this.starved = false;
      this.wakeAt(this.clocks.real());
    }
    this.notifyIdle();
  }

  private notifyIdle(): void {
    if (!this.stopped && (this.passing !== null || this.runner.busy())) return;
    for (const w of this.idleWaiters.splice(0)) w();
  }
}

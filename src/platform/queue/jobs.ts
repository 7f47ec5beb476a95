import { randomUUID } from 'node:crypto';
import type { Reader, Store, Tx } from '../storage/store';
import type { Clocks, Mode } from '../clock';
import type { Logger } from '../log';
import { CANCEL, DEFAULT_LIMITS, FIRST_KEY, INSERT, NEXT_DUE, NEXT_RUN_AT, runOf, type Around, type Claim, type JobKey, type JobRow, type JobSpec, type SchedulerLimits, type StartOptions } from './jobs-table';
import { AsyncRunner, type AsyncJobKind } from './async-runner';
import { Executor, MAX_ATTEMPTS, type JobHandler, type JobKindOptions } from './executor';
import { runShopJobs } from './shop-run';

export type { Job, JobSpec, SchedulerLimits, StartOptions } from './jobs-table';
export type { AsyncJobKind } from './async-runner';
export type { JobHandler, JobKindOptions } from './executor';

/** setTimeout's longest delay; a wake further away is armed again on the way. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The durable scheduler. The jobs table is the truth and the only place jobs live; the process holds the time
 * of its next wake (one timer) and the claims it holds, nothing it could not read again.
 *
 * A pass runs the due query (pending, run_at <= now, claim free or lapsed; the partial index `jobs_run` in
 * (run_at, id) order) a page at a time (executor.ts). On SQLite each page is read in the transaction that runs
 * it: sync jobs run and are marked done there; async jobs are claimed there (process id, a fresh token,
 * claim_until a lease ahead). On PostgreSQL the page is claimed first, in one `FOR UPDATE SKIP LOCKED` statement
 * at READ COMMITTED, and its sync jobs then run in SERIALIZABLE transactions that name the claim's token. Async
 * jobs run outside once claimed, renewing their claim, then complete in a write that names the token
 * (async-runner.ts); a kind may keep limits of its own (`admit`: a webhook's receiver and shop), and a job at its
 * limit stays due for a later pass. A job whose claim lapsed (its process died) is taken again.
 *
 * The one timer is armed at the earliest run_at a pass could take (one indexed read after each pass), moved
 * earlier after a commit that schedules an earlier job, and never later than `rereadMs` ahead: jobs written by
 * other processes (admin commands, other nodes) and claims that lapsed are found by that periodic re-read.
 * Its deadline is kept on the monotonic clock: real time may jump (a clock step, a test's fake clock), and a
 * timer armed before the jump still fires when its delay is over.
 */
export class Scheduler {
  /** This process's id in the claims it writes: random per scheduler (one per process). */
  readonly processId: string = randomUUID();
  private readonly exec: Executor;
  private readonly limits: SchedulerLimits;
  private timer: NodeJS.Timeout | null = null;
  /** When the timer fires: in real time (for stats) and on the monotonic clock (what decides). */
  private wakeReal = Infinity;
  private wakeDue = Infinity;
  /** When the table is read again at the latest, whatever this process knows. */
  private nextRereadAt = 0;
  /** The pass running now, and whether another was asked for meanwhile. */
  private passing: Promise<number> | null = null;
  private again = false;
  private readonly advances = new Set<Promise<number>>();
  private idleWaiters: Array<() => void> = [];
  /** The timer's: a pass, or a round more of the one running. */
  private readonly fire = (): void => {
    this.timer = null;
    this.wakeReal = this.wakeDue = Infinity;
    if (this.exec.stopped) return;
    if (this.passing) this.again = true;
    else this.passing = this.passes();
  };

  constructor(
    private readonly store: Store,
    private readonly clocks: Clocks,
    private readonly log: Logger,
    limits: Partial<SchedulerLimits> = {},
  ) {
    this.limits = { ...DEFAULT_LIMITS, ...limits };
    if (!(this.limits.leaseMs > 0)) throw new Error(`cannot start the scheduler: a job lease of ${this.limits.leaseMs} ms is not positive`);
    const runner = new AsyncRunner(store, clocks, log, this.limits.maxAsyncRunning, this.limits.leaseMs, {
      fail: (row, err, at, token) => this.exec.failInTx(row, err, at, token),
      settled: () => {
        if (this.exec.starved && !this.exec.stopped) {
          this.exec.starved = false;
          this.wake(-Infinity);
        }
        if (this.idleWaiters.length > 0) this.notifyIdle();
      },
    });
    this.exec = new Executor(store, clocks, log, runner, this.processId, this.limits, (runAt) => this.wake(runAt));
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
    const payload = JSON.stringify(spec.payload ?? {});
    const real = this.clocks.real();
    const run = this.advances.size > 0 ? runOf(tx) : undefined;
    const claim: Claim | null =
      run && dueAt <= run.dueBy && spec.shopId === run.shopId && spec.mode === run.mode ? { by: run.by, token: run.token, until: real + this.limits.leaseMs } : null;
    // Fields named one by one: a spread of the caller's spec (whose shape varies) cost more than the INSERT's binding.
    const { kind, subjectId, shopId, mode } = spec;
    const r = (await tx.get<{ id: number; run_at: number }>(INSERT, kind, subjectId, shopId, mode, dueAt, dueAt, shopId, mode, payload, real, claim?.by ?? null, claim?.token ?? null, claim?.until ?? null))!;
    const id = Number(r.id);
    this.exec.seq++;
    if (claim !== null) {
      // A job the run claimed is the run's to run: no pass needs to wake for it.
      const row: JobRow = { id, kind, subject_id: subjectId, shop_id: shopId, mode, due_at: dueAt, run_at: r.run_at, attempt: 0, payload, state: 'pending', last_error: null, created_at: real, finished_at: null, claimed_by: claim.by, claim_token: claim.token, claim_until: claim.until };
      run!.scheduled(row);
    } else if (performance.now() + r.run_at - real < this.wakeDue) {
      tx.afterCommit(this.wake.bind(this, r.run_at));
    }
    return id;
  }

  /** Cancel the pending jobs of a kind for a subject, in the caller's transaction; returns how many. */
  async cancel(tx: Tx, kind: string, subjectId: string): Promise<number> {
    this.exec.cancels++;
    return (await tx.run(CANCEL, this.clocks.real(), subjectId, kind)).changes;
  }

  /** The earliest due time (on the shop's clock) of a subject's pending jobs of a kind, or null; in the caller's transaction (or the store outside one). */
  async nextDue(q: Reader, kind: string, subjectId: string): Promise<number | null> {
    return (await q.get<{ due: number | null }>(NEXT_DUE, subjectId, kind))?.due ?? null;
  }

  /** Start running due jobs: the first pass comes at once (overdue jobs run in due order), then as the timer says. */
  start(opts: StartOptions = {}): void {
    this.exec.stopped = false;
    const real = this.clocks.real();
    this.exec.voidBefore = opts.sole ? real + this.limits.leaseMs : Number.MIN_SAFE_INTEGER;
    this.nextRereadAt = real;
    this.wake(real);
  }

  /**
   * Stop: no new pass; the pass and the advances running now end after their batch; async runs in flight finish
   * (within their deadlines); then every claim this process still holds is released, so that another process
   * may take those jobs at once. Pending jobs stay in the table.
   */
  async stop(): Promise<void> {
    this.exec.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.wakeReal = this.wakeDue = Infinity;
    await this.passing?.catch(() => undefined);
    await Promise.all([...this.advances].map((a) => a.catch(() => undefined)));
    await this.exec.runner.drain();
    try {
      await this.exec.runner.releaseAll();
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
    const run = runShopJobs(this.exec, shopId, mode, upTo, around);
    this.advances.add(run);
    try {
      return await run;
    } finally {
      this.advances.delete(run);
      // Jobs the run did not get to, or that moved closer with the clock: the next wake is read again.
      this.wake(-Infinity);
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
    if (this.exec.stopped || (this.passing === null && this.exec.runner.inflight.size === 0)) return Promise.resolve();
    return new Promise<void>((resolve) => this.idleWaiters.push(resolve)).then(() => this.idle());
  }

  /** What this process holds, for diagnostics: no job is kept in memory, only claims, runs and the next wake. */
  stats(): { asyncRunning: number; claimsHeld: number; advances: number; nextWakeAt: number } {
    return { asyncRunning: this.exec.runner.inflight.size, claimsHeld: this.exec.runner.claims(), advances: this.advances.size, nextWakeAt: this.wakeReal };
  }

  /** Wake no later than real time `at` (nor than the next re-read): the one timer only ever moves earlier. */
  private wake(at: number): void {
    if (this.exec.stopped) return;
    const when = Math.min(at, this.nextRereadAt);
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, when - this.clocks.real()));
    const due = performance.now() + delay;
    if (due >= this.wakeDue) return;
    if (this.timer) clearTimeout(this.timer);
    this.wakeReal = when;
    this.wakeDue = due;
    this.timer = setTimeout(this.fire, delay);
    this.timer.unref();
  }

  /** Run a pass, or ask the one running now for another round; resolves with the jobs it ran (or started). */
  private pass(): Promise<number> {
    if (this.exec.stopped) return Promise.resolve(0);
    if (this.passing) {
      this.again = true; // the running pass loops once more, from a fresh reading of the clock
      return this.passing;
    }
    return (this.passing = this.passes());
  }

  /** Rounds of a pass, each over the jobs due when it began, a page at a time (yielding to the event loop after `sliceMs`). */
  private async passes(): Promise<number> {
    let total = 0;
    try {
      do {
        this.again = false;
        const started = this.clocks.real();
        this.nextRereadAt = started + this.limits.rereadMs;
        this.exec.starved = false;
        try {
          let after: JobKey = FIRST_KEY;
          let slice = performance.now();
          while (!this.exec.stopped) {
            const out = this.store.engine === 'postgres' ? await this.exec.pagePg(started, after) : await this.exec.runBatch([], 0, { token: null, page: { now: started, after } });
            total += out.ran;
            const last = out.list[out.reached - 1];
            if (last) after = { runAt: last.run_at, id: last.id };
            if (out.list.length < this.limits.batch && out.reached >= out.list.length) break;
            if (performance.now() - slice > this.limits.sliceMs) {
              await new Promise<void>((resolve) => setImmediate(resolve));
              slice = performance.now();
            }
          }
        } catch (err) {
          // The table is the truth: what did not run stays pending there, and the next pass takes it.
          if (!this.exec.stopped) this.log.error('cannot run due jobs', { error: String((err as Error)?.message ?? err) });
          this.again = false;
        }
        // The next wake: the earliest run_at a round could take (one read of the index). Rows due by the round's
        // start that are still there were left on purpose (held here, or waiting for a slot: the end of a run
        // asks for a pass): the re-read covers them. A caller that joined during this read is owed a round too.
        if (this.exec.stopped) break;
        let next: number | undefined;
        try {
          next = (await this.store.get<{ run_at: number }>(NEXT_RUN_AT, Math.max(this.clocks.real(), this.exec.voidBefore - 1)))?.run_at;
        } catch (err) {
          if (!this.exec.stopped) this.log.error('cannot read the next due job', { error: String((err as Error)?.message ?? err) });
        }
        this.wake(next !== undefined && next > started ? next : Infinity);
      } while (this.again && !this.exec.stopped);
    } finally {
      this.passing = null; // in the turn of the loop's last check: a later pass() never joins an ended pass
      if (this.idleWaiters.length > 0) this.notifyIdle();
    }
    return total;
  }

  private notifyIdle(): void {
    if (!this.exec.stopped && (this.passing !== null || this.exec.runner.inflight.size > 0)) return;
    for (const w of this.idleWaiters.splice(0)) w();
  }
}

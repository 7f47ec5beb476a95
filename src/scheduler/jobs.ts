import type { Reader, Store, Tx } from '../db/store';
import type { Clocks, Mode } from './clock';
import type { Logger } from '../log';
import { TimerWheel, type TimerHandle } from './timer-wheel';
import { JobsTable, atOrBefore, type JobKey, type JobRow } from './jobs-table';
import { AsyncRunner, type AsyncJobKind } from './async-runner';
import { Executor, MAX_ATTEMPTS, type JobHandler, type JobKindOptions } from './executor';
import { DEFAULT_LIMITS, type SchedulerLimits } from './limits';
import { runShopJobs, type FreshJob, type ShopRunDeps } from './shop-run';

export type { Job } from './jobs-table';
export type { AsyncJobKind } from './async-runner';
export type { JobHandler, JobKindOptions } from './executor';
export { MAX_ATTEMPTS } from './executor';
export type { SchedulerLimits } from './limits';

/** What a state change asks for: run `kind` on `subjectId` at `dueAt` (on the shop's clock in test mode). */
export interface JobSpec {
  kind: string;
  subjectId: string;
  shopId: string | null;
  mode: Mode;
  dueAt: number;
  payload?: Record<string, unknown>;
}

/** setTimeout's longest delay; a wake further away is re-armed on the way. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The durable scheduler. The jobs table is the truth; a timing wheel holds the pending jobs up to a covered
 * key (about `horizonMs` ahead, less when that many would not fit) and one unref'd setTimeout wakes for the
 * wheel's earliest bucket or the next sweep. Fired jobs are run in due order, in batches of savepoints.
 */
export class Scheduler {
  private readonly exec: Executor;
  private readonly table: JobsTable;
  private readonly limits: SchedulerLimits;
  private readonly wheel: TimerWheel<number>;
  /** Jobs in memory: their wheel entry, or null once fired (waiting in `ready` or running). */
  private readonly tracked = new Map<number, TimerHandle | null>();
  /** Every pending job at or before this key is tracked. */
  private covered: JobKey = { runAt: -Infinity, id: 0 };
  /** The last refill stopped at its batch limit, so more may be due before `covered.runAt` suggests. */
  private coveredPartial = false;
  /** While a refill reads the table: jobs up to here that are scheduled meanwhile go on the wheel too. */
  private loadingTo: JobKey | null = null;
  /** The sweep or refill reading the table now (one at a time). */
  private loading: Promise<void> | null = null;
  private ready: JobKey[] = [];
  private readonly runner: AsyncRunner;
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  private nextSweepAt = 0;
  /** A slice of ready jobs is running; `pumped` settles when it is over. */
  private pumping = false;
  private pumped: Promise<void> = Promise.resolve();
  /** Reads of async jobs just finished, whose retries go back on the wheel when they answer. */
  private readonly settling = new Set<Promise<void>>();
  private stopped = true;
  /** Shops (`shop/mode`) whose due jobs an advance is running: the wheel leaves their jobs to it. */
  private readonly advancing = new Map<string, number>();
  /** Bumped by every schedule(), so a shop's advance notices jobs created by the job it just ran. */
  private scheduleSeq = 0;
  private idleWaiters: Array<() => void> = [];
  private readonly shopRun: ShopRunDeps;
  /** Advances listening for the jobs scheduled on their shop (`shop/mode`), so they need not re-read the table. */
  private readonly watchers = new Map<string, Set<(key: FreshJob) => void>>();

  constructor(
    private readonly store: Store,
    private readonly clocks: Clocks,
    private readonly log: Logger,
    limits: Partial<SchedulerLimits> = {},
  ) {
    this.limits = { ...DEFAULT_LIMITS, ...limits };
    this.table = new JobsTable();
    this.wheel = new TimerWheel<number>({ now: clocks.real });
    this.exec = new Executor(store, clocks, log, this.table, this.limits, {
      seq: () => this.scheduleSeq,
      ran: (id) => this.tracked.delete(id),
      retry: (key) => this.offer(key),
    });
    this.runner = new AsyncRunner(store, clocks, log, this.limits.maxAsyncRunning, {
      fail: (row, err, pin) => this.exec.failInTx(row, err, pin),
      settled: (id) => this.finished(id),
    });
    this.shopRun = {
      store,
      clocks,
      table: this.table,
      exec: this.exec,
      runner: this.runner,
      limits: this.limits,
      seq: () => this.scheduleSeq,
      untrack: (id) => this.untrack(id),
      watch: (shopId, mode, sink) => {
        const key = `${shopId}/${mode}`;
        const set = this.watchers.get(key) ?? new Set();
        set.add(sink);
        this.watchers.set(key, set);
        return () => {
          set.delete(sink);
          if (set.size === 0) this.watchers.delete(key);
        };
      },
    };
    clocks.onAdvance((shopId) => this.retime(shopId));
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

  /** Write a job in the caller's transaction; the wheel learns of it after commit. Returns the job id. */
  async schedule(tx: Tx, spec: JobSpec): Promise<number> {
    if (!Number.isFinite(spec.dueAt)) throw new Error(`cannot schedule job "${spec.kind}": due time ${spec.dueAt} is not a number`);
    const dueAt = Math.round(spec.dueAt);
    const runAt = this.clocks.toReal(spec.shopId, spec.mode, dueAt);
    const payload = JSON.stringify(spec.payload ?? {});
    const createdAt = this.clocks.real();
    // Fields named one by one: a spread of the caller's spec (whose shape varies) cost more than the INSERT's binding.
    const id = await this.table.insert(tx, spec.kind, spec.subjectId, spec.shopId, spec.mode, dueAt, runAt, payload, createdAt);
    this.scheduleSeq++;
    const watching = this.watchers.size > 0 ? this.watchers.get(`${spec.shopId}/${spec.mode}`) : undefined;
    if (watching) {
      const row: JobRow = {
        id,
        kind: spec.kind,
        subject_id: spec.subjectId,
        shop_id: spec.shopId,
        mode: spec.mode,
        due_at: dueAt,
        run_at: runAt,
        attempt: 0,
        payload,
        state: 'pending',
        last_error: null,
        created_at: createdAt,
        finished_at: null,
      };
      watching.forEach((sink) => sink({ id, dueAt, row }));
    }
    // While the shop's test clock advances, the advance runs its jobs and puts those still waiting back on
    // the wheel when it ends (retime): offering each now would only make the wheel fire it for nothing.
    if (spec.mode !== 'test' || !this.advancing.has(`${spec.shopId}/${spec.mode}`)) tx.afterCommit(() => this.offer({ id, runAt }));
    return id;
  }

  /** Cancel the pending jobs of a kind for a subject, in the caller's transaction; returns how many. */
  async cancel(tx: Tx, kind: string, subjectId: string): Promise<number> {
    const ids = await this.table.cancel(tx, kind, subjectId, this.clocks.real());
    if (ids.length > 0) tx.afterCommit(() => ids.forEach((id) => this.untrack(id)));
    return ids.length;
  }

  /** The earliest due time (on the shop's clock) of a subject's pending jobs of a kind, or null; in the caller's transaction (or the store outside one). */
  nextDue(q: Reader, kind: string, subjectId: string): Promise<number | null> {
    return this.table.nextDue(q, kind, subjectId);
  }

  /** Load the pending jobs of the horizon and start firing; overdue ones run at once, in due order. */
  start(): void {
    this.stopped = false;
    this.nextSweepAt = 0;
    this.arm(this.clocks.real());
  }

  /** Stop firing and wait for running async jobs (bounded by their deadlines); pending jobs stay in the table. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Infinity;
    // The batch running now commits; what is left of the ready jobs stays pending in the table.
    await this.pumped;
    await this.runner.drain();
    await Promise.all([...this.settling]);
    await this.loading?.catch(() => undefined);
    this.wheel.clear();
    this.tracked.clear();
    this.ready = [];
    this.covered = { runAt: -Infinity, id: 0 };
    this.notifyIdle();
  }

  /**
   * Run every job of one shop's mode due on its clock, in due order, including jobs those jobs create; each
   * runs with the clock reading its due time. Async jobs are started in order and awaited before it returns
   * (their completions may create more due jobs). Resolves with the number of runs.
   */
  async runDueForShop(shopId: string, mode: Mode): Promise<number> {
    const key = `${shopId}/${mode}`;
    this.advancing.set(key, (this.advancing.get(key) ?? 0) + 1);
    try {
      return await runShopJobs(this.shopRun, shopId, mode);
    } finally {
      const n = this.advancing.get(key)! - 1;
      if (n > 0) this.advancing.set(key, n);
      else this.advancing.delete(key);
      // Jobs the wheel fired meanwhile were left to the advance; put the ones still waiting back.
      if (mode === 'test') await this.retime(shopId);
    }
  }

  /** Fire every job due now in real time and wait until they (and any async ones) finished; returns how many ran. */
  async runDue(): Promise<number> {
    let total = 0;
    for (;;) {
      const ran = await this.wake();
      total += ran;
      await this.idle();
      // Jobs those jobs scheduled reach the wheel once their batch is durable (its after-commit hooks).
      await this.store.whenDurable();
      if (ran === 0) return total;
    }
  }

  /** Resolves when no fired job waits or runs; for tests and shutdown. */
  idle(): Promise<void> {
    if (this.stopped || (this.ready.length === 0 && !this.pumping && !this.runner.busy() && this.settling.size === 0)) return Promise.resolve();
    return new Promise<void>((resolve) => this.idleWaiters.push(resolve)).then(() => this.idle());
  }

  /** Jobs in memory and running, for diagnostics. */
  stats(): { tracked: number; inWheel: number; ready: number; asyncRunning: number } {
    return { tracked: this.tracked.size, inWheel: this.wheel.size, ready: this.ready.length, asyncRunning: this.runner.count() };
  }

  /** Put a job in the wheel if it falls within the covered range (else the table keeps it until a refill). */
  private offer(key: JobKey): void {
    if (this.stopped || !(atOrBefore(key, this.covered) || (this.loadingTo !== null && atOrBefore(key, this.loadingTo)))) return;
    const had = this.tracked.get(key.id);
    // null: fired and queued or running; whoever runs it re-offers a retry.
    if (had === null) return;
    if (had !== undefined) this.wheel.cancel(had);
    this.tracked.set(key.id, this.wheel.add(key.runAt, key.id));
    this.arm(key.runAt);
  }

  private untrack(id: number): void {
    const e = this.tracked.get(id);
    if (e !== undefined && e !== null) this.wheel.cancel(e);
    this.tracked.delete(id);
  }

  /** After a shop's test clock moved: re-time its tracked jobs and load those that came within the covered range. */
  private async retime(shopId: string): Promise<void> {
    if (this.stopped) return;
    const rows = await this.table.testJobsOfShop(this.store, shopId, this.covered.runAt, this.limits.batch);
    if (this.stopped) return;
    if (rows.length === this.limits.batch) {
      const last = rows[rows.length - 1];
      if (atOrBefore(last, this.covered)) {
        this.covered = last;
        this.coveredPartial = true;
      }
    }
    for (const r of rows) this.offer(r);
  }

  /** Run a sweep or refill, or join the one reading the table now. */
  private load(fn: () => Promise<void>): Promise<void> {
    return (this.loading ??= fn().finally(() => {
      this.loading = null;
    }));
  }

  /** Fill the wheel from the table up to the horizon, or as far as the memory limit allows (through load()). */
  private async refill(now: number): Promise<void> {
    const target = now + this.limits.horizonMs;
    while (this.tracked.size + this.limits.batch <= this.limits.maxLoaded) {
      if (this.stopped) return;
      if (!this.coveredPartial && this.covered.runAt >= target) return;
      const after = this.covered.runAt === -Infinity ? { runAt: -8.64e15, id: 0 } : this.covered;
      // A job committed while the read is on its way may be missing from it: offer() takes such jobs in.
      this.loadingTo = { runAt: target, id: Number.MAX_SAFE_INTEGER };
      let rows: JobKey[];
      try {
        rows = await this.table.next(this.store, after, target, this.limits.batch);
      } finally {
        this.loadingTo = null;
      }
      if (this.stopped) return;
      const full = rows.length === this.limits.batch;
      this.covered = full ? rows[rows.length - 1] : { runAt: target, id: Number.MAX_SAFE_INTEGER };
      this.coveredPartial = full;
      for (const r of rows) this.offer(r);
      // A backlog is loaded a batch at a time as the wheel drains; the rest stays in the table.
      if (!full || this.tracked.size >= this.limits.batch * 4) return;
    }
  }

  /** The sweep: refill, and take in overdue jobs nobody told the wheel about (written by another process). */
  private async sweep(now: number): Promise<void> {
    this.nextSweepAt = now + this.limits.sweepMs;
    await this.refill(now);
    const overdue = await this.table.overdue(this.store, now, this.limits.batch);
    if (this.stopped) return;
    for (const key of overdue) {
      if (!this.tracked.has(key.id) && !this.runner.running(key.id)) {
        this.tracked.set(key.id, this.wheel.add(key.runAt, key.id));
      }
    }
  }

  /** Timer body: sweep or refill if it is time, move the wheel, queue what fired, run it. Resolves with jobs fired. */
  private async wake(): Promise<number> {
    const now = this.clocks.real();
    try {
      if (now >= this.nextSweepAt) {
        // A refill under way finishes first: the sweep itself must still run, for the overdue jobs.
        while (this.loading && now >= this.nextSweepAt) await this.loading.catch(() => undefined);
        await (now >= this.nextSweepAt ? this.load(() => this.sweep(now)) : this.loading);
      } else if (this.coveredPartial ? this.tracked.size < this.limits.batch * 2 : this.covered.runAt < now + this.limits.horizonMs / 2) {
        await this.load(() => this.refill(now));
      }
    } catch (err) {
      // The wheel still fires what it holds; the next sweep reads the table again.
      if (!this.stopped) this.log.error('cannot load due jobs', { error: String((err as Error)?.message ?? err) });
    }
    if (this.stopped) return 0;
    const fired: JobKey[] = [];
    this.wheel.advance((id, runAt) => {
      this.tracked.set(id, null);
      fired.push({ runAt, id });
    }, now);
    if (fired.length > 0) {
      this.ready.push(...fired);
      this.ready.sort((a, b) => a.runAt - b.runAt || a.id - b.id);
      this.pump();
    }
    return fired.length;
  }

  private onTimer(): void {
    this.timer = null;
    this.timerAt = Infinity;
    if (this.stopped) return;
    void this.wake().then(
      () => this.arm(Infinity),
      (err: unknown) => {
        this.log.error('cannot run due jobs', { error: String((err as Error)?.message ?? err) });
        this.arm(Infinity);
      },
    );
  }

  /** Arm the one timer for the earliest of: `at`, the wheel's next bucket, the next sweep. */
  private arm(at: number): void {
    if (this.stopped) return;
    const when = Math.min(at, this.wheel.nextDue(), this.nextSweepAt);
    if (this.timer && when >= this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = when;
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, when - this.clocks.real()));
    this.timer = setTimeout(() => this.onTimer(), delay);
    this.timer.unref();
  }

  /** Run ready jobs in slices of `sliceMs`, yielding between slices so the server keeps answering. */
  private pump(): void {
    if (this.pumping || this.stopped) return;
    this.pumping = true;
    this.pumped = this.pumpSlice();
  }

  /** One slice of pump(); never rejects. */
  private async pumpSlice(): Promise<void> {
    const started = performance.now();
    try {
      while (this.ready.length > 0 && !this.stopped && performance.now() - started < this.limits.sliceMs) {
        const keys = this.ready.splice(0, this.limits.batch);
        try {
          await this.runKeys(keys);
        } catch (err) {
          // The table is the truth: what did not run stays pending there, and the sweep brings it back.
          for (const k of keys) if (this.tracked.get(k.id) === null) this.tracked.delete(k.id);
          this.log.error('cannot run due jobs', { jobs: keys.length, error: String((err as Error)?.message ?? err) });
        }
        if (this.coveredPartial && this.tracked.size < this.limits.batch * 2) {
          const now = this.clocks.real();
          await this.load(() => this.refill(now));
        }
      }
    } catch (err) {
      if (!this.stopped) this.log.error('cannot load due jobs', { error: String((err as Error)?.message ?? err) });
    } finally {
      this.pumping = false;
    }
    if (this.ready.length > 0 && !this.stopped) setImmediate(() => this.pump());
    else {
      this.arm(Infinity);
      this.notifyIdle();
    }
  }

  private async runKeys(keys: JobKey[]): Promise<void> {
    const rows: JobRow[] = [];
    for (const k of keys) {
      const row = await this.table.get(this.store, k.id);
      if (row && row.state === 'pending' && !this.runner.running(row.id) && !this.advancing.has(`${row.shop_id}/${row.mode}`)) rows.push(row);
      else this.tracked.delete(k.id);
    }
    // Stopped meanwhile: the rows stay pending in the table.
    for (let i = 0; i < rows.length && !this.stopped; ) {
      const kind = this.exec.kinds.get(rows[i].kind);
      if (kind && 'async' in kind) void this.runner.start(rows[i++], kind.async, null);
      else i += (await this.exec.runSyncBatch(rows, i, null, -Infinity, false)).consumed;
    }
  }

  private finished(id: number): void {
    this.tracked.delete(id);
    if (this.stopped) {
      this.notifyIdle();
      return;
    }
    // A failed async run that was rescheduled: put its retry back on the wheel (idle() waits for this read).
    const settle: Promise<void> = this.table
      .get(this.store, id)
      .then(
        (row) => {
          if (row && row.state === 'pending') this.offer({ id, runAt: row.run_at });
        },
        (err: unknown) => {
          if (!this.stopped) this.log.error('cannot read a finished job', { job_id: id, error: String((err as Error)?.message ?? err) });
        },
      )
      .finally(() => {
        this.settling.delete(settle);
        this.notifyIdle();
      });
    this.settling.add(settle);
  }

  private notifyIdle(): void {
    if (!this.stopped && (this.ready.length > 0 || this.pumping || this.runner.busy() || this.settling.size > 0)) return;
    for (const w of this.idleWaiters.splice(0)) w();
  }

}


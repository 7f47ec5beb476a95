import type { Store, Tx } from '../db/store';
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
  private ready: JobKey[] = [];
  private readonly runner: AsyncRunner;
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  private nextSweepAt = 0;
  private pumping = false;
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
    this.table = new JobsTable(store);
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
  schedule(tx: Tx, spec: JobSpec): number {
    if (!Number.isFinite(spec.dueAt)) throw new Error(`cannot schedule job "${spec.kind}": due time ${spec.dueAt} is not a number`);
    const dueAt = Math.round(spec.dueAt);
    const runAt = this.clocks.toReal(spec.shopId, spec.mode, dueAt);
    const payload = JSON.stringify(spec.payload ?? {});
    if (!tx.db.inTransaction) throw new Error(`cannot schedule job "${spec.kind}" outside a transaction`);
    const createdAt = this.clocks.real();
    // Fields named one by one: a spread of the caller's spec (whose shape varies) cost more than the INSERT's binding.
    const id = this.table.insert(spec.kind, spec.subjectId, spec.shopId, spec.mode, dueAt, runAt, payload, createdAt);
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
  cancel(tx: Tx, kind: string, subjectId: string): number {
    const ids = this.table.cancel(tx.db, kind, subjectId, this.clocks.real());
    if (ids.length > 0) tx.afterCommit(() => ids.forEach((id) => this.untrack(id)));
    return ids.length;
  }

  /** The earliest due time (on the shop's clock) of a subject's pending jobs of a kind, or null; in the caller's transaction. */
  nextDue(tx: Tx, kind: string, subjectId: string): number | null {
    return this.table.nextDue(tx.db, kind, subjectId);
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
    await this.runner.drain();
    this.wheel.clear();
    this.tracked.clear();
    this.ready = [];
    this.covered = { runAt: -Infinity, id: 0 };
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
      if (mode === 'test') this.retime(shopId);
    }
  }

  /** Fire every job due now in real time and wait until they (and any async ones) finished; returns how many ran. */
  async runDue(): Promise<number> {
    let total = 0;
    for (;;) {
      const ran = this.wake();
      total += ran;
      await this.idle();
      // Jobs those jobs scheduled reach the wheel once their batch is durable (its after-commit hooks).
      await this.store.whenDurable();
      if (ran === 0) return total;
    }
  }

  /** Resolves when no fired job waits or runs; for tests and shutdown. */
  idle(): Promise<void> {
    if (this.stopped || (this.ready.length === 0 && !this.runner.busy())) return Promise.resolve();
    return new Promise<void>((resolve) => this.idleWaiters.push(resolve)).then(() => this.idle());
  }

  /** Jobs in memory and running, for diagnostics. */
  stats(): { tracked: number; inWheel: number; ready: number; asyncRunning: number } {
    return { tracked: this.tracked.size, inWheel: this.wheel.size, ready: this.ready.length, asyncRunning: this.runner.count() };
  }

  /** Put a job in the wheel if it falls within the covered range (else the table keeps it until a refill). */
  private offer(key: JobKey): void {
    if (this.stopped || !atOrBefore(key, this.covered)) return;
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
  private retime(shopId: string): void {
    if (this.stopped) return;
    const rows = this.table.testJobsOfShop(shopId, this.covered.runAt, this.limits.batch);
    if (rows.length === this.limits.batch) {
      const last = rows[rows.length - 1];
      if (atOrBefore(last, this.covered)) {
        this.covered = last;
        this.coveredPartial = true;
      }
    }
    for (const r of rows) this.offer(r);
  }

  /** Fill the wheel from the table up to the horizon, or as far as the memory limit allows. */
  private refill(now: number): void {
    const target = now + this.limits.horizonMs;
    while (this.tracked.size + this.limits.batch <= this.limits.maxLoaded) {
      if (!this.coveredPartial && this.covered.runAt >= target) return;
      const rows = this.table.next(this.covered.runAt === -Infinity ? { runAt: -8.64e15, id: 0 } : this.covered, target, this.limits.batch);
      const full = rows.length === this.limits.batch;
      this.covered = full ? rows[rows.length - 1] : { runAt: target, id: Number.MAX_SAFE_INTEGER };
      this.coveredPartial = full;
      for (const r of rows) this.offer(r);
      // A backlog is loaded a batch at a time as the wheel drains; the rest stays in the table.
      if (!full || this.tracked.size >= this.limits.batch * 4) return;
    }
  }

  /** The sweep: refill, and take in overdue jobs nobody told the wheel about (written by another process). */
  private sweep(now: number): void {
    this.nextSweepAt = now + this.limits.sweepMs;
    this.refill(now);
    for (const key of this.table.overdue(now, this.limits.batch)) {
      if (!this.tracked.has(key.id) && !this.runner.running(key.id)) {
        this.tracked.set(key.id, this.wheel.add(key.runAt, key.id));
      }
    }
  }

  /** Timer body: sweep or refill if it is time, move the wheel, queue what fired, run it. Returns jobs fired. */
  private wake(): number {
    const now = this.clocks.real();
    if (now >= this.nextSweepAt) this.sweep(now);
    else if (this.coveredPartial ? this.tracked.size < this.limits.batch * 2 : this.covered.runAt < now + this.limits.horizonMs / 2) this.refill(now);
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
    this.wake();
    this.arm(Infinity);
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
    const started = performance.now();
    try {
      while (this.ready.length > 0 && performance.now() - started < this.limits.sliceMs) {
        const keys = this.ready.splice(0, this.limits.batch);
        try {
          this.runKeys(keys);
        } catch (err) {
          // The table is the truth: what did not run stays pending there, and the sweep brings it back.
          for (const k of keys) if (this.tracked.get(k.id) === null) this.tracked.delete(k.id);
          this.log.error('cannot run due jobs', { jobs: keys.length, error: String((err as Error)?.message ?? err) });
        }
        if (this.coveredPartial && this.tracked.size < this.limits.batch * 2) this.refill(this.clocks.real());
      }
    } finally {
      this.pumping = false;
    }
    if (this.ready.length > 0) setImmediate(() => this.pump());
    else {
      this.arm(Infinity);
      this.notifyIdle();
    }
  }

  private runKeys(keys: JobKey[]): void {
    const rows: JobRow[] = [];
    for (const k of keys) {
      const row = this.table.get(k.id);
      if (row && row.state === 'pending' && !this.runner.running(row.id) && !this.advancing.has(`${row.shop_id}/${row.mode}`)) rows.push(row);
      else this.tracked.delete(k.id);
    }
    for (let i = 0; i < rows.length; ) {
      const kind = this.exec.kinds.get(rows[i].kind);
      if (kind && 'async' in kind) void this.runner.start(rows[i++], kind.async, null);
      else i += this.exec.runSyncBatch(rows, i, null, -Infinity, false).consumed;
    }
  }

  private finished(id: number): void {
    this.tracked.delete(id);
    const row = this.table.get(id);
    // A failed async run that was rescheduled: put its retry back on the wheel.
    if (row && row.state === 'pending') this.offer({ id, runAt: row.run_at });
    this.notifyIdle();
  }

  private notifyIdle(): void {
    if (this.ready.length > 0 || this.runner.busy()) return;
    for (const w of this.idleWaiters.splice(0)) w();
  }

}


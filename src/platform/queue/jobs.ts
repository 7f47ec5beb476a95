import { randomUUID } from 'node:crypto';
import type { Reader, Store, Tx } from '../storage/store';
import type { Clocks, Mode } from '../clock';
import type { Logger } from '../log';
import { CANCEL, CLAIM, CLAIM_SHOP, DEFAULT_LIMITS, FIRST_KEY, INSERT, NEXT_DUE, NEXT_RUN_AT, RELEASE_SHOP, RENEW_SHOP, runOf, SHOP_DUE, type Around, type Claim, type JobKey, type JobRow, type JobSpec, type RunClaim, type SchedulerLimits, type StartOptions } from './jobs-table';
import { AsyncRunner, type AsyncJobKind } from './async-runner';
import { Executor, MAX_ATTEMPTS, toJob, type JobHandler, type JobKindOptions, type Refetch } from './executor';

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
 * (run_at, id) order) a page at a time (executor.ts: on SQLite a page's sync jobs run, and its async ones are
 * claimed, in the transaction that reads it; on PostgreSQL the page is claimed first, `FOR UPDATE SKIP LOCKED` at
 * READ COMMITTED, and its sync jobs run in SERIALIZABLE transactions naming the claim's token). Async jobs run
 * outside once claimed, renewing their claim, then complete in a write naming the token (async-runner.ts); a kind
 * may keep limits of its own (`admit`), and a job at its limit stays due for a later pass. A job whose claim
 * lapsed (its process died) is taken again.
 *
 * The one timer is armed at the earliest run_at a pass could take (one indexed read after each pass), moved
 * earlier after a commit that schedules an earlier job, and never later than `rereadMs` ahead: jobs written by
 * other processes and lapsed claims are found by that re-read. Its deadline is on the monotonic clock: real time
 * may jump (a clock step, a test's fake clock), and a timer armed before the jump still fires on time.
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

  /** A kind registered twice is a start-up error. */
  register(kind: string, handler: JobHandler, opts: JobKindOptions = {}): void {
    this.exec.addKind(kind, { sync: handler, maxAttempts: opts.maxAttempts ?? MAX_ATTEMPTS });
  }

  /** A kind whose work happens outside any transaction (an HTTP call): see AsyncJobKind. */
  registerAsync<R>(kind: string, spec: AsyncJobKind<R>, opts: JobKindOptions = {}): void {
    this.exec.addKind(kind, { async: spec as AsyncJobKind<unknown>, maxAttempts: opts.maxAttempts ?? MAX_ATTEMPTS });
  }

  /**
   * Write a job in the caller's transaction; returns the job id. Once it commits, the timer wakes for it if it
   * is due before the wake armed; a job due now that a pass's job writes is run by that pass's next round, and
   * one a shop's run would run (runShopJobs) is written claimed by the run.
   */
  async schedule(tx: Tx, spec: JobSpec): Promise<number> {
    if (!Number.isFinite(spec.dueAt)) throw new Error(`cannot schedule job "${spec.kind}": due time ${spec.dueAt} is not a number`);
    const dueAt = Math.round(spec.dueAt);
    const payload = JSON.stringify(spec.payload ?? {});
    const real = this.clocks.real();
    const run = this.advances.size > 0 ? runOf(tx) : undefined;
    const claim: Claim | null =
      run && dueAt <= run.dueBy && spec.shopId === run.shopId && spec.mode === run.mode ? { by: run.by, token: run.token, until: real + this.limits.leaseMs } : null;
    // Named one by one: a spread of the caller's spec (whose shape varies) cost more than the INSERT's binding.
    const { kind, subjectId, shopId, mode } = spec;
    const r = (await tx.get<{ id: number; run_at: number }>(INSERT, kind, subjectId, shopId, mode, dueAt, dueAt, shopId, mode, payload, real, claim?.by ?? null, claim?.token ?? null, claim?.until ?? null))!;
    const id = Number(r.id);
    this.exec.seq++;
    if (claim !== null) {
      const row: JobRow = { id, kind, subject_id: subjectId, shop_id: shopId, mode, due_at: dueAt, run_at: r.run_at, attempt: 0, payload, state: 'pending', last_error: null, created_at: real, finished_at: null, claimed_by: claim.by, claim_token: claim.token, claim_until: claim.until };
      run!.scheduled(row);
    } else if (r.run_at <= real && tx === this.exec.passTx) {
      this.again = true;
    } else if (performance.now() + r.run_at - real < this.wakeDue) {
      tx.afterCommit(this.wake.bind(this, r.run_at));
    }
    return id;
  }

  /** In the caller's transaction; returns how many. */
  async cancel(tx: Tx, kind: string, subjectId: string): Promise<number> {
    this.exec.cancels++;
    return (await tx.run(CANCEL, this.clocks.real(), subjectId, kind)).changes;
  }

  /** Schedules `spec` unless a pending job of its kind and subject is due by then; a later one is cancelled. */
  async ensureDueBy(tx: Tx, spec: JobSpec): Promise<void> {
    const due = (await tx.get<{ due: number | null }>(NEXT_DUE, spec.subjectId, spec.kind))?.due ?? null;
    if (due !== null && due <= spec.dueAt) return;
    if (due !== null) await this.cancel(tx, spec.kind, spec.subjectId);
    await this.schedule(tx, spec);
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
      if (this.exec.stopped) return total;
      // A pass running now loops once more, from a fresh reading of the clock; its count is this one's.
      if (this.passing) this.again = true;
      const ran = await (this.passing ??= this.passes());
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
    return { asyncRunning: this.exec.runner.inflight.size, claimsHeld: this.exec.runner.held.size, advances: this.advances.size, nextWakeAt: this.wakeReal };
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
    this.timer = setTimeout(this.fire, delay).unref();
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
        // The next wake: the earliest run_at a round could take (one read of the index), read by the last round
        // (one that another follows, asked for meanwhile, leaves it to that one). Rows due by the round's start
        // that are still there were left on purpose (held here, or waiting for a slot: the end of a run asks for
        // a pass): the re-read covers them. A caller that joined during this read is owed a round too.
        if (this.exec.stopped) break;
        if (this.again) continue;
        let next: number | undefined;
        try {
          next = (await this.store.get<{ run_at: number }>(NEXT_RUN_AT, this.exec.threshold()))?.run_at;
        } catch (err) {
          if (!this.exec.stopped) this.log.error('cannot read the next due job', { error: String((err as Error)?.message ?? err) });
        }
        this.wake(next !== undefined && next > started ? next : Infinity);
      } while (this.again && !this.exec.stopped);
    } finally {
      this.passing = null; // in the turn of the loop's last check: a later runDue() never joins an ended pass
      if (this.idleWaiters.length > 0) this.notifyIdle();
    }
    return total;
  }

  private notifyIdle(): void {
    if (!this.exec.stopped && (this.passing !== null || this.exec.runner.inflight.size > 0)) return;
    for (const w of this.idleWaiters.splice(0)) w();
  }
}

/** True when row `a` runs before row `b`: due order, ties by id. */
function before(a: { due_at: number; id: number }, b: { due_at: number; id: number }): boolean {
  return a.due_at < b.due_at || (a.due_at === b.due_at && a.id < b.id);
}

/**
 * The body of Scheduler.runDueUpTo. `upTo` runs in the transaction that claims those jobs (a token of its own, renewed while the run goes on), so
 * what it writes commits with the claims and every process's passes leave the jobs to this run. Jobs its jobs
 * schedule for the shop by that moment, and retries within it, are written claimed too (Scheduler.schedule) and
 * handed to the run, which merges those due within the read's range into the rows still to run instead of
 * reading again (a year of subscription charges spent most of its time there). Jobs others schedule meanwhile
 * wait for the next read; a due job another process holds is waited for until it ends or its claim lapses; what
 * the run did not run is released at the end.
 */
export async function runShopJobs(d: Executor, shopId: string, mode: Mode, upTo: (tx: Tx) => Promise<number>, around: Around): Promise<number> {
  const fresh: JobRow[] = [];
  const claim: RunClaim = { by: d.processId, token: randomUUID(), shopId, mode, dueBy: 0, around, scheduled: (row) => fresh.push(row) };
  const token = claim.token;
  await d.store.tx(async (tx) => {
    claim.dueBy = await upTo(tx);
    await tx.run(CLAIM_SHOP, d.processId, token, d.clocks.real() + d.limits.leaseMs, shopId, mode, claim.dueBy, d.threshold());
  });
  d.advanceTokens.add(token);
  let renewing: Promise<unknown> | null = null;
  const renew = setInterval(() => {
    if (renewing || !d.store.isOpen) return;
    const until = d.clocks.real() + d.limits.leaseMs;
    renewing = d.store
      .write((tx) => tx.run(RENEW_SHOP, until, shopId, mode, token))
      .catch((err: unknown) => d.log.error('cannot renew the claims of a clock advance', { shop_id: shopId, error: String((err as Error)?.message ?? err) }))
      .finally(() => (renewing = null));
  }, Math.max(1, Math.floor(d.limits.leaseMs / 3))).unref();
  try {
    return await runAll(d, claim, fresh);
  } finally {
    fresh.length = 0;
    clearInterval(renew);
    await renewing;
    // What is left claimed (a job the run did not get to, a retry beyond it) is anyone's again at once.
    if (d.store.isOpen) await d.store.tx((tx) => tx.run(RELEASE_SHOP, shopId, mode, token));
    d.advanceTokens.delete(token);
  }
}

interface RunState {
  claim: RunClaim;
  fresh: JobRow[];
  ran: number;
  /** The due time the run has reached: a job runs at its own, never earlier than one already run. */
  reached: number;
  /** Runs this run waits for: async jobs it started, runs a pass started. */
  waiting: Array<Promise<void>>;
  sliceStart: number;
  /** The last row of the current read when it was cut at the batch size: later jobs wait for the next read. */
  bound: JobRow | null;
}

/** True when the run may run the row: unclaimed, lapsed, or claimed by the run. */
function mine(st: RunState, r: JobRow, threshold: number): boolean {
  return r.claim_until === null || r.claim_until <= threshold || r.claim_token === st.claim.token;
}

async function runAll(d: Executor, claim: RunClaim, fresh: JobRow[]): Promise<number> {
  const { shopId, mode } = claim;
  const st: RunState = { claim, fresh, ran: 0, reached: -Infinity, waiting: [], sliceStart: performance.now(), bound: null };
  const refetch = makeRefetch(d, st);
  while (!d.stopped) {
    await yieldAfterSlice(d, st);
    const now = await d.clocks.now(d.store, shopId, mode);
    // Everything scheduled so far is in the table and this read sees it.
    fresh.length = 0;
    const read = await d.store.all<JobRow>(SHOP_DUE, shopId, mode, now, d.limits.batch);
    const threshold = d.threshold();
    st.bound = read.length === d.limits.batch ? read[read.length - 1] : null;
    const list: JobRow[] = [];
    let heldElsewhere = false;
    for (const r of read) {
      const inFlight = d.runner.inflight.get(r.id);
      // Already running here (started by a pass): wait for that run instead of starting another.
      if (inFlight) st.waiting.push(inFlight);
      else if (mine(st, r, threshold)) list.push(r);
      else heldElsewhere = true;
    }
    if (list.length > 0) await runList(d, st, list, refetch);
    else if (st.waiting.length > 0) await Promise.all(st.waiting.splice(0));
    else if (!heldElsewhere) break;
    // Due jobs another process holds: they end there, or their claim lapses and they are this run's.
    else await new Promise<void>((resolve) => setTimeout(resolve, d.limits.heldPollMs));
  }
  await Promise.all(st.waiting);
  return st.ran;
}

/** A long run yields between batches so other shops' requests are still answered. */
async function yieldAfterSlice(d: Executor, st: RunState): Promise<void> {
  if (performance.now() - st.sliceStart <= d.limits.sliceMs) return;
  await new Promise<void>((resolve) => setImmediate(resolve));
  st.sliceStart = performance.now();
}

/** Run the rows of one read in due order: async jobs one by one, sync jobs in shared transactions. */
async function runList(d: Executor, st: RunState, first: JobRow[], refetch: Refetch): Promise<void> {
  let list = first;
  let seq = d.seq;
  let i = 0;
  while (i < list.length && !d.stopped) {
    if (d.seq !== seq) {
      // Jobs were scheduled outside a batch (an async job's start, a request while this run yielded).
      list = await refetch(d.store, list.slice(i), false);
      i = 0;
      seq = d.seq;
      if (list.length === 0) break;
    }
    const row = list[i];
    const kind = d.kinds.get(row.kind)?.async;
    if (kind) {
      const at = Math.max(st.reached, row.due_at);
      // Claimed in a transaction of its own (a run a pass started is joined), then started.
      const c = d.claimOf();
      const threshold = d.threshold();
      const had = d.runner.inflight.get(row.id);
      i++;
      if (!had && (await d.store.write((tx) => tx.run(CLAIM, c.by, c.token, c.until, row.id, threshold, st.claim.token))).changes === 0) continue;
      st.reached = at;
      st.waiting.push(had ?? d.runner.start(row, toJob(row), kind, c.token, { run: st.claim, at }));
      st.ran++;
      continue;
    }
    // Sync jobs up to the next async one share a transaction (of at most txMs); one that schedules jobs has
    // them merged into the rows still to run, and the batch goes on with that list.
    const out = await d.runBatch(list, i, { token: st.claim.token, run: st.claim, floor: st.reached, refetch });
    st.ran += out.ran;
    st.reached = out.moment;
    list = out.list;
    i = out.reached;
    if (out.stale) seq = d.seq;
    await yieldAfterSlice(d, st);
  }
}

/**
 * The run's Refetch: the jobs scheduled since the last look and due within this read's range join the rows still
 * to run, in due order. `q` is the store when no batch asks; `whole`: the batch asking scheduled them all.
 */
function makeRefetch(d: Executor, st: RunState): Refetch {
  return async (q: Reader, rest: JobRow[], whole: boolean): Promise<JobRow[]> => {
    const due = await d.clocks.now(q, st.claim.shopId, st.claim.mode);
    const threshold = d.threshold();
    const bound = st.bound;
    for (const f of st.fresh.splice(0)) {
      if (f.due_at > due || (bound && before(bound, f))) continue;
      // A job of a batch that commits whole exists as it was written. Otherwise read it again: a job rolled back
      // with an attempt of its batch is gone, and its id may belong to a later job.
      const r = whole ? f : await q.get<JobRow>(`SELECT * FROM jobs WHERE id = ?`, f.id);
      if (!r || r.state !== 'pending' || r.due_at > due || d.runner.inflight.has(r.id) || !mine(st, r, threshold)) continue;
      if (bound && before(bound, r)) continue;
      insertSorted(rest, r);
    }
    return rest;
  };
}

/**
 * Put a row into a sorted list of up to a batch at its place (sorting the whole list again for every job that
 * schedules one cost more than the job's own statements); a row already there is left alone.
 */
function insertSorted(rest: JobRow[], r: JobRow): void {
  let lo = 0;
  let hi = rest.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (before(rest[mid], r)) lo = mid + 1;
    else hi = mid;
  }
  if (lo < rest.length && rest[lo].id === r.id) return;
  rest.splice(lo, 0, r);
}

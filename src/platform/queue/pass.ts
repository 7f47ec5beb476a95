import type { Store } from '../storage/store';
import type { Clocks } from '../clock';
import type { Logger } from '../log';
import { FIRST_KEY, toJob, type Claim, type JobKey, type JobRow, type JobsTable } from './jobs-table';
import type { AsyncJobKind, AsyncRunner } from './async-runner';
import type { Executor, BatchOutcome } from './executor';
import type { SchedulerLimits } from './limits';

/** What a pass uses of its scheduler. */
export interface PassDeps {
  store: Store;
  clocks: Clocks;
  log: Logger;
  table: JobsTable;
  exec: Executor;
  runner: AsyncRunner;
  limits: SchedulerLimits;
  /** Claims lapsing by the time returned count as free at real time `now` (Scheduler.threshold). */
  threshold(now: number): number;
  stopped(): boolean;
  /** Tokens of the advances running here: their jobs are theirs even when their claim looks lapsed. */
  advanceTokens: ReadonlySet<string>;
  /** Due async jobs were left for want of a slot: the end of a run should ask for another pass. */
  starved(): void;
}

/** An async job a page claimed, to start once its transaction committed; `own`: its kind has limits of its own. */
interface Claimed {
  row: JobRow;
  kind: AsyncJobKind<unknown>;
  token: string;
  own: boolean;
}

/**
 * One pass over the jobs due at real time `now`, a page of the due query at a time; yields to the event loop
 * between slices. Returns the jobs it ran or started.
 */
export async function runPass(d: PassDeps, now: number): Promise<number> {
  let after: JobKey = FIRST_KEY;
  let ran = 0;
  let sliceStart = performance.now();
  while (!d.stopped()) {
    const page = await runPage(d, now, after);
    ran += page.ran;
    if (page.last) after = { runAt: page.last.run_at, id: page.last.id };
    if (page.end) break;
    if (performance.now() - sliceStart > d.limits.sliceMs) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
  }
  return ran;
}

/**
 * One page of the due jobs after `after`. SQLite: the due query in the transaction that runs the page's sync jobs
 * and claims its async ones. PostgreSQL: the page is read, the jobs this process takes from it are claimed in one
 * statement (JobsTable.claimDue), then its sync jobs run in transactions that name the claim's token and its
 * async ones start under it. An async job of a kind with limits of its own (`admit`) whose limit is reached, or
 * of another kind when the runner has no slot free, is left due and unclaimed. Returns what it ran or started,
 * the last row it got to, and whether the due rows ended there.
 */
async function runPage(d: PassDeps, now: number, after: JobKey): Promise<{ ran: number; last: JobRow | null; end: boolean }> {
  const limit = d.limits.batch;
  const slots = d.runner.free();
  // Slots taken by kinds with limits of their own, by job id: kept across the tries of a batch, and given back
  // for the jobs a committed batch did not claim.
  const admitted = new Map<number, () => void>();
  const claim: Claim | null = d.store.engine === 'postgres' ? d.runner.newClaim() : null;
  const read = claim ? await d.table.due(d.store, now, d.threshold(d.clocks.real()), after, limit) : [];
  const rows = claim ? await claimTaken(d, read, admitted, slots, claim) : [];
  const outs: Array<BatchOutcome<Claimed>> = [];
  try {
    let from = 0;
    do {
      const out = await d.exec.runSyncBatch<Claimed>(rows, from, {
        run: null,
        floor: -Infinity,
        token: claim?.token,
        stopOnSchedule: false,
        select: claim ? undefined : (q) => d.table.due(q, now, d.threshold(d.clocks.real()), after, limit),
        // Held here already (a run in flight, an advance's job): the claim may look lapsed on a moved test clock.
        skip: (row) => !claim && held(d, row),
        onAsync: async (tx, row, kind, threshold, claimedSoFar) => {
          const own = kind.admit !== undefined;
          if (claim) return { row, kind, token: claim.token, own }; // taken and claimed already
          if (own ? !admitted.has(row.id) && !admit(admitted, row, kind) : claimedSoFar.filter((c) => !c.own).length >= slots) {
            // Left unclaimed in the table (for another process, or this one once a run ends).
            d.starved();
            return null;
          }
          const token = await d.runner.claim(tx, row, threshold, null);
          return token === null ? null : { row, kind, token, own };
        },
      });
      outs.push(out);
      from = out.reached;
    } while (claim && from < rows.length && !d.stopped());
  } catch (err) {
    for (const give of admitted.values()) give();
    if (claim) await releaseRows(d, rows, claim.token);
    throw err;
  }
  const ran = startClaimed(d, outs, admitted);
  const last = outs[outs.length - 1];
  if (claim) {
    if (last.reached < rows.length) await releaseRows(d, rows.slice(last.reached), claim.token);
    return { ran, last: read[read.length - 1] ?? null, end: read.length < limit };
  }
  return { ran, last: last.reached > 0 ? last.list[last.reached - 1] : null, end: last.list.length < limit && last.reached >= last.list.length };
}

/** A row this process holds already: a run in flight here, or an advance's job. */
function held(d: PassDeps, row: JobRow): boolean {
  return d.runner.running(row.id) || (row.claim_token !== null && d.advanceTokens.has(row.claim_token));
}

/**
 * PostgreSQL: of the due rows read, the ones this process takes (sync jobs, and async ones with a slot, whose
 * slots `admitted` records), claimed for `claim`; the rows the claim got (another node may have taken some).
 */
async function claimTaken(d: PassDeps, read: JobRow[], admitted: Map<number, () => void>, slots: number, claim: Claim): Promise<JobRow[]> {
  let shared = 0;
  const taken = read.filter((row) => {
    if (held(d, row)) return false;
    const kind = d.exec.kinds.get(row.kind);
    if (!kind || !('async' in kind)) return true;
    if (kind.async.admit ? admit(admitted, row, kind.async) : shared++ < slots) return true;
    d.starved();
    return false;
  });
  let rows: JobRow[] = [];
  try {
    if (taken.length > 0) rows = await d.table.claimDue(d.store, taken.map((r) => r.id), d.threshold(d.clocks.real()), claim, [...d.advanceTokens]);
  } finally {
    const got = new Set(rows.map((r) => r.id));
    for (const [id, give] of admitted) {
      if (got.has(id)) continue;
      give();
      admitted.delete(id);
    }
  }
  return rows.sort((a, b) => a.run_at - b.run_at || a.id - b.id);
}

/** Start the async runs a page claimed; give back the slots of the jobs it did not claim. Returns the jobs the page ran or started. */
function startClaimed(d: PassDeps, outs: Array<BatchOutcome<Claimed>>, admitted: Map<number, () => void>): number {
  let ran = 0;
  const starts: Array<{ c: Claimed; admittedRun: (() => void) | undefined }> = [];
  for (const out of outs) {
    for (const c of out.claimed) {
      starts.push({ c, admittedRun: admitted.get(c.row.id) });
      admitted.delete(c.row.id);
    }
    ran += out.ran + out.claimed.length;
  }
  for (const give of admitted.values()) give();
  for (const { c, admittedRun } of starts) void d.runner.start(c.row, c.kind, c.token, null, admittedRun);
  return ran;
}

/** Take the slot a kind with limits of its own has for the job; false when it has none free. */
function admit(admitted: Map<number, () => void>, row: JobRow, kind: AsyncJobKind<unknown>): boolean {
  const give = kind.admit!(toJob(row));
  if (give) admitted.set(row.id, give);
  return give !== null;
}

/** Give up a page's claim on rows it did not run (stopped, or its transaction failed): another pass may take them at once. */
async function releaseRows(d: PassDeps, rows: JobRow[], token: string): Promise<void> {
  if (rows.length === 0 || !d.store.isOpen) return;
  try {
    await d.store.tx(async (tx) => {
      for (const r of rows) await d.table.release(tx, r.id, token);
    });
  } catch (err) {
    d.log.error('cannot release job claims; they lapse after the lease', { error: String((err as Error)?.message ?? err) });
  }
}

// The pass's timer.

/** setTimeout's longest delay; a wake further away is re-armed on the way. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The scheduler's one timer. Its deadline is kept on the monotonic clock as well: real time may jump (a clock
 * step, a test's fake clock), and a timer armed before the jump still fires when its delay is over.
 */
export class WakeTimer {
  private timer: NodeJS.Timeout | null = null;
  /** The real time it was armed for, and the same moment on the monotonic clock. */
  private atReal = Infinity;
  private due = Infinity;

  constructor(
    private readonly realNow: () => number,
    private readonly fire: () => void,
  ) {}

  /** The real time the timer fires at (Infinity when not armed). */
  get at(): number {
    return this.atReal;
  }

  /** True when real time `at` comes before the timer fires (or none is armed). */
  sooner(at: number): boolean {
    return this.timer === null || performance.now() + Math.max(0, at - this.realNow()) < this.due;
  }

  /** Fire at real time `when`, unless the timer already fires sooner (it is only ever moved earlier). */
  arm(when: number): void {
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, when - this.realNow()));
    const due = performance.now() + delay;
    if (this.timer && due >= this.due) return;
    if (this.timer) clearTimeout(this.timer);
    this.atReal = when;
    this.due = due;
    this.timer = setTimeout(() => {
      this.clear();
      this.fire();
    }, delay);
    this.timer.unref();
  }

  /** Disarm. */
  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.atReal = Infinity;
    this.due = Infinity;
  }
}

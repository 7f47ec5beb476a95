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
 * and claims its async ones. PostgreSQL: the page is claimed first, in one statement (JobsTable.claimDue), then
 * its sync jobs run in transactions that name the claim's token and its async ones start under it. An async job
 * of a kind with limits of its own (`admit`) whose limit is reached, or of another kind when the runner has no
 * slot free, is left due and unclaimed. Returns what it ran or started, the last row it got to, and whether
 * the due rows ended there.
 */
async function runPage(d: PassDeps, now: number, after: JobKey): Promise<{ ran: number; last: JobRow | null; end: boolean }> {
  const limit = d.limits.batch;
  const slots = d.runner.free();
  // Slots taken by kinds with limits of their own, by job id: kept across the tries of a batch, and given back
  // for the jobs a committed batch did not claim.
  const admitted = new Map<number, () => void>();
  const claim: Claim | null = d.store.engine === 'postgres' ? d.runner.newClaim() : null;
  // The commits the page's rows may come from: durable before any async run makes its call (not the claim's own:
  // a claim lost in a crash only runs its job again).
  const seen = d.store.commits;
  let rows: JobRow[] = [];
  if (claim) rows = await d.table.claimDue(d.store, now, d.threshold(d.clocks.real()), after, limit, claim, d.runner.ids(), [...d.advanceTokens]);
  const leave = (): null => {
    d.starved();
    return null;
  };
  const outs: Array<BatchOutcome<Claimed>> = [];
  try {
    let from = 0;
    do {
      const out = await d.exec.runSyncBatch<Claimed>(rows, from, {
        pinShop: null,
        pinFloor: -Infinity,
        claim: null,
        token: claim?.token,
        stopOnSchedule: false,
        select: claim ? undefined : (q) => d.table.due(q, now, d.threshold(d.clocks.real()), after, limit),
        // Held here already (a run in flight, an advance's job): the claim may look lapsed on a moved test clock.
        skip: (row) => !claim && (d.runner.running(row.id) || (row.claim_token !== null && d.advanceTokens.has(row.claim_token))),
        onAsync: async (tx, row, kind, threshold, claimedSoFar) => {
          const own = kind.admit !== undefined;
          if (own ? !admitted.has(row.id) && !admit(admitted, row, kind) : claimedSoFar.filter((c) => !c.own).length >= slots) {
            // Left unclaimed in the table (for another process, or this one once a run ends).
            if (claim) await d.table.release(tx, row.id, claim.token);
            return leave();
          }
          const token = claim ? claim.token : await d.runner.claim(tx, row, threshold, null);
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
  const durable = starts.length > 0 ? d.store.whenDurable(seen) : null;
  if (durable) {
    try {
      await durable;
    } catch (err) {
      // Never durable: nothing starts, and the claims lapse after their lease.
      for (const s of starts) s.admittedRun?.();
      throw err;
    }
  }
  for (const { c, admittedRun } of starts) void d.runner.start(c.row, c.kind, c.token, null, admittedRun);
  const last = outs[outs.length - 1];
  if (claim) {
    if (last.reached < rows.length) await releaseRows(d, rows.slice(last.reached), claim.token);
    return { ran, last: rows[last.reached - 1] ?? null, end: rows.length < limit };
  }
  return { ran, last: last.reached > 0 ? last.list[last.reached - 1] : null, end: last.list.length < limit && last.reached >= last.list.length };
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

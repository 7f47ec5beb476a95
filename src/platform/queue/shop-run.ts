import { randomUUID } from 'node:crypto';
import type { Reader, Store, Tx } from '../storage/store';
import type { Clocks, Mode } from '../clock';
import type { Claim, JobRow, JobsTable } from './jobs-table';
import type { JobSpec } from './spec';
import type { Around, RunClaim } from './hooked-tx';
import type { AsyncRunner } from './async-runner';
import type { Executor, Refetch } from './executor';
import type { SchedulerLimits } from './limits';
import type { Logger } from '../log';

/** What a shop's run needs from the scheduler: its parts, its schedule counter, and its claims. */
export interface ShopRunDeps {
  /** Reads outside any transaction (a batch reads through its own). */
  store: Store;
  clocks: Clocks;
  table: JobsTable;
  exec: Executor;
  runner: AsyncRunner;
  limits: SchedulerLimits;
  log: Logger;
  /** This process's id, written in its claims. */
  processId: string;
  /** Claims lapsing by the time returned count as free at real time `now`. */
  threshold(now: number): number;
  /** True once the scheduler is stopping: the run ends after the batch it is in. */
  stopped(): boolean;
  /** Bumped by every schedule(): a change tells the run that a job it just ran created more. */
  seq(): number;
  /** While a run holds its claim: this process knows the token as its own (a pass leaves its jobs alone). */
  holding(token: string, on: boolean): void;
}

/** True when row `a` runs before row `b`: due order, ties by id. */
function before(a: { due_at: number; id: number }, b: { due_at: number; id: number }): boolean {
  return a.due_at < b.due_at || (a.due_at === b.due_at && a.id < b.id);
}

/**
 * The body of Scheduler.runDueUpTo: run every job of one shop's mode due by the moment `upTo` returns, in due
 * order, with the jobs they create; each inside `around` at its due time (never earlier than a job already run).
 * Resolves with the number of runs.
 *
 * `upTo` runs in the transaction that claims those jobs (a token of its own, renewed while the run goes on), so
 * what it writes commits with the claims and every process's passes leave the jobs to this run. Jobs its jobs
 * schedule for the shop by that moment, and retries within it, are written claimed too (Scheduler.schedule) and
 * handed to the run, which merges those due within the batch's range into the rows still to run instead of
 * reading the batch again (a year of subscription charges spent most of its time there). Jobs others schedule
 * meanwhile wait for the next read; a due job another process holds is waited for until it ends or its claim
 * lapses; what the run did not run is released at the end.
 */
export async function runShopJobs(d: ShopRunDeps, shopId: string, mode: Mode, upTo: (tx: Tx) => Promise<number>, around: Around): Promise<number> {
  let fresh: JobRow[] = [];
  const claim: RunClaim = { by: d.processId, token: randomUUID(), shopId, mode, dueBy: 0, around, scheduled: (row) => fresh.push(row) };
  const token = claim.token;
  await d.store.tx(async (tx) => {
    claim.dueBy = await upTo(tx);
    const real = d.clocks.real();
    await d.table.claimShopDue(tx, shopId, mode, claim.dueBy, d.threshold(real), { by: d.processId, token, until: real + d.limits.leaseMs });
  });
  d.holding(token, true);
  let renewing: Promise<void> | null = null;
  const renew = setInterval(() => {
    if (renewing || !d.store.isOpen) return;
    const until = d.clocks.real() + d.limits.leaseMs;
    renewing = d.store
      .write(async (tx) => d.table.renewShop(tx, shopId, mode, token, until))
      .catch((err: unknown) => d.log.error('cannot renew the claims of a clock advance', { shop_id: shopId, error: String((err as Error)?.message ?? err) }))
      .finally(() => {
        renewing = null;
      });
  }, Math.max(1, Math.floor(d.limits.leaseMs / 3)));
  renew.unref();
  try {
    return await runAll(d, claim, () => fresh.splice(0));
  } finally {
    fresh = [];
    clearInterval(renew);
    await renewing;
    // What is left claimed (a job the run did not get to, a retry beyond it) is anyone's again at once.
    if (d.store.isOpen) await d.store.tx(async (tx) => d.table.releaseShop(tx, shopId, mode, token));
    d.holding(token, false);
  }
}

/** What one run carries from batch to batch. */
interface RunState {
  shopId: string;
  mode: Mode;
  claim: RunClaim;
  ran: number;
  /** The due time the run has reached: a job runs at its own, never earlier than one already run. */
  reached: number;
  /** Runs this run waits for: async jobs it started, runs a pass started. */
  waiting: Array<Promise<void>>;
  sliceStart: number;
  /** The last row of the current read when it was cut at the batch size: later jobs wait for the next read. */
  bound: JobRow | null;
  /** True when this run may run the row: unclaimed, lapsed, or claimed by this run. */
  mine(r: JobRow, threshold: number): boolean;
}

async function runAll(d: ShopRunDeps, claim: RunClaim, takeFresh: () => JobRow[]): Promise<number> {
  const { shopId, mode } = claim;
  const st: RunState = {
    shopId,
    mode,
    claim,
    ran: 0,
    reached: -Infinity,
    waiting: [],
    sliceStart: performance.now(),
    bound: null,
    mine: (r, threshold) => r.claim_until === null || r.claim_until <= threshold || r.claim_token === claim.token,
  };
  const refetch = makeRefetch(d, st, takeFresh);
  for (;;) {
    if (d.stopped()) break;
    await yieldAfterSlice(d, st);
    const now = await d.clocks.now(d.store, shopId, mode);
    // Everything scheduled so far is in the table and this read sees it.
    takeFresh();
    const read = await d.table.dueForShop(d.store, shopId, mode, now, d.limits.batch);
    const threshold = d.threshold(d.clocks.real());
    st.bound = read.length === d.limits.batch ? read[read.length - 1] : null;
    const list: JobRow[] = [];
    let heldElsewhere = false;
    for (const r of read) {
      const inFlight = d.runner.joined(r.id);
      // Already running here (started by a pass): wait for that run instead of starting another.
      if (inFlight) st.waiting.push(inFlight);
      else if (st.mine(r, threshold)) list.push(r);
      else heldElsewhere = true;
    }
    if (list.length === 0) {
      if (st.waiting.length > 0) {
        await Promise.all(st.waiting.splice(0));
        continue;
      }
      if (!heldElsewhere) break;
      // Due jobs another process holds: they end there, or their claim lapses and they are this run's.
      await new Promise<void>((resolve) => setTimeout(resolve, d.limits.heldPollMs));
      continue;
    }
    await runList(d, st, list, refetch);
  }
  await Promise.all(st.waiting);
  return st.ran;
}

/** A long run yields between batches so other shops' requests are still answered. */
async function yieldAfterSlice(d: ShopRunDeps, st: RunState): Promise<void> {
  if (performance.now() - st.sliceStart <= d.limits.sliceMs) return;
  await new Promise<void>((resolve) => setImmediate(resolve));
  st.sliceStart = performance.now();
}

/** Run the rows of one read in due order: async jobs one by one, sync jobs in shared transactions. */
async function runList(d: ShopRunDeps, st: RunState, first: JobRow[], refetch: Refetch): Promise<void> {
  let list = first;
  let seq = d.seq();
  let i = 0;
  while (i < list.length && !d.stopped()) {
    if (d.seq() !== seq) {
      // Jobs were scheduled outside a batch (an async job's start, a request while this run yielded).
      list = await refetch(d.store, list.slice(i), false);
      i = 0;
      seq = d.seq();
      if (list.length === 0) break;
    }
    const row = list[i];
    const kind = d.exec.kinds.get(row.kind);
    if (kind && 'async' in kind) {
      const at = Math.max(st.reached, row.due_at);
      const started = await d.runner.claimAndStart(row, kind.async, { run: st.claim, at }, st.claim.token);
      i++;
      if (started) {
        st.reached = at;
        st.waiting.push(started.done);
        st.ran++;
      }
      continue;
    }
    // Sync jobs up to the next async one share a transaction (of at most txMs).
    const out = await d.exec.runSyncBatch(list, i, { run: st.claim, floor: st.reached, stopOnSchedule: true, refetch });
    st.ran += out.ran;
    st.reached = out.reached;
    if (out.stale) {
      // The batch merged the jobs it scheduled into the rows still to run: go on with that list instead
      // of reading the table again.
      list = out.rest;
      i = 0;
      seq = d.seq();
    } else {
      i += out.consumed;
    }
    await yieldAfterSlice(d, st);
  }
}

/**
 * The jobs scheduled since the last look that are due within this read's range join the rows still to run,
 * in due order. `whole`: they were all scheduled by the batch now running, which commits or rolls back as one.
 * `q`: the batch's transaction when a batch asks, else the store.
 */
function makeRefetch(d: ShopRunDeps, st: RunState, takeFresh: () => JobRow[]): Refetch {
  return async (q: Reader, rest: JobRow[], whole: boolean): Promise<JobRow[]> => {
    const due = await d.clocks.now(q, st.shopId, st.mode);
    const threshold = d.threshold(d.clocks.real());
    const bound = st.bound;
    for (const f of takeFresh()) {
      if (f.due_at > due || (bound && before(bound, f))) continue;
      // A job of a batch that commits whole exists as it was written. Otherwise read it again: a job rolled back
      // with its savepoint is gone, and its id may belong to a later job.
      const r = whole ? f : await d.table.get(q, f.id);
      if (!r || r.state !== 'pending' || r.due_at > due || d.runner.running(r.id) || !st.mine(r, threshold)) continue;
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

/** The row of a job just written (for the run that claimed it), as Scheduler.schedule wrote it. */
export function pendingRow(id: number, spec: JobSpec, dueAt: number, runAt: number, payload: string, createdAt: number, claim: Claim): JobRow {
  return {
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
    claimed_by: claim.by,
    claim_token: claim.token,
    claim_until: claim.until,
  };
}

import type { Reader, Store } from '../db/store';
import type { Clocks, Mode } from './clock';
import type { JobRow, JobsTable } from './jobs-table';
import type { AsyncRunner } from './async-runner';
import type { Executor, Refetch } from './executor';
import type { SchedulerLimits } from './limits';

/** A job just scheduled: its id, its due time on its shop's clock, and its row as written. */
export interface FreshJob {
  id: number;
  dueAt: number;
  row: JobRow;
}

/** What a shop's run needs from the scheduler: its parts, its schedule counter, and a way to drop a job from the wheel. */
export interface ShopRunDeps {
  /** Reads outside any transaction (a batch reads through its own). */
  store: Store;
  clocks: Clocks;
  table: JobsTable;
  exec: Executor;
  runner: AsyncRunner;
  limits: SchedulerLimits;
  /** Bumped by every schedule(): a change tells the run that a job it just ran created more. */
  seq(): number;
  untrack(id: number): void;
  /** Call `sink` with every job scheduled for this shop and mode until the returned function is called. */
  watch(shopId: string, mode: Mode, sink: (job: FreshJob) => void): () => void;
}

/** True when row `a` runs before row `b`: due order, ties by id. */
function before(a: { due_at: number; id: number }, b: { due_at: number; id: number }): boolean {
  return a.due_at < b.due_at || (a.due_at === b.due_at && a.id < b.id);
}

/**
 * Run every job of one shop's mode due on its clock, in due order, including jobs those jobs create (the
 * body of Scheduler.runDueForShop, which keeps the wheel off that shop meanwhile). Resolves with the number of runs.
 *
 * Due jobs are read from the table a batch at a time. A job that schedules another does not make the run read
 * the batch again (that cost grew with the batch on every such job: a year of subscription charges spent most
 * of its time there): the scheduler tells the run which jobs were scheduled, and those due within the batch's
 * range are read by id and merged into the rows still to run.
 */
export async function runShopJobs(d: ShopRunDeps, shopId: string, mode: Mode): Promise<number> {
  let fresh: FreshJob[] = [];
  const unwatch = d.watch(shopId, mode, (job) => fresh.push(job));
  try {
    return await runAll(d, shopId, mode, () => fresh.splice(0));
  } finally {
    unwatch();
    fresh = [];
  }
}

async function runAll(d: ShopRunDeps, shopId: string, mode: Mode, takeFresh: () => FreshJob[]): Promise<number> {
  let ran = 0;
  let pin = -Infinity;
  const waiting: Array<Promise<void>> = [];
  let sliceStart = performance.now();
  // The last row of the current read when it was cut at the batch size: later jobs wait for the next read.
  let bound: JobRow | null = null;

  // The jobs scheduled since the last look that are due within this read's range join the rows still to run,
  // in due order. `whole`: they were all scheduled by the batch now running, which commits or rolls back as one.
  // `q`: the batch's transaction when a batch asks, else the store.
  const refetch: Refetch = async (q: Reader, rest: JobRow[], whole: boolean): Promise<JobRow[]> => {
    const due = d.clocks.now(shopId, mode);
    const added: JobRow[] = [];
    for (const f of takeFresh()) {
      if (f.dueAt > due || (bound && before(bound, { due_at: f.dueAt, id: f.id }))) continue;
      // A job of a batch that commits whole exists as it was written. Otherwise read it again: a job rolled back
      // with its savepoint (or its request's body) is gone, and its id may belong to a later job.
      const r = whole ? f.row : await d.table.get(q, f.id);
      if (!r || r.state !== 'pending' || r.due_at > due || d.runner.running(r.id)) continue;
      if (bound && before(bound, r)) continue;
      d.untrack(r.id);
      added.push(r);
    }
    // A few rows join a sorted list of up to a batch: each goes in at its place (sorting the whole list again
    // for every job that schedules one cost more than the job's own statements).
    for (const r of added) {
      let lo = 0;
      let hi = rest.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (before(rest[mid], r)) lo = mid + 1;
        else hi = mid;
      }
      if (lo < rest.length && rest[lo].id === r.id) continue;
      rest.splice(lo, 0, r);
    }
    return rest;
  };

  for (;;) {
    if (performance.now() - sliceStart > d.limits.sliceMs) {
      // A long advance yields between batches so other shops' requests are still answered.
      await new Promise<void>((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
    const now = d.clocks.now(shopId, mode);
    // Everything scheduled so far is in the table and this read sees it.
    takeFresh();
    const read = await d.table.dueForShop(d.store, shopId, mode, now, d.limits.batch);
    bound = read.length === d.limits.batch ? read[read.length - 1] : null;
    let list: JobRow[] = [];
    for (const r of read) {
      const kind = d.exec.kinds.get(r.kind);
      // Already running (fired by the wheel): wait for that run instead of starting another.
      if (d.runner.running(r.id) && kind && 'async' in kind) waiting.push(d.runner.start(r, kind.async, null));
      else list.push(r);
    }
    if (list.length === 0) {
      if (waiting.length === 0) break;
      await Promise.all(waiting.splice(0));
      continue;
    }
    for (const r of list) d.untrack(r.id);
    let seq = d.seq();
    let i = 0;
    while (i < list.length) {
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
        pin = Math.max(pin, row.due_at);
        waiting.push(d.runner.start(row, kind.async, mode === 'test' ? { shopId, at: pin } : null));
        i++;
        ran++;
        continue;
      }
      // Sync jobs up to the next async one share a transaction (of at most txMs).
      const out = await d.exec.runSyncBatch(list, i, mode === 'test' ? shopId : null, pin, true, refetch);
      ran += out.ran;
      pin = out.pin;
      if (out.stale) {
        // The batch merged the jobs it scheduled into the rows still to run: go on with that list instead
        // of reading the table again.
        list = out.rest;
        i = 0;
        seq = d.seq();
      } else {
        i += out.consumed;
      }
      if (performance.now() - sliceStart > d.limits.sliceMs) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        sliceStart = performance.now();
      }
    }
  }
  return ran;
}

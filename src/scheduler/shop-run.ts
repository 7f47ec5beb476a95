import type { Clocks, Mode } from './clock';
import type { JobRow, JobsTable } from './jobs-table';
import type { AsyncRunner } from './async-runner';
import type { Executor } from './executor';
import type { SchedulerLimits } from './limits';

/** What a shop's run needs from the scheduler: its parts, its schedule counter, and a way to drop a job from the wheel. */
export interface ShopRunDeps {
  clocks: Clocks;
  table: JobsTable;
  exec: Executor;
  runner: AsyncRunner;
  limits: SchedulerLimits;
  /** Bumped by every schedule(): a change tells the run that a job it just ran created more. */
  seq(): number;
  untrack(id: number): void;
}

/**
 * Run every job of one shop's mode due on its clock, in due order, including jobs those jobs create (the
 * body of Scheduler.runDueForShop, which keeps the wheel off that shop meanwhile). Resolves with the number of runs.
 */
export async function runShopJobs(d: ShopRunDeps, shopId: string, mode: Mode): Promise<number> {
  let ran = 0;
  let pin = -Infinity;
  const waiting: Array<Promise<void>> = [];
  let sliceStart = performance.now();
  for (;;) {
    if (performance.now() - sliceStart > d.limits.sliceMs) {
      // A long advance yields between batches so other shops' requests are still answered.
      await new Promise<void>((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
    const now = d.clocks.now(shopId, mode);
    const rows: JobRow[] = [];
    for (const r of d.table.dueForShop(shopId, mode, now, d.limits.batch)) {
      const kind = d.exec.kinds.get(r.kind);
      // Already running (fired by the wheel): wait for that run instead of starting another.
      if (d.runner.running(r.id) && kind && 'async' in kind) waiting.push(d.runner.start(r, kind.async, null));
      else rows.push(r);
    }
    if (rows.length === 0) {
      if (waiting.length === 0) break;
      await Promise.all(waiting.splice(0));
      continue;
    }
    for (const r of rows) d.untrack(r.id);
    const seq = d.seq();
    let i = 0;
    while (i < rows.length && d.seq() === seq) {
      const row = rows[i];
      pin = Math.max(pin, row.due_at);
      const kind = d.exec.kinds.get(row.kind);
      if (kind && 'async' in kind) {
        waiting.push(d.runner.start(row, kind.async, mode === 'test' ? { shopId, at: pin } : null));
        i++;
        ran++;
        continue;
      }
      // Sync jobs up to the next async one share a transaction; when one schedules more, the batch
      // re-reads the shop's due order inside that transaction, and this row list is stale.
      const refetch = (): JobRow[] => {
        const due = d.table.dueForShop(shopId, mode, d.clocks.now(shopId, mode), d.limits.batch);
        for (const r of due) d.untrack(r.id);
        return due.filter((r) => !d.runner.running(r.id));
      };
      const out = d.exec.runSyncBatch(rows, i, mode === 'test' ? shopId : null, pin, true, refetch);
      i += out.consumed;
      ran += out.consumed;
      pin = out.pin;
      if (out.stale) break;
    }
  }
  return ran;
}

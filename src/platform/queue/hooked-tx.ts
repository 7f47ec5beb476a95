import type { Engine, Row, RunResult, Tx } from '../storage/store';
import { TX_BASE, type Mode } from '../clock';
import type { JobRow } from './jobs-table';

/**
 * A job's view of its savepoint: reads, writes and nested savepoints go to the savepoint; after-commit actions
 * are collected in `hooks`, so that a job rolled back to its savepoint leaves none behind.
 */
export class HookedTx implements Tx {
  constructor(
    private readonly sp: Tx,
    private readonly hooks: Array<() => void>,
  ) {}

  /** The transaction this view is of: what is kept for it (a run's claim, a clock's reading) reads the same here. */
  get [TX_BASE](): Tx {
    return this.sp;
  }

  get engine(): Engine {
    return this.sp.engine;
  }

  get<T = Row>(sql: string, ...params: unknown[]): Promise<T | undefined> {
    return this.sp.get<T>(sql, ...params);
  }

  all<T = Row>(sql: string, ...params: unknown[]): Promise<T[]> {
    return this.sp.all<T>(sql, ...params);
  }

  run(sql: string, ...params: unknown[]): Promise<RunResult> {
    return this.sp.run(sql, ...params);
  }

  savepoint<T>(fn: (tx: Tx) => Promise<T> | T): Promise<T> {
    // A nested savepoint's actions join this job's only if it is released (a throw in it drops them).
    return this.sp.savepoint(async (inner) => {
      const mine: Array<() => void> = [];
      const out = await fn(new HookedTx(inner, mine));
      for (const h of mine) this.hooks.push(h);
      return out;
    });
  }

  afterCommit(fn: () => void): void {
    this.hooks.push(fn);
  }
}

/** What wraps each job of a shop's run, in the job's transaction, at the moment the run has reached (`at`). */
export type Around = <T>(tx: Tx, at: number, body: () => Promise<T>) => Promise<T>;

/** The claim a shop's run (Scheduler.runDueUpTo) holds on the shop's jobs due by `dueBy`, as its jobs' transactions carry it. */
export interface RunClaim {
  /** The claiming process's id, and the run's token. */
  by: string;
  token: string;
  shopId: string;
  mode: Mode;
  /** On the shop's clock: jobs due by then are the run's to run, and so are those its jobs schedule by then. */
  dueBy: number;
  around: Around;
  /** A job was written claimed by the run (by one of its jobs), as the row stands. */
  scheduled(row: JobRow): void;
}

/** The run each transaction is running a job of: keyed by the transaction (a job's view of it reads the same). */
const runs = new WeakMap<object, RunClaim>();

/** The run whose job runs in `tx` now, if any. */
export function runOf(tx: Tx): RunClaim | undefined {
  return runs.get((tx as { [TX_BASE]?: Tx })[TX_BASE] ?? tx);
}

/** Run `body` in `tx` as a job of `run` at the moment `at`, wrapped in the run's `around`. */
export async function inRun<T>(tx: Tx, run: RunClaim, at: number, body: () => Promise<T>): Promise<T> {
  const key = (tx as { [TX_BASE]?: Tx })[TX_BASE] ?? tx;
  const before = runs.get(key);
  runs.set(key, run);
  try {
    return await run.around(tx, at, body);
  } finally {
    if (before === undefined) runs.delete(key);
    else runs.set(key, before);
  }
}

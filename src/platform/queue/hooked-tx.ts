import type { Engine, Row, RunResult, Tx } from '../storage/store';
import { TX_BASE } from '../clock';

/**
 * A job's view of its savepoint: reads, writes and nested savepoints go to the savepoint; after-commit actions
 * are collected in `hooks`, so that a job rolled back to its savepoint leaves none behind.
 */
export class HookedTx implements Tx {
  constructor(
    private readonly sp: Tx,
    private readonly hooks: Array<() => void>,
  ) {}

  /** The transaction this view is of: a clock pinned on it reads the same here. */
  get [TX_BASE](): Tx {
    return this.sp;
  }

  get engine(): Engine {
    return this.sp.engine;
  }

  get connection(): object {
    return this.sp.connection;
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

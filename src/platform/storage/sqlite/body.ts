import type Database from 'better-sqlite3';
import { cachedStmt } from './statements';
import type { Reader, Tx } from '../tx';
import { SqliteTx } from './tx';

/** A transaction body: it awaits nothing but its Tx. */
export type Body<T> = (tx: Tx) => Promise<T> | T;

/** The error of a body that waited on something other than its transaction; it is rolled back. */
export const AWAITED_OUTSIDE =
  'a transaction body awaited something other than its transaction (the network, a timer, another request, or a read through the store instead of its Tx); it would hold the write lock, so it was rolled back';

/**
 * Run one body. Its own awaits on its Tx settle within the current turn of the event loop (SQLite answers
 * at once); a body still running when the turn ends is waiting on something else, which would hold the
 * write lock for as long: it is failed with AWAITED_OUTSIDE and its Tx refuses any later call.
 */
export function runBody<T>(fn: Body<T>, tx: SqliteTx): Promise<T> | T {
  const out = fn(tx);
  if (!(out instanceof Promise)) return out;
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const watchdog = setImmediate(() => {
      if (done) return;
      done = true;
      tx.end();
      reject(new Error(AWAITED_OUTSIDE));
    });
    out.then(
      (value: T) => {
        if (done) return;
        done = true;
        clearImmediate(watchdog);
        resolve(value);
      },
      (err: unknown) => {
        if (done) return;
        done = true;
        clearImmediate(watchdog);
        reject(err);
      },
    );
  });
}

/**
 * This process's write lock on one connection: one transaction at a time, in the order asked; a read outside
 * a transaction takes it too, so that it waits for an open transaction instead of seeing its rows.
 */
export class WriteLock {
  private locked = false;
  private waiters: Array<() => void> = [];

  /** True while a transaction (or a waiting read) holds it. */
  get held(): boolean {
    return this.locked;
  }

  /** Take it: null when taken at once, else a promise that settles when it is ours. */
  take(): Promise<void> | null {
    if (!this.locked) {
      this.locked = true;
      return null;
    }
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  /** Hand it to the next waiter in line, or free it. */
  give(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.locked = false;
  }

  /** Run `read` once the lock is ours, and give it back. */
  async around<T>(read: () => T): Promise<T> {
    const wait = this.take();
    if (wait) await wait;
    try {
      return read();
    } finally {
      this.give();
    }
  }
}

/** Run `fn` over one snapshot of committed data on `db`, in a read transaction (see Store.snapshot). */
export async function readSnapshot<T>(db: Database.Database, lock: WriteLock, connection: object, fn: (q: Reader) => Promise<T> | T): Promise<T> {
  const wait = lock.take();
  if (wait) await wait;
  const tx = new SqliteTx(db, connection, []);
  try {
    cachedStmt(db, 'BEGIN DEFERRED').run();
    try {
      // The first read starts the snapshot; everything after reads the same.
      return await runBody(fn, tx);
    } finally {
      tx.end();
      if (db.inTransaction) cachedStmt(db, 'COMMIT').run();
    }
  } finally {
    lock.give();
  }
}

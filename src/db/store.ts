import type Database from 'better-sqlite3';
import { realpathSync } from 'node:fs';
import { createLogger, type Logger } from '../log';
import { Checkpointer } from './checkpointer';
import { cachedStmt } from './statements';
import { getRow, SqliteTx, type Reader, type Row, type Tx } from './tx';
import { WalSync } from './wal-sync';
import { ChangeSignal } from './change-signal';

export type { Reader, Row, RunResult, Tx } from './tx';
export { TX_ENDED } from './tx';

/** A transaction body: it awaits nothing but its Tx. */
export type Body<T> = (tx: Tx) => Promise<T> | T;

type Pending = {
  fn: Body<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  seen?: { seq?: number };
};

/** The stand-in body of a tx() made durable later: nobody waits on its promise, only its hooks run. */
const DETACHED: Pending = { fn: () => undefined, resolve: () => undefined, reject: () => undefined };

/** Error codes of the storage itself (as opposed to a body's own error). */
const STORAGE_CODES = /^SQLITE_(FULL|IOERR|CANTOPEN|READONLY)/;

/** Most transaction bodies one group commit holds; the rest wait for the next. */
const GROUP_LIMIT = 512;

/**
 * Waiting for another process's write lock (sync: 'store'): the group retries after these gaps, off the
 * event loop, and is refused (SQLITE_BUSY, a 503 to clients) once it has waited `total_ms`.
 */
export const BUSY_LIMITS = { first_retry_ms: 5, longest_retry_ms: 200, total_ms: 5000 };

/** The error of a body that waited on something other than its transaction; it is rolled back. */
export const AWAITED_OUTSIDE =
  'a transaction body awaited something other than its transaction (the network, a timer, another request, or a read through the store instead of its Tx); it would hold the write lock, so it was rolled back';

/** How a store makes its commits durable. */
export interface StoreOptions {
  /**
   * `sqlite` (default): SQLite syncs the WAL inside every COMMIT (`synchronous=FULL`), blocking the thread.
   * `store` (the server): SQLite writes commits to the WAL without syncing them (`synchronous=NORMAL`, which
   * still syncs checkpoints) and the store syncs the WAL file itself before anyone learns of a commit: after a
   * group commit on the thread pool, so the event loop goes on serving while the disk works; after tx() at
   * once. Checkpoints run on a thread of their own (checkpointer.ts). Only for a file database in WAL mode
   * whose every write goes through this store; otherwise `sqlite`.
   */
  sync?: 'sqlite' | 'store';
  /** Where a failed WAL sync, a failed checkpoint or a failed after-commit action is logged (default stderr). */
  log?: Logger;
}

/** A group committed, its bodies' outcomes waiting for the WAL sync that makes them durable. */
type Committed = {
  seq: number;
  batch: Pending[];
  outcomes: Array<{ ok: boolean; value: unknown; hooks: Array<() => void> }>;
};

/**
 * The one way to reach the database. `write` queues a body and commits every body queued in the same turn of
 * the event loop in one transaction (group commit), each in its own savepoint so that one failing body rolls
 * back only itself; `tx` runs a body in a transaction of its own. Bodies are async functions over a Tx, run
 * one after another; a body that awaits anything but its Tx is failed loudly (AWAITED_OUTSIDE) instead of
 * holding the write lock. Promises settle, and after-commit hooks run, only once the commit is durable, so a
 * response is sent only for data that survives a power loss.
 *
 * Reads outside a transaction (`get`, `all`) see committed data only: while a transaction is open they wait
 * for it. With `sync: 'store'` a commit is visible to reads a little before it is durable (while its WAL sync
 * runs). Anything that shows data to the outside world (a response, an SSE event, a webhook) therefore first
 * waits for `whenDurable()`, which is free when nothing is waiting for the disk. Groups keep committing while
 * a sync runs; one sync at a time covers every commit made before it started.
 */
export class Store implements Reader {
  private readonly db: Database.Database;
  /** The identity Tx.connection names; the same for every transaction of this store. */
  readonly connection: object = Object.freeze({});
  /** The database file ('' or ':memory:' for a database in memory). */
  readonly path: string;
  private queue: Pending[] = [];
  private scheduled = false;
  /** The write lock of this process: a transaction is open (or a read waits its turn behind one). */
  private locked = false;
  private lockWaiters: Array<() => void> = [];
  // Transaction control compiled once: db.exec parses its SQL again on every call, once per body under load.
  private readonly begin: Database.Statement;
  private readonly commit: Database.Statement;
  private readonly rollback: Database.Statement;
  private readonly savepoint: Database.Statement;
  private readonly release: Database.Statement;
  private readonly rollbackTo: Database.Statement;
  /** Syncs the WAL when this store does (sync: 'store'); null when SQLite does. */
  private readonly wal: WalSync | null = null;
  private readonly log: Logger;
  /** Commits made; commits known to be on disk. */
  private committedSeq = 0;
  private durableSeq = 0;
  /** Groups committed whose sync has not finished. */
  private awaiting: Committed[] = [];
  /** whenDurable() callers and the commit each waits for. */
  private waiters: Array<{ seq: number; resolve: () => void }> = [];
  /** Checkpoints the WAL on a thread when this store syncs it (sync: 'store'). */
  private checkpointer: Checkpointer | null = null;
  /** Wait for another process's write lock without blocking the thread (sync: 'store'). */
  private readonly busyAsync: boolean;
  /** When the group waiting for the write lock first found it taken; null when none waits. */
  private busySince: number | null = null;
  private busyRetry_ms = BUSY_LIMITS.first_retry_ms;
  /** The last write the storage refused (disk full, I/O error, lock held), until a commit succeeds again. */
  private failure: { code: string; message: string; at: number } | null = null;
  private signal: ChangeSignal | null = null;

  constructor(db: Database.Database, opts: StoreOptions = {}) {
    this.db = db;
    this.path = db.name;
    this.log = opts.log ?? STDERR_LOG;
    // Each body's savepoint journals the first copy of every page it changes so that it can roll back alone.
    // With temp files that journal spills to disk after 64 KiB (two writes per page, half of an insert's
    // cost); in memory it is a copy. It lives only until COMMIT and plays no part in crash recovery (the WAL
    // does), so durability is unchanged. Temporary tables and sorts stay in memory too.
    db.pragma('temp_store = MEMORY');
    this.begin = db.prepare('BEGIN IMMEDIATE');
    this.commit = db.prepare('COMMIT');
    this.rollback = db.prepare('ROLLBACK');
    this.savepoint = db.prepare('SAVEPOINT body');
    this.release = db.prepare('RELEASE body');
    this.rollbackTo = db.prepare('ROLLBACK TO body');
    this.busyAsync = opts.sync === 'store';
    // SQLite's busy handler sleeps on the calling thread: the server's event loop would stop for it, reads
    // and /healthz included. The server's store waits with timers instead (flushFn); tx() fails at once.
    if (this.busyAsync) db.pragma('busy_timeout = 0');
    if (opts.sync === 'store') {
      this.wal = WalSync.open(db, this.log, this.markDurableFn);
      if (this.wal) this.checkpointer = new Checkpointer(db, realpathSync(db.name), this.log);
    }
  }

  /** The connection itself, for the engine's own files (src/db/) only: domain code goes through Reader and Tx. */
  get sqliteHandle(): Database.Database {
    return this.db;
  }

  /** True while the connection is open. */
  get isOpen(): boolean {
    return this.db.open;
  }

  /** True while a transaction is open on this store's connection. */
  get inTransaction(): boolean {
    return this.db.inTransaction;
  }

  /** The database's change signal, for caches (see change-signal.ts). */
  get changes(): ChangeSignal {
    return (this.signal ??= new ChangeSignal(this.db));
  }

  /** The first row of `sql` in committed data; waits for a transaction that is open. */
  get<T = Row>(sql: string, ...params: unknown[]): Promise<T | undefined> {
    if (this.locked) return this.whenUnlocked(() => getRow(this.db, sql, params) as T | undefined);
    try {
      return Promise.resolve(getRow(this.db, sql, params) as T | undefined);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Every row of `sql` in committed data; waits for a transaction that is open. */
  all<T = Row>(sql: string, ...params: unknown[]): Promise<T[]> {
    if (this.locked) return this.whenUnlocked(() => cachedStmt(this.db, sql).all(...params) as T[]);
    try {
      return Promise.resolve(cachedStmt(this.db, sql).all(...params) as T[]);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Commits made through this store so far: unchanged between two moments means nothing was written between. */
  get commits(): number {
    return this.committedSeq;
  }

  /**
   * Null when every commit made so far (or up to commit `upTo`) is on disk; otherwise a promise that settles
   * once they are. Await it between reading data and showing it outside the process.
   */
  whenDurable(upTo: number = this.committedSeq): Promise<void> | null {
    if (this.durableSeq >= upTo) return null;
    const seq = Math.min(upTo, this.committedSeq);
    return new Promise<void>((resolve) => this.waiters.push({ seq, resolve }));
  }

  /**
   * Run `fn` in a transaction of its own, as soon as no other is open; durable when the promise settles, and
   * after-commit callbacks run then. With `{ durable: 'later' }` (the scheduler's batches) the commit is
   * durable a little after instead: its WAL sync runs on the thread pool while the caller goes on, as a group
   * commit's does, and its after-commit callbacks run once that sync is done. Nothing outside the process
   * learns of it before (see whenDurable).
   */
  async tx<T>(fn: Body<T>, opts: { durable: 'now' | 'later' } = { durable: 'now' }): Promise<T> {
    const wait = this.lock();
    if (wait) await wait;
    const hooks: Array<() => void> = [];
    const tx = new SqliteTx(this.db, this.connection, hooks);
    let result: T;
    try {
      // As before a group commit: a long run of tx() (a clock advance) must also let the WAL start over.
      this.checkpointer?.catchUpIfLong();
      this.begin.run();
      try {
        result = await this.runBody(fn, tx);
        tx.end();
        this.commit.run();
      } catch (err) {
        tx.end();
        if (this.db.inTransaction) this.rollback.run();
        throw err;
      }
    } finally {
      this.unlock();
    }
    const seq = ++this.committedSeq;
    if (opts.durable === 'later' && this.wal) {
      this.checkpointer?.nudge();
      this.awaiting.push({ seq, batch: [DETACHED], outcomes: [{ ok: true, value: undefined, hooks }] });
      this.wal.request(seq);
      return result;
    }
    this.syncNow();
    this.checkpointer?.nudge();
    this.runHooks(hooks);
    return result;
  }

  /**
   * Run `fn` over one consistent snapshot of committed data, in a read transaction that takes no write lock:
   * another process's writers go on meanwhile (WAL), and `fn` sees none of their commits. For long reads that
   * must agree with themselves (the ledger check, a doctor's pass). Like a body, `fn` awaits only its Reader.
   */
  async snapshot<T>(fn: (q: Reader) => Promise<T> | T): Promise<T> {
    const wait = this.lock();
    if (wait) await wait;
    const tx = new SqliteTx(this.db, this.connection, []);
    try {
      cachedStmt(this.db, 'BEGIN DEFERRED').run();
      try {
        // The first read starts the snapshot; everything after reads the same.
        return await this.runBody(fn, tx);
      } finally {
        tx.end();
        if (this.db.inTransaction) cachedStmt(this.db, 'COMMIT').run();
      }
    } finally {
      this.unlock();
    }
  }

  /**
   * Queue `fn` for the next group commit; resolves with its result once durable, rejects with its error.
   * `seen`, when given, receives the number of the commit the body was part of, before the promise settles:
   * a reply built from the body's result alone needs only that commit on disk (see whenDurable).
   */
  write<T>(fn: Body<T>, seen?: { seq?: number }): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn: fn as Body<unknown>, resolve: resolve as (v: unknown) => void, reject, seen });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.flushFn);
      }
    });
  }

  private readonly flushFn = (): void => {
    this.scheduled = false;
    if (this.queue.length === 0) return;
    const wait = this.lock();
    if (wait) void wait.then(this.flushLockedFn);
    else this.flushLockedFn();
  };

  private readonly flushLockedFn = (): void => {
    this.flushLocked().catch((err) => this.log.error('group commit failed', { error: String(err) }));
  };

  /** One group under the write lock (flushFn). */
  private async flushLocked(): Promise<void> {
    let outcome: 'done' | 'busy' = 'done';
    const batch = this.queue.splice(0, GROUP_LIMIT);
    try {
      if (batch.length === 0) return;
      this.checkpointer?.catchUpIfLong();
      outcome = await this.commitGroup(batch);
    } finally {
      this.unlock();
    }
    if (outcome === 'busy') {
      // Another process holds the write lock: the group goes back to the front and waits on a timer.
      this.queue.unshift(...batch);
      this.scheduled = true;
      setTimeout(this.flushFn, this.busyRetry_ms);
      this.busyRetry_ms = Math.min(this.busyRetry_ms * 2, BUSY_LIMITS.longest_retry_ms);
      return;
    }
    if (this.queue.length > 0 && !this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flushFn);
    }
  }

  /** The storage's last refusal (disk full, I/O error, write lock held too long) while writes still fail; null when they work. */
  trouble(): { code: string; message: string; at: number } | null {
    return this.failure;
  }

  /**
   * Write one page through the group commit (the schema version, set to itself): resolves when the storage
   * takes writes again, which clears trouble(); rejects with the storage's error while it does not.
   */
  probeWrite(): Promise<void> {
    return this.write(() => {
      const v = this.db.pragma('user_version', { simple: true }) as number;
      this.db.pragma(`user_version = ${v}`);
    });
  }

  /** Note a refused write; a group whose every body was lost gets this error (a 503 to clients). */
  private refused(err: unknown): void {
    const e = err as { code?: string; message?: string };
    this.failure = { code: e.code ?? 'SQLITE_ERROR', message: String(e.message ?? err), at: Date.now() };
    this.log.error('storage refused a write; the group is answered 503', { code: this.failure.code, error: this.failure.message });
  }

  /** Commit everything queued now and wait for the disk (shutdown). */
  async flush(): Promise<void> {
    while (this.queue.length > 0) {
      const wait = this.lock();
      if (wait) await wait;
      try {
        const batch = this.queue.splice(0, GROUP_LIMIT);
        if (batch.length > 0) await this.commitGroup(batch, true);
      } finally {
        this.unlock();
      }
    }
    this.syncNow();
  }

  /** Flush, then close the connection and the WAL file (once a sync still on the thread pool is done with it). */
  async close(): Promise<void> {
    if (!this.db.open) return;
    await this.flush();
    this.checkpointer?.close();
    this.db.close();
    this.wal?.close();
  }

  /** Take this process's write lock: null when taken at once, else a promise that settles when it is ours. */
  private lock(): Promise<void> | null {
    if (!this.locked) {
      this.locked = true;
      return null;
    }
    return new Promise<void>((resolve) => this.lockWaiters.push(resolve));
  }

  /** Hand the write lock to the next waiter in line, or free it. */
  private unlock(): void {
    const next = this.lockWaiters.shift();
    if (next) next();
    else this.locked = false;
  }

  /** Run a read once the transaction open now has ended. */
  private async whenUnlocked<T>(read: () => T): Promise<T> {
    const wait = this.lock();
    if (wait) await wait;
    try {
      return read();
    } finally {
      this.unlock();
    }
  }

  /**
   * Run one body. Its own awaits on its Tx settle within the current turn of the event loop (SQLite answers
   * at once); a body still running when the turn ends is waiting on something else, which would hold the
   * write lock for as long: it is failed with AWAITED_OUTSIDE and its Tx refuses any later call.
   */
  private runBody<T>(fn: Body<T>, tx: SqliteTx): Promise<T> | T {
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
   * One group: BEGIN, each body in its savepoint, COMMIT. 'busy' when another process holds the write lock
   * and the group may wait for it (nothing ran); the group is then the caller's to retry. The caller holds
   * the write lock.
   */
  private async commitGroup(batch: Pending[], syncLater = false): Promise<'done' | 'busy'> {
    const outcomes: Committed['outcomes'] = [];
    try {
      this.begin.run();
    } catch (err) {
      if (this.busyAsync && (err as { code?: string }).code === 'SQLITE_BUSY' && !syncLater) {
        this.busySince ??= Date.now();
        if (Date.now() - this.busySince < BUSY_LIMITS.total_ms) return 'busy';
      }
      this.busySince = null;
      this.busyRetry_ms = BUSY_LIMITS.first_retry_ms;
      this.refused(err);
      for (const p of batch) p.reject(err);
      return 'done';
    }
    this.busySince = null;
    this.busyRetry_ms = BUSY_LIMITS.first_retry_ms;
    let lost: unknown = null;
    let storageErr: unknown = null;
    for (const p of batch) {
      const hooks: Array<() => void> = [];
      const tx = new SqliteTx(this.db, this.connection, hooks);
      this.savepoint.run();
      try {
        const value = await this.runBody(p.fn, tx);
        tx.end();
        this.release.run();
        outcomes.push({ ok: true, value, hooks });
      } catch (err) {
        tx.end();
        if (STORAGE_CODES.test(String((err as { code?: string }).code ?? ''))) storageErr = err;
        // A full disk or an I/O error can make SQLite roll the whole transaction back: then there is no
        // savepoint to return to, and every body of the group, those before this one too, is lost.
        if (!this.db.inTransaction) {
          lost = err;
          break;
        }
        try {
          this.rollbackTo.run();
          this.release.run();
        } catch (undo) {
          lost = undo;
          break;
        }
        outcomes.push({ ok: false, value: err, hooks: [] });
      }
    }
    if (lost === null) {
      try {
        this.commit.run();
      } catch (err) {
        lost = err;
      }
    }
    if (lost !== null) {
      if (this.db.inTransaction) this.rollback.run();
      this.refused(lost);
      for (const p of batch) p.reject(lost);
      return 'done';
    }
    if (storageErr !== null) this.refused(storageErr);
    else this.failure = null;
    const seq = ++this.committedSeq;
    this.checkpointer?.nudge();
    this.awaiting.push({ seq, batch, outcomes });
    if (!this.wal) this.markDurable(seq);
    else if (!syncLater) this.wal.request(seq);
    return 'done';
  }

  /** Sync the WAL now, blocking (tx(), shutdown); covers every commit made so far. */
  private syncNow(): void {
    if (this.wal && this.durableSeq < this.committedSeq) this.wal.syncNow(this.committedSeq);
    this.markDurable(this.committedSeq);
  }

  private readonly markDurableFn = (upTo: number): void => this.markDurable(upTo);

  private runHooks(hooks: Array<() => void>): void {
    for (const h of hooks) {
      try {
        h();
      } catch (err) {
        // An after-commit action must not undo or hide a commit; the durable record (jobs, outbox) retries it.
        this.log.error('after-commit action failed', { error: String(err) });
      }
    }
  }

  private markDurable(upTo: number): void {
    if (upTo > this.durableSeq) this.durableSeq = upTo;
    let n = 0;
    while (n < this.awaiting.length && this.awaiting[n].seq <= this.durableSeq) n++;
    const done = n === 0 ? [] : this.awaiting.splice(0, n);
    for (const g of done) {
      for (let i = 0; i < g.batch.length; i++) {
        const o = g.outcomes[i];
        const seen = g.batch[i].seen;
        if (seen) seen.seq = g.seq;
        if (o.ok) {
          this.runHooks(o.hooks);
          g.batch[i].resolve(o.value);
        } else {
          g.batch[i].reject(o.value);
        }
      }
    }
    if (this.waiters.length > 0) {
      const still: Array<{ seq: number; resolve: () => void }> = [];
      for (const w of this.waiters) {
        if (w.seq <= this.durableSeq) w.resolve();
        else still.push(w);
      }
      this.waiters = still;
    }
  }
}

/** The log of a store given none (the admin commands): errors to stderr, as JSON lines like the server's. */
const STDERR_LOG = createLogger('debug', (line) => process.stderr.write(line));

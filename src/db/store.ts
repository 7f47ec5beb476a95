import type Database from 'better-sqlite3';
import { realpathSync } from 'node:fs';
import { createLogger, type Logger } from '../log';
import { Checkpointer } from './checkpointer';
import { cachedRowReader, cachedStmt, type RowReader } from './statements';
import { WalSync } from './wal-sync';

/** What a transaction body receives: the database and a way to act after the commit. */
export interface Tx {
  db: Database.Database;
  /** A cached prepared statement (cachedStmt): compiled once; never pluck/raw/expand or iterate it. */
  stmt(sql: string): Database.Statement;
  /** Run `fn` after this transaction commits (never if it rolls back): wake timers, push SSE, kick webhooks. */
  afterCommit(fn: () => void): void;
}

type Pending = {
  fn: (tx: Tx) => unknown;
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
 * The one way to write. `tx` runs a body now in its own immediate transaction; `write` queues a body and
 * commits every body queued in the same turn of the event loop in one transaction (group commit), each in
 * its own savepoint so that one failing body rolls back only itself. Promises settle, and after-commit hooks
 * run, only once the commit is durable, so a response is sent only for data that survives a power loss.
 *
 * With `sync: 'store'` a commit is visible to reads on this connection a little before it is durable (while
 * its WAL sync runs). Anything that shows data to the outside world (a response, an SSE event, a webhook)
 * therefore first waits for `whenDurable()`, which is free when nothing is waiting for the disk. Groups keep
 * committing while a sync runs; one sync at a time covers every commit made before it started.
 */
export class Store {
  readonly db: Database.Database;
  private queue: Pending[] = [];
  private scheduled = false;
  private inTx = false;
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
  /** Bound once so that every Tx shares it instead of allocating a closure per body. */
  readonly stmtFn = (sql: string): Database.Statement => this.stmt(sql);
  /** Wait for another process's write lock without blocking the thread (sync: 'store'). */
  private readonly busyAsync: boolean;
  /** When the group waiting for the write lock first found it taken; null when none waits. */
  private busySince: number | null = null;
  private busyRetry_ms = BUSY_LIMITS.first_retry_ms;
  /** The last write the storage refused (disk full, I/O error, lock held), until a commit succeeds again. */
  private failure: { code: string; message: string; at: number } | null = null;

  constructor(db: Database.Database, opts: StoreOptions = {}) {
    this.db = db;
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

  /** A cached prepared statement of this store's connection (see cachedStmt: run/get/all only). */
  stmt(sql: string): Database.Statement {
    return cachedStmt(this.db, sql);
  }

  /** A cached single-row reader of this store's connection (see cachedRowReader): for wide rows on hot paths. */
  reader(sql: string): RowReader {
    return cachedRowReader(this.db, sql);
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

  private newTx(hooks: Array<() => void>): Tx {
    return { db: this.db, stmt: this.stmtFn, afterCommit: (h) => hooks.push(h) };
  }

  /**
   * Run `fn` in one synchronous immediate transaction, now, durable on return; after-commit callbacks run then.
   * With `{ durable: 'later' }` (the scheduler's batches) the commit is durable a little after return instead: its WAL sync
   * runs on the thread pool while the caller goes on, as a group commit's does, and its after-commit callbacks
   * run once that sync is done. Nothing outside the process learns of it before (see whenDurable).
   */
  tx<T>(fn: (tx: Tx) => T, opts: { durable: 'now' | 'later' } = { durable: 'now' }): T {
    if (this.inTx) throw new Error('cannot open a transaction inside another');
    const hooks: Array<() => void> = [];
    const tx = this.newTx(hooks);
    // As before a group commit: a long run of tx() (a clock advance) must also let the WAL start over.
    this.checkpointer?.catchUpIfLong();
    this.inTx = true;
    let result: T;
    try {
      this.begin.run();
      try {
        result = fn(tx);
        this.commit.run();
      } catch (err) {
        if (this.db.inTransaction) this.rollback.run();
        throw err;
      }
    } finally {
      this.inTx = false;
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
   * Queue `fn` for the next group commit; resolves with its result once durable, rejects with its error.
   * `seen`, when given, receives the number of the commit the body was part of, before the promise settles:
   * a reply built from the body's result alone needs only that commit on disk (see whenDurable).
   */
  write<T>(fn: (tx: Tx) => T, seen?: { seq?: number }): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject, seen });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.flushFn);
      }
    });
  }

  private readonly flushFn = (): void => {
    this.scheduled = false;
    if (this.queue.length === 0) return;
    this.checkpointer?.catchUpIfLong();
    const batch = this.queue.splice(0, GROUP_LIMIT);
    if (this.commitGroup(batch) === 'busy') {
      // Another process holds the write lock: the group goes back to the front and waits on a timer.
      this.queue.unshift(...batch);
      this.scheduled = true;
      setTimeout(this.flushFn, this.busyRetry_ms);
      this.busyRetry_ms = Math.min(this.busyRetry_ms * 2, BUSY_LIMITS.longest_retry_ms);
      return;
    }
    if (this.queue.length > 0) {
      this.scheduled = true;
      setImmediate(this.flushFn);
    }
  };

  /** The storage's last refusal (disk full, I/O error, write lock held too long) while writes still fail; null when they work. */
  trouble(): { code: string; message: string; at: number } | null {
    return this.failure;
  }

  /**
   * Write one page through the group commit (the schema version, set to itself): resolves when the storage
   * takes writes again, which clears trouble(); rejects with the storage's error while it does not.
   */
  probeWrite(): Promise<void> {
    return this.write((tx) => {
      const v = tx.db.pragma('user_version', { simple: true }) as number;
      tx.db.pragma(`user_version = ${v}`);
    });
  }

  /** Note a refused write; a group whose every body was lost gets this error (a 503 to clients). */
  private refused(err: unknown): void {
    const e = err as { code?: string; message?: string };
    this.failure = { code: e.code ?? 'SQLITE_ERROR', message: String(e.message ?? err), at: Date.now() };
    this.log.error('storage refused a write; the group is answered 503', { code: this.failure.code, error: this.failure.message });
  }

  /** Commit everything queued now and wait for the disk, synchronously (shutdown). */
  flush(): void {
    while (this.queue.length > 0) this.commitGroup(this.queue.splice(0, GROUP_LIMIT), true);
    this.syncNow();
  }

  /** Flush, then close the connection and the WAL file (once a sync still on the thread pool is done with it). */
  close(): void {
    this.flush();
    this.checkpointer?.close();
    this.db.close();
    this.wal?.close();
  }

  /**
   * One group: BEGIN, each body in its savepoint, COMMIT. 'busy' when another process holds the write lock
   * and the group may wait for it (nothing ran); the group is then the caller's to retry.
   */
  private commitGroup(batch: Pending[], syncLater = false): 'done' | 'busy' {
    const outcomes: Committed['outcomes'] = [];
    if (this.inTx) throw new Error('cannot group-commit inside a transaction');
    this.inTx = true;
    try {
      this.begin.run();
    } catch (err) {
      this.inTx = false;
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
      const tx = this.newTx(hooks);
      this.savepoint.run();
      try {
        const value = p.fn(tx);
        this.release.run();
        outcomes.push({ ok: true, value, hooks });
      } catch (err) {
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
      this.inTx = false;
      this.refused(lost);
      for (const p of batch) p.reject(lost);
      return 'done';
    }
    this.inTx = false;
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

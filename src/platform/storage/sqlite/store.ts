import type Database from 'better-sqlite3';
import { realpathSync } from 'node:fs';
import { createLogger, type Logger } from '../../log';
import { Checkpointer } from './checkpointer';
import { cachedStmt } from './statements';
import type { Reader, Row, Tx } from '../tx';
import { getRow, SqliteTx } from './tx';
import { WalSync } from './wal-sync';
import { readSnapshot, runBody, WriteLock, type Body } from './body';
import { BUSY_LIMITS, GROUP_LIMIT, type StoreOptions } from '../limits';
import { DETACHED, Durability, runBodies, type Outcome, type Pending } from './durable';
import type { ChangeSignal } from '../change-signal';
import { SqliteChangeSignal } from './change-signal';

import type { Store, StorageTrouble } from '../store-api';

/**
 * The SQLite engine. `write` queues a body and commits every body queued in the same turn of the event loop in
 * one transaction (group commit), each in its own savepoint so that one failing body rolls back only itself;
 * `tx` runs a body in a transaction of its own. Bodies run one after another; a body that awaits anything but
 * its Tx is failed loudly (AWAITED_OUTSIDE) instead of holding the write lock. Promises settle, and after-commit
 * hooks run, only once the commit is durable: a response is sent only for data that survives a power loss.
 *
 * Reads outside a transaction (`get`, `all`) see committed data only: while a transaction is open they wait
 * for it. With `sync: 'store'` a commit is visible to reads a little before it is durable (while its WAL sync
 * runs). Anything that shows data to the outside world (a response, an SSE event, a webhook) therefore first
 * waits for `whenDurable()`, which is free when nothing is waiting for the disk. Groups keep committing while
 * a sync runs; one sync at a time covers every commit made before it started.
 */
export class SqliteStore implements Store {
  readonly engine = 'sqlite' as const;
  readonly eventFeed = null;
  readonly now = Date.now;
  private readonly db: Database.Database;
  /** The identity Tx.connection names; the same for every transaction of this store. */
  readonly connection: object = Object.freeze({});
  /** The database file ('' or ':memory:' for a database in memory). */
  readonly path: string;
  private queue: Pending[] = [];
  private scheduled = false;
  /** The write lock of this process: a transaction is open (or a read waits its turn behind one). */
  private readonly writeLock = new WriteLock();
  // Transaction control compiled once: db.exec parses its SQL again on every call, once per body under load.
  private readonly begin: Database.Statement;
  private readonly commit: Database.Statement;
  private readonly rollback: Database.Statement;
  /** SAVEPOINT, RELEASE and ROLLBACK TO of each body of a group. */
  private readonly bodyStmts: { savepoint: Database.Statement; release: Database.Statement; rollbackTo: Database.Statement };
  /** Syncs the WAL when this store does (sync: 'store'); null when SQLite does. */
  private readonly wal: WalSync | null = null;
  private readonly log: Logger;
  /** Commits numbered, and which are on disk. */
  private readonly durability: Durability;
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
    this.durability = new Durability(this.log);
    // Each body's savepoint journals the first copy of every page it changes so that it can roll back alone.
    // With temp files that journal spills to disk after 64 KiB (two writes per page, half of an insert's
    // cost); in memory it is a copy. It lives only until COMMIT and plays no part in crash recovery (the WAL
    // does), so durability is unchanged. Temporary tables and sorts stay in memory too.
    db.pragma('temp_store = MEMORY');
    this.begin = db.prepare('BEGIN IMMEDIATE');
    this.commit = db.prepare('COMMIT');
    this.rollback = db.prepare('ROLLBACK');
    this.bodyStmts = { savepoint: db.prepare('SAVEPOINT body'), release: db.prepare('RELEASE body'), rollbackTo: db.prepare('ROLLBACK TO body') };
    this.busyAsync = opts.sync === 'store';
    // SQLite's busy handler sleeps on the calling thread: the server's event loop would stop for it, reads
    // and /healthz included. The server's store waits with timers instead (flushFn); tx() fails at once.
    if (this.busyAsync) db.pragma('busy_timeout = 0');
    if (opts.sync === 'store') {
      this.wal = WalSync.open(db, this.log, this.markDurableFn);
      if (this.wal) this.checkpointer = new Checkpointer(db, realpathSync(db.name), this.log);
    }
  }

  /** The connection itself, for the engine's own files (src/platform/storage/) only: domain code goes through Reader and Tx. */
  get sqliteHandle(): Database.Database {
    return this.db;
  }

  // See Store: the connection is open; a transaction holds it.
  get isOpen(): boolean {
    return this.db.open;
  }
  get inTransaction(): boolean {
    return this.db.inTransaction;
  }

  /** The database's change signal, for caches (see change-signal.ts). */
  get changes(): ChangeSignal {
    return (this.signal ??= new SqliteChangeSignal(this.db));
  }

  /** The first row of `sql` in committed data; waits for a transaction that is open. */
  get<T = Row>(sql: string, ...params: unknown[]): Promise<T | undefined> {
    return this.read(() => getRow(this.db, sql, params) as T | undefined);
  }

  /** Every row of `sql` in committed data; waits for a transaction that is open. */
  all<T = Row>(sql: string, ...params: unknown[]): Promise<T[]> {
    return this.read(() => cachedStmt(this.db, sql).all(...params) as T[]);
  }

  private read<T>(fn: () => T): Promise<T> {
    if (this.writeLock.held) return this.writeLock.around(fn);
    try {
      return Promise.resolve(fn());
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Commits made through this store so far: unchanged between two moments means nothing was written between. */
  get commits(): number {
    return this.durability.commits;
  }

  /**
   * Null when every commit made so far (or up to commit `upTo`) is on disk; otherwise a promise that settles
   * once they are. Await it between reading data and showing it outside the process.
   */
  whenDurable(upTo?: number): Promise<void> | null {
    return this.durability.whenDurable(upTo);
  }

  /**
   * Run `fn` in a transaction of its own, as soon as no other is open; durable when the promise settles, and
   * after-commit callbacks run then. With `{ durable: 'later' }` (the scheduler's batches) the commit is
   * durable a little after instead: its WAL sync runs on the thread pool while the caller goes on, as a group
   * commit's does, and its after-commit callbacks run once that sync is done. Nothing outside the process
   * learns of it before (see whenDurable).
   */
  async tx<T>(fn: Body<T>, opts: { durable: 'now' | 'later' } = { durable: 'now' }): Promise<T> {
    const wait = this.writeLock.take();
    if (wait) await wait;
    const hooks: Array<() => void> = [];
    const tx = new SqliteTx(this.db, this.connection, hooks);
    let result: T;
    try {
      // As before a group commit: a long run of tx() (a clock advance) must also let the WAL start over.
      this.checkpointer?.catchUpIfLong();
      this.begin.run();
      try {
        result = await runBody(fn, tx);
        tx.end();
        this.commit.run();
      } catch (err) {
        tx.end();
        if (this.db.inTransaction) this.rollback.run();
        throw err;
      }
    } finally {
      this.writeLock.give();
    }
    if (opts.durable === 'later' && this.wal) {
      const seq = this.durability.committed([DETACHED], [{ ok: true, value: undefined, hooks }]);
      this.checkpointer?.nudge();
      this.wal.request(seq);
      return result;
    }
    this.durability.next();
    this.syncNow();
    this.checkpointer?.nudge();
    this.durability.runHooks(hooks);
    return result;
  }

  /**
   * Run `fn` over one consistent snapshot of committed data, in a read transaction that takes no write lock:
   * another process's writers go on meanwhile (WAL), and `fn` sees none of their commits. For long reads that
   * must agree with themselves (the ledger check, a doctor's pass). Like a body, `fn` awaits only its Reader.
   */
  snapshot<T>(fn: (q: Reader) => Promise<T> | T): Promise<T> {
    return readSnapshot(this.db, this.writeLock, this.connection, fn);
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
    const wait = this.writeLock.take();
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
      this.writeLock.give();
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
  trouble(): StorageTrouble | null {
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
      const wait = this.writeLock.take();
      if (wait) await wait;
      try {
        const batch = this.queue.splice(0, GROUP_LIMIT);
        if (batch.length > 0) await this.commitGroup(batch, true);
      } finally {
        this.writeLock.give();
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

  /**
   * One group: BEGIN, each body in its savepoint, COMMIT. 'busy' when another process holds the write lock
   * and the group may wait for it (nothing ran); the group is then the caller's to retry. The caller holds
   * the write lock.
   */
  private async commitGroup(batch: Pending[], syncLater = false): Promise<'done' | 'busy'> {
    const outcomes: Outcome[] = [];
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
    let { lost, storageErr } = await runBodies(this.db, this.connection, this.bodyStmts, batch, outcomes);
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
    const seq = this.durability.committed(batch, outcomes);
    this.checkpointer?.nudge();
    if (!this.wal) this.durability.markDurable(seq);
    else if (!syncLater) this.wal.request(seq);
    return 'done';
  }

  /** Sync the WAL now, blocking (tx(), shutdown); covers every commit made so far. */
  private syncNow(): void {
    const upTo = this.durability.commits;
    if (this.wal && this.durability.behind) this.wal.syncNow(upTo);
    this.durability.markDurable(upTo);
  }

  private readonly markDurableFn = (upTo: number): void => this.durability.markDurable(upTo);
}

/** The log of a store given none (the admin commands): errors to stderr, as JSON lines like the server's. */
const STDERR_LOG = createLogger('debug', (line) => process.stderr.write(line));

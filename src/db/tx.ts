import type Database from 'better-sqlite3';
import { closeSync, fdatasync, fdatasyncSync, openSync, realpathSync } from 'node:fs';
import { Checkpointer } from './checkpointer';

/** A reader of one row at a time; see cachedRowReader. */
export interface RowReader {
  get(...params: unknown[]): unknown;
}

const readerCaches = new WeakMap<Database.Database, Map<string, RowReader>>();

/**
 * A single-row reader for `sql` on `db`, made once per SQL text. better-sqlite3 builds a row object one
 * property at a time, which for a wide row (a payment has 32 columns) costs as much as the query; this reader
 * takes the row as an array and builds the object with one literal of fixed shape, about half the cost. The
 * literal is generated from the statement's column names, which come from the SQL text, never from data.
 */
export function cachedRowReader(db: Database.Database, sql: string): RowReader {
  return cachedPerConnection(readerCaches, db, sql, makeRowReader);
}

function makeRowReader(db: Database.Database, sql: string): RowReader {
  // A statement of its own: raw() changes a statement, so it must not be one the shared cache hands out.
  const stmt = db.prepare(sql).raw(true);
  const names = stmt.columns().map((c) => c.name);
  if (new Set(names).size !== names.length) throw new Error(`cannot read rows of "${sql.slice(0, 80)}": two columns share a name`);
  const fields = names.map((n, i) => `${JSON.stringify(n)}: a[${i}]`).join(', ');
  const build = new Function('a', `return { ${fields} };`) as (a: unknown[]) => unknown;
  return {
    get(...params: unknown[]): unknown {
      const a = stmt.get(...params) as unknown[] | undefined;
      if (a === undefined) return undefined;
      // A schema change after preparing would shift the columns; it happens only at start-up, but never misread.
      if (a.length !== names.length) throw new Error(`cannot read rows of "${sql.slice(0, 80)}": the columns changed`);
      return build(a);
    },
  };
}

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

/** Most transaction bodies one group commit holds; the rest wait for the next. */
const GROUP_LIMIT = 512;

/** Most statements a connection's cache holds; SQL built from column lists is bounded, but a bound costs nothing. */
const STMT_CACHE_LIMIT = 2000;

const stmtCaches = new WeakMap<Database.Database, Map<string, Database.Statement>>();

/**
 * A prepared statement of `db`, compiled once per SQL text and shared by every caller on that connection:
 * use it with run/get/all only (pluck/raw/expand would change it for everyone, and an iterating statement
 * cannot be re-entered).
 */
export function cachedStmt(db: Database.Database, sql: string): Database.Statement {
  return cachedPerConnection(stmtCaches, db, sql, prepare);
}

function prepare(db: Database.Database, sql: string): Database.Statement {
  return db.prepare(sql);
}

// `make` is a module-level function, not a closure, so a cache hit on this hot path allocates nothing.
function cachedPerConnection<V>(
  caches: WeakMap<Database.Database, Map<string, V>>,
  db: Database.Database,
  sql: string,
  make: (db: Database.Database, sql: string) => V,
): V {
  let cache = caches.get(db);
  if (!cache) {
    cache = new Map();
    caches.set(db, cache);
  }
  let value = cache.get(sql);
  if (value === undefined) {
    value = make(db, sql);
    if (cache.size >= STMT_CACHE_LIMIT) cache.clear();
    cache.set(sql, value);
  }
  return value;
}

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
  /** The WAL file, when this store syncs it itself (sync: 'store'); -1 when SQLite does. */
  private walFd = -1;
  /** Commits made; commits known to be on disk. */
  private committedSeq = 0;
  private durableSeq = 0;
  /** A WAL sync is running on the thread pool. */
  private syncing = false;
  private closed = false;
  /** Groups committed whose sync has not finished. */
  private awaiting: Committed[] = [];
  /** whenDurable() callers and the commit each waits for. */
  private waiters: Array<{ seq: number; resolve: () => void }> = [];
  /** Checkpoints the WAL on a thread when this store syncs it (sync: 'store'). */
  private checkpointer: Checkpointer | null = null;
  /** Bound once so that every Tx shares it instead of allocating a closure per body. */
  readonly stmtFn = (sql: string): Database.Statement => this.stmt(sql);

  constructor(db: Database.Database, opts: StoreOptions = {}) {
    this.db = db;
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
    if (opts.sync === 'store') {
      this.walFd = openWal(db);
      if (this.walFd >= 0) this.checkpointer = new Checkpointer(db, realpathSync(db.name));
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

  /** Run `fn` in one synchronous immediate transaction, now, durable on return; after-commit callbacks run then. */
  tx<T>(fn: (tx: Tx) => T): T {
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
    this.committedSeq++;
    this.syncNow();
    this.checkpointer?.nudge();
    runHooks(hooks);
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
    this.commitGroup(this.queue.splice(0, GROUP_LIMIT));
    if (this.queue.length > 0) {
      this.scheduled = true;
      setImmediate(this.flushFn);
    }
  };

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
    this.closed = true;
    if (this.walFd >= 0 && !this.syncing) closeSync(this.walFd);
  }

  private commitGroup(batch: Pending[], syncLater = false): void {
    const outcomes: Committed['outcomes'] = [];
    if (this.inTx) throw new Error('cannot group-commit inside a transaction');
    this.inTx = true;
    try {
      this.begin.run();
    } catch (err) {
      this.inTx = false;
      for (const p of batch) p.reject(err);
      return;
    }
    for (const p of batch) {
      const hooks: Array<() => void> = [];
      const tx = this.newTx(hooks);
      this.savepoint.run();
      try {
        const value = p.fn(tx);
        this.release.run();
        outcomes.push({ ok: true, value, hooks });
      } catch (err) {
        this.rollbackTo.run();
        this.release.run();
        outcomes.push({ ok: false, value: err, hooks: [] });
      }
    }
    try {
      this.commit.run();
    } catch (err) {
      if (this.db.inTransaction) this.rollback.run();
      this.inTx = false;
      for (const p of batch) p.reject(err);
      return;
    }
    this.inTx = false;
    const seq = ++this.committedSeq;
    this.checkpointer?.nudge();
    this.awaiting.push({ seq, batch, outcomes });
    if (this.walFd < 0) this.markDurable(seq);
    else if (!syncLater) this.syncAsync();
  }

  /**
   * Sync the WAL on the thread pool, one sync at a time: a group committed while one runs is covered by the
   * next, started as soon as the running one ends. Groups keep committing meanwhile, so the event loop never
   * waits for the disk.
   */
  private syncAsync(): void {
    if (this.syncing) return;
    this.syncing = true;
    const upTo = this.committedSeq;
    fdatasync(this.walFd, (err) => {
      this.syncing = false;
      // Closed meanwhile: close() synced everything itself and left the file for this callback to close.
      if (this.closed) return closeSync(this.walFd);
      if (err) syncFailed(err);
      this.markDurable(upTo);
      if (this.durableSeq < this.committedSeq) this.syncAsync();
    });
  }

  /** Sync the WAL now, blocking (tx(), shutdown); covers every commit made so far. */
  private syncNow(): void {
    if (this.walFd >= 0 && this.durableSeq < this.committedSeq) {
      try {
        fdatasyncSync(this.walFd);
      } catch (err) {
        syncFailed(err as Error);
      }
    }
    this.markDurable(this.committedSeq);
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
          runHooks(o.hooks);
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

/**
 * The connection's WAL file, opened for syncing, with the connection switched to synchronous=NORMAL; -1 (and
 * SQLite keeps syncing) when the database is not a file in WAL mode.
 */
function openWal(db: Database.Database): number {
  if (db.memory || String(db.pragma('journal_mode', { simple: true })) !== 'wal') return -1;
  // SQLite names the WAL after the database's real path (symbolic links resolved); a read creates it.
  db.prepare('SELECT count(*) FROM sqlite_master').get();
  const fd = openSync(realpathSync(db.name) + '-wal', 'r');
  db.pragma('synchronous = NORMAL');
  return fd;
}

/**
 * A failed WAL sync leaves commits that readers may already have seen in an unknown state on disk, and a
 * retried sync can report success for pages the kernel already dropped. Stop; the next start recovers the
 * database from what the disk really holds, and nothing that was not acknowledged was shown.
 */
function syncFailed(err: Error): never {
  console.error(JSON.stringify({ level: 'fatal', msg: 'cannot sync the database WAL; stopping', error: String(err) }));
  process.exit(70);
}

function runHooks(hooks: Array<() => void>): void {
  for (const h of hooks) {
    try {
      h();
    } catch (err) {
      // An after-commit action must not undo or hide a commit; the durable record (jobs, outbox) retries it.
      console.error(JSON.stringify({ level: 'error', msg: 'after-commit action failed', error: String(err) }));
    }
  }
}

import type Database from 'better-sqlite3';
import { realpathSync } from 'node:fs';
import { createLogger, type Logger } from '../../log';
import { Checkpointer } from './checkpointer';
import type { Body, Reader, Row } from '../tx';
import { readSnapshot, runBodies, runBody, SqliteTx, Statements, WriteLock, type BodyStatements } from './tx';
import { BUSY_LIMITS, GROUP_LIMIT, type StoreOptions } from '../limits';
import { Durability, type Outcome, type Pending } from './durable';
import { KEY_TABLES, type Store, type StorageTrouble } from '../store';

/**
 * The SQLite engine. `write` queues a body and commits every body queued in the same turn of the event loop in
 * one transaction (group commit), each in its own savepoint so that one failing body rolls back only itself;
 * `tx` runs a body in a transaction of its own. Bodies run one after another; a body that awaits anything but
 * its Tx is failed loudly (AWAITED_OUTSIDE) instead of holding the write lock. Promises settle, and after-commit
 * hooks run, only once the commit is durable (durable.ts): a response is sent only for data that survives a
 * power loss.
 *
 * Reads outside a transaction (`get`, `all`) see committed data only: while a transaction is open they wait
 * for it. With `sync: 'store'` a commit is visible to reads a little before it is durable (while its WAL sync
 * runs), so a read answers once the commits before it are durable too: free when nothing waits for the disk.
 * Groups keep committing while a sync runs; one sync at a time covers every commit made before it started.
 */
export class SqliteStore implements Store {
  readonly engine = 'sqlite' as const;
  readonly eventFeed = null;
  readonly now = Date.now;
  private readonly db: Database.Database;
  private readonly st: Statements;
  /** See Store; `path` is '' or ':memory:' for a database in memory. */
  readonly connection: object = Object.freeze({});
  readonly path: string;
  private queue: Pending[] = [];
  private scheduled = false;
  /** The write lock of this process: a transaction is open (or a read waits its turn behind one). */
  private readonly writeLock = new WriteLock();
  // Transaction control compiled once: db.exec parses its SQL again on every call, once per body under load.
  private readonly begin: Database.Statement;
  private readonly commit: Database.Statement;
  private readonly rollback: Database.Statement;
  private readonly bodyStmts: BodyStatements;
  private readonly log: Logger;
  private readonly durability: Durability;
  /** Checkpoints the WAL on a thread when this store syncs it (sync: 'store'). */
  private readonly checkpointer: Checkpointer | null = null;
  /** Wait for another process's write lock without blocking the thread (sync: 'store'); since when a group waits. */
  private readonly busyAsync: boolean;
  private busySince: number | null = null;
  private busyRetry_ms = BUSY_LIMITS.first_retry_ms;
  /** The last write the storage refused (disk full, I/O error, lock held), until a commit succeeds again. */
  private failure: StorageTrouble | null = null;
  /** See keyTablesVersion: the number, `PRAGMA data_version` as last read, and whether this turn read it. */
  private keyVersion = 0;
  private dataVersion: { stmt: Database.Statement; seen: unknown; thisTurn: boolean } | null = null;

  constructor(db: Database.Database, opts: StoreOptions = {}) {
    this.db = db;
    this.st = new Statements(db);
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
    this.bodyStmts = { savepoint: db.prepare('SAVEPOINT body'), release: db.prepare('RELEASE body'), rollbackTo: db.prepare('ROLLBACK TO body') };
    this.busyAsync = opts.sync === 'store';
    // SQLite's busy handler sleeps on the calling thread: the server's event loop would stop for it, reads
    // and /healthz included. The server's store waits with timers instead (flushFn); tx() fails at once.
    if (this.busyAsync) db.pragma('busy_timeout = 0');
    const wal = opts.sync === 'store' ? Durability.walFile(db) : null;
    this.durability = new Durability(this.log, wal);
    if (wal !== null) this.checkpointer = new Checkpointer(db, realpathSync(db.name), this.log);
  }

  /** The connection, for src/platform/storage/ only: domain code goes through Reader and Tx. */
  get sqliteHandle(): Database.Database {
    return this.db;
  }

  // See Store.
  get isOpen(): boolean {
    return this.db.open;
  }
  get inTransaction(): boolean {
    return this.db.inTransaction;
  }
  get commits(): number {
    return this.durability.commits;
  }

  /** The first row of `sql` in committed data, once it is durable; waits for a transaction that is open. */
  get<T = Row>(sql: string, ...params: unknown[]): Promise<T | undefined> {
    if (this.writeLock.held) return this.readLocked(() => this.st.get(sql, params) as T | undefined);
    try {
      return this.durable(this.st.get(sql, params) as T | undefined);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Every row of `sql` in committed data, once it is durable; waits for a transaction that is open. */
  all<T = Row>(sql: string, ...params: unknown[]): Promise<T[]> {
    if (this.writeLock.held) return this.readLocked(() => this.st.of(sql).stmt.all(...params) as T[]);
    try {
      return this.durable(this.st.of(sql).stmt.all(...params) as T[]);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** `value`, read from committed data, once every commit made so far is on disk. */
  private durable<T>(value: T): Promise<T> {
    const wait = this.durability.settled();
    return wait === null ? Promise.resolve(value) : wait.then(() => value);
  }

  private async readLocked<T>(read: () => T): Promise<T> {
    const wait = this.writeLock.take();
    if (wait) await wait;
    let value: T;
    try {
      value = read();
    } finally {
      this.writeLock.give();
    }
    return this.durable(value);
  }

  /** Run `fn` in a transaction of its own, as soon as no other is open; see Store.tx. */
  async tx<T>(fn: Body<T>): Promise<T> {
    const wait = this.writeLock.take();
    if (wait) await wait;
    const hooks: Array<() => void> = [];
    let result: T;
    try {
      result = await this.alone(fn, new SqliteTx(this.st, this.db, this.connection, hooks));
    } catch (err) {
      this.writeLock.give();
      // A refusal can rest on data as much as a result can (a remainder read from a commit still being synced).
      await this.durability.settled();
      throw err;
    }
    this.writeLock.give();
    this.checkpointer?.nudge();
    return new Promise<T>((resolve, reject) => this.durability.committed([{ fn, resolve: resolve as (v: unknown) => void, reject }], [{ ok: true, value: result, hooks }]));
  }

  /** BEGIN, the body, COMMIT (or ROLLBACK); the caller holds the write lock. */
  private async alone<T>(fn: Body<T>, tx: SqliteTx): Promise<T> {
    // As before a group commit: a long run of tx() (a clock advance) must also let the WAL start over.
    this.checkpointer?.catchUpIfLong();
    this.begin.run();
    try {
      const result = await runBody(fn, tx);
      tx.end();
      this.commit.run();
      return result;
    } catch (err) {
      tx.end();
      if (this.db.inTransaction) this.rollback.run();
      throw err;
    }
  }

  /** See readSnapshot: `fn` over one snapshot of committed data, answered once that data is durable. */
  async snapshot<T>(fn: (q: Reader) => Promise<T> | T): Promise<T> {
    return this.durable(await readSnapshot(this.st, this.db, this.writeLock, this.connection, fn));
  }

  /** Queue `fn` for the next group commit; resolves with its result once durable, rejects with its error. */
  write<T>(fn: Body<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn: fn as Body<unknown>, resolve: resolve as (v: unknown) => void, reject });
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

  /**
   * One group: BEGIN, each body in its savepoint, COMMIT. 'busy' when another process holds the write lock
   * and the group may wait for it (nothing ran); the group is then the caller's to retry. The caller holds
   * the write lock.
   */
  private async commitGroup(batch: Pending[], closing = false): Promise<'done' | 'busy'> {
    const outcomes: Outcome[] = [];
    try {
      this.begin.run();
    } catch (err) {
      if (this.busyAsync && (err as { code?: string }).code === 'SQLITE_BUSY' && !closing) {
        this.busySince ??= Date.now();
        if (Date.now() - this.busySince < BUSY_LIMITS.total_ms) return 'busy';
      }
      this.busySince = null;
      this.busyRetry_ms = BUSY_LIMITS.first_retry_ms;
      this.refused(err, batch);
      return 'done';
    }
    this.busySince = null;
    this.busyRetry_ms = BUSY_LIMITS.first_retry_ms;
    let { lost, storageErr } = await runBodies(this.st, this.db, this.connection, this.bodyStmts, batch, outcomes);
    if (lost === null) {
      try {
        this.commit.run();
      } catch (err) {
        lost = err;
      }
    }
    if (lost !== null) {
      if (this.db.inTransaction) this.rollback.run();
      this.refused(lost, batch);
      return 'done';
    }
    if (storageErr !== null) this.refused(storageErr, []);
    else this.failure = null;
    this.durability.committed(batch, outcomes);
    this.checkpointer?.nudge();
    return 'done';
  }

  /** Note a refused write; the bodies of a group it took with it get its error (a 503 to clients). */
  private refused(err: unknown, lost: Pending[]): void {
    const e = err as { code?: string; message?: string };
    this.failure = { code: e.code ?? 'SQLITE_ERROR', message: String(e.message ?? err), at: Date.now() };
    this.log.error('storage refused a write; the group is answered 503', { code: this.failure.code, error: this.failure.message });
    for (const p of lost) p.reject(err);
  }

  /** See Store.trouble: a disk full, an I/O error, the write lock held too long. */
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

  /**
   * See Store.keyTablesVersion. This connection's writes to the key tables reach it through temporary triggers,
   * inside the writing statement (a rolled-back change moves it too: a needless reload, never a stale answer);
   * other connections' commits (an admin command in another process) through `PRAGMA data_version`, read at the
   * first call of each turn of the event loop: a change made elsewhere is seen by every request read from the
   * sockets after the turn in which it committed.
   */
  keyTablesVersion(): number {
    const dv = this.dataVersion ?? this.watchKeyTables();
    if (!dv.thisTurn) {
      dv.thisTurn = true;
      setImmediate(() => (dv.thisTurn = false));
      const v = dv.stmt.get();
      if (v !== dv.seen) {
        dv.seen = v;
        this.keyVersion++;
      }
    }
    return this.keyVersion;
  }

  private watchKeyTables(): NonNullable<SqliteStore['dataVersion']> {
    this.db.function('kopek_key_tables_changed', { deterministic: false }, () => {
      this.keyVersion++;
      return null;
    });
    for (const { table, columns } of KEY_TABLES) {
      const update = columns ? `UPDATE OF ${columns.map((c) => `"${c}"`).join(', ')}` : 'UPDATE';
      ['INSERT', 'DELETE', update].forEach((on, i) => {
        this.db.exec(`CREATE TEMP TRIGGER IF NOT EXISTS kopek_keys_${table}_${i} AFTER ${on} ON main.${table} BEGIN SELECT kopek_key_tables_changed(); END`);
      });
    }
    const stmt = this.db.prepare('PRAGMA data_version').pluck();
    return (this.dataVersion = { stmt, seen: stmt.get(), thisTurn: false });
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
    this.durability.syncNow();
  }

  /** Flush, then close the connection and the WAL file (once a sync on the thread pool is done with it). */
  async close(): Promise<void> {
    if (!this.db.open) return;
    await this.flush();
    this.checkpointer?.close();
    this.db.close();
    this.durability.close();
  }
}

/** The log of a store given none (the admin commands): errors to stderr, as JSON lines like the server's. */
const STDERR_LOG = createLogger('debug', (line) => process.stderr.write(line));

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
 * The SQLite engine. `write` commits every body queued in one turn of the event loop in one transaction (group
 * commit), each in a savepoint so a failing body rolls back only itself; `tx` runs a body alone. A body that
 * awaits anything but its Tx fails loudly (AWAITED_OUTSIDE) instead of holding the write lock. Promises settle
 * and after-commit hooks run only once the commit is durable (durable.ts).
 *
 * Reads outside a transaction see committed data only and wait for an open one. With `sync: 'store'` a commit is
 * visible a little before it is durable, so a read answers once the commits before it are durable too. Groups
 * keep committing while a sync runs; one sync covers every commit made before it started.
 */
export class SqliteStore implements Store {
  readonly engine = 'sqlite' as const;
  readonly eventFeed = null;
  readonly now = Date.now;
  private readonly db: Database.Database;
  private readonly st: Statements;
  readonly connection: object = Object.freeze({});
  readonly path: string;
  private queue: Pending[] = [];
  private scheduled = false;
  private readonly writeLock = new WriteLock();
  // Compiled once: db.exec parses its SQL on every call, once per body under load.
  private readonly begin: Database.Statement;
  private readonly commit: Database.Statement;
  private readonly rollback: Database.Statement;
  private readonly bodyStmts: BodyStatements;
  private readonly log: Logger;
  private readonly durability: Durability;
  private readonly checkpointer: Checkpointer | null = null;
  /** Wait for another process's write lock on timers, not blocking the thread (sync: 'store'). */
  private readonly busyAsync: boolean;
  private busySince: number | null = null;
  private busyRetry_ms = BUSY_LIMITS.first_retry_ms;
  /** The last write the storage refused (disk full, I/O error, lock held), until a commit succeeds. */
  private failure: StorageTrouble | null = null;
  /** See keyTablesVersion: the number, `PRAGMA data_version` as last read, and whether this turn read it. */
  private keyVersion = 0;
  private dataVersion: { stmt: Database.Statement; seen: unknown; thisTurn: boolean } | null = null;

  constructor(db: Database.Database, opts: StoreOptions = {}) {
    this.db = db;
    this.st = new Statements(db);
    this.path = db.name;
    this.log = opts.log ?? STDERR_LOG;
    // Savepoint journals would spill to disk after 64 KiB (half of an insert's cost); they live only until
    // COMMIT and play no part in crash recovery (the WAL does), so memory keeps durability unchanged.
    db.pragma('temp_store = MEMORY');
    this.begin = db.prepare('BEGIN IMMEDIATE');
    this.commit = db.prepare('COMMIT');
    this.rollback = db.prepare('ROLLBACK');
    this.bodyStmts = { savepoint: db.prepare('SAVEPOINT body'), release: db.prepare('RELEASE body'), rollbackTo: db.prepare('ROLLBACK TO body') };
    this.busyAsync = opts.sync === 'store';
    // SQLite's busy handler sleeps on the thread, stopping the event loop (and /healthz). The server's store
    // waits with timers instead (flushFn); tx() fails at once.
    if (this.busyAsync) db.pragma('busy_timeout = 0');
    const wal = opts.sync === 'store' ? Durability.walFile(db) : null;
    this.durability = new Durability(this.log, wal);
    if (wal !== null) this.checkpointer = new Checkpointer(db, realpathSync(db.name), this.log);
  }

  /** The connection, for src/platform/storage/ only: domain code goes through Reader and Tx. */
  get sqliteHandle(): Database.Database {
    return this.db;
  }

  get isOpen(): boolean {
    return this.db.open;
  }
  get commits(): number {
    return this.durability.commits;
  }

  /** Waits for an open transaction; answers once durable. */
  get<T = Row>(sql: string, ...params: unknown[]): Promise<T | undefined> {
    if (this.writeLock.held) return this.readLocked(() => this.st.get(sql, params) as T | undefined);
    try {
      return this.durable(this.st.get(sql, params) as T | undefined);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Waits for an open transaction; answers once durable. */
  all<T = Row>(sql: string, ...params: unknown[]): Promise<T[]> {
    if (this.writeLock.held) return this.readLocked(() => this.st.of(sql).stmt.all(...params) as T[]);
    try {
      return this.durable(this.st.of(sql).stmt.all(...params) as T[]);
    } catch (err) {
      return Promise.reject(err);
    }
  }

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

  async tx<T>(fn: Body<T>): Promise<T> {
    const wait = this.writeLock.take();
    if (wait) await wait;
    const hooks: Array<() => void> = [];
    let result: T;
    try {
      result = await this.alone(fn, new SqliteTx(this.st, this.db, this.connection, hooks));
    } catch (err) {
      this.writeLock.give();
      // A refusal can rest on data as much as a result can.
      await this.durability.settled();
      throw err;
    }
    this.writeLock.give();
    this.checkpointer?.nudge();
    return new Promise<T>((resolve, reject) => this.durability.committed([{ fn, resolve: resolve as (v: unknown) => void, reject }], [{ ok: true, value: result, hooks }]));
  }

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

  async snapshot<T>(fn: (q: Reader) => Promise<T> | T): Promise<T> {
    return this.durable(await readSnapshot(this.st, this.db, this.writeLock, this.connection, fn));
  }

  /** Queue `fn` for the next group commit; settles once durable. */
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

  /** 'busy' when another process holds the write lock and nothing ran: the caller retries the group. */
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

  /** The bodies of a group a refused write took with it get its error (a 503). */
  private refused(err: unknown, lost: Pending[]): void {
    const e = err as { code?: string; message?: string };
    this.failure = { code: e.code ?? 'SQLITE_ERROR', message: String(e.message ?? err), at: Date.now() };
    this.log.error('storage refused a write; the group is answered 503', { code: this.failure.code, error: this.failure.message });
    for (const p of lost) p.reject(err);
  }

  trouble(): StorageTrouble | null {
    return this.failure;
  }

  /** A write through the group commit (schema version set to itself): resolves once the storage takes writes. */
  probeWrite(): Promise<void> {
    return this.write(() => {
      const v = this.db.pragma('user_version', { simple: true }) as number;
      this.db.pragma(`user_version = ${v}`);
    });
  }

  /**
   * Moved by temporary triggers on this connection's key-table writes (a rolled-back change too: a needless
   * reload, never a stale answer), and by `PRAGMA data_version` for other processes' commits, read at the first
   * call of each event-loop turn.
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

  /** Commit everything queued and wait for the disk (shutdown). */
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

  /** Flush, then close (once a sync on the thread pool is done with it). */
  async close(): Promise<void> {
    if (!this.db.open) return;
    await this.flush();
    this.checkpointer?.close();
    this.db.close();
    this.durability.close();
  }
}

/** The admin commands' log: errors to stderr, as JSON lines. */
const STDERR_LOG = createLogger('debug', (line) => process.stderr.write(line));

import type Database from 'better-sqlite3';
import { realpathSync } from 'node:fs';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { createLogger, type Logger } from '../../log';
import { TX_ENDED, type Body, type Reader, type Row, type RunResult, type Tx } from '../tx';
import { columnsChanged, Statements } from './statements';
import { BUSY_LIMITS, GROUP_LIMIT, type StoreOptions } from '../limits';
import { Checkpointer, Durability } from './wal';
import { KEY_TABLES, type Store, type StorageTrouble } from '../store';

export const AWAITED_OUTSIDE =
  'a transaction body awaited something other than its transaction (the network, a timer, another request, or a read through the store instead of its Tx); it would hold the write lock, so it was rolled back';

/** What a body's watchdog answers when the body still runs at the end of the turn it started in. */
const OUTSIDE = Symbol('awaited outside');

/** How long a reading of `PRAGMA data_version` stands for the key tables (keyTablesVersion). */
const KEY_VERSION_FRESH_MS = 1;

/** Storage errors that leave a transaction standing: recorded as trouble(), the group still commits. */
const STORAGE_CODES = /^SQLITE_(FULL|IOERR|CANTOPEN|READONLY)/;

/**
 * A transaction on one SQLite connection, alive while its body runs (`live`); in a group commit it keeps its body
 * (`fn`) and outcome (`ok`, `value`). No constructor: `SqliteTx.of` makes the connection's class, whose prototype
 * holds the statements and the defaults, so `new` calls nothing.
 */
class SqliteTx implements Tx {
  declare readonly engine: 'sqlite';
  declare live: boolean;
  declare hooks: Array<() => void> | null;
  declare fn: Body<unknown> | null;
  declare ok: boolean;
  declare value: unknown;
  declare private readonly st: Statements;
  declare private depth: number;

  static of(st: Statements): new () => SqliteTx {
    const OfConnection = class extends SqliteTx {};
    Object.assign(OfConnection.prototype, { st });
    return OfConnection;
  }

  get<T = Row>(sql: string, ...params: unknown[]): Promise<T | undefined> {
    if (!this.live) return Promise.reject(new Error(TX_ENDED));
    try {
      const st = this.st;
      const p = st.cache.get(sql) ?? st.add(sql);
      const rows = p.rows === undefined ? st.rowsOf(p) : p.rows;
      if (rows === null) return Promise.resolve(p.stmt.get(...params) as T | undefined);
      const a = rows.get(...params) as unknown[] | undefined;
      return Promise.resolve((a === undefined ? a : a.length === p.width ? p.build!(a) : columnsChanged(p)) as T | undefined);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  all<T = Row>(sql: string, ...params: unknown[]): Promise<T[]> {
    if (!this.live) return Promise.reject(new Error(TX_ENDED));
    try {
      return Promise.resolve((this.st.cache.get(sql) ?? this.st.add(sql)).stmt.all(...params) as T[]);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  run(sql: string, ...params: unknown[]): Promise<RunResult> {
    if (!this.live) return Promise.reject(new Error(TX_ENDED));
    try {
      const r = (this.st.cache.get(sql) ?? this.st.add(sql)).stmt.run(...params);
      this.st.written += r.changes;
      return Promise.resolve({ changes: r.changes, lastInsertRowid: Number(r.lastInsertRowid) });
    } catch (err) {
      return Promise.reject(err);
    }
  }

  async savepoint<T>(fn: (tx: Tx) => Promise<T> | T): Promise<T> {
    if (!this.live) throw new Error(TX_ENDED);
    const name = `nested${++this.depth}`;
    this.st.exec(`SAVEPOINT ${name}`);
    try {
      const value = await fn(this);
      if (!this.live) throw new Error(TX_ENDED);
      this.st.exec(`RELEASE ${name}`);
      return value;
    } catch (err) {
      if (this.live && this.st.db.inTransaction) {
        this.st.exec(`ROLLBACK TO ${name}`);
        this.st.exec(`RELEASE ${name}`);
      }
      throw err;
    } finally {
      this.depth--;
    }
  }

  afterCommit(fn: () => void): void {
    if (!this.live) throw new Error(TX_ENDED);
    (this.hooks ??= []).push(fn);
  }
}

Object.assign(SqliteTx.prototype, { engine: 'sqlite', live: true, hooks: null, fn: null, ok: false, value: undefined, depth: 0 });

/** The bodies queued in one turn (each with its Tx), committed as one; `done` settles once that commit is durable. */
interface Group {
  txs: SqliteTx[];
  done: Promise<void>;
}

/**
 * The SQLite engine. `write` commits every body queued in one turn of the event loop in one transaction (group
 * commit), each in a savepoint so a failing body rolls back only itself; `tx` runs a body alone; a body still
 * running at the turn's end fails with AWAITED_OUTSIDE. Promises settle and after-commit hooks run only once the
 * commit is durable (wal.ts). One transaction at a time, in order (the write lock). Reads outside a transaction
 * see committed data only (one waits for an open transaction) and, as a commit is visible a little before it is
 * durable (`sync: 'store'`), answer once the commits before them are durable too.
 */
export class SqliteStore implements Store {
  readonly engine = 'sqlite' as const;
  readonly eventFeed = null;
  readonly now = Date.now;
  readonly path: string;
  isOpen = true;
  private readonly db: Database.Database;
  private readonly st: Statements;
  private readonly Tx: new () => SqliteTx;
  private readonly durability: Durability;
  private readonly checkpointer: Checkpointer | null = null;
  private readonly log: Logger;
  private locked = false;
  private readonly waiters: Array<() => void> = [];
  /** The group taking bodies, and the last one not yet committed (flush waits for it). */
  private group: Group | null = null;
  private last: Group | null = null;
  // Compiled once: db.exec parses its SQL on every call, once per body under load.
  private readonly begin: Database.Statement;
  private readonly commit: Database.Statement;
  private readonly rollback: Database.Statement;
  private readonly savepoint: Database.Statement;
  private readonly release: Database.Statement;
  private readonly rollbackTo: Database.Statement;
  /** Wait for another process's write lock on timers, not blocking the thread (sync: 'store'); not once closing. */
  private readonly busyAsync: boolean;
  private closing = false;
  /** The last write the storage refused (disk full, I/O error, lock held), until a commit succeeds. */
  private failure: StorageTrouble | null = null;
  /** See keyTablesVersion: the number, and `PRAGMA data_version` as last read. */
  private keyVersion = 0;
  private dataVersion: { stmt: Database.Statement; seen: unknown; readAt: number } | null = null;

  constructor(db: Database.Database, opts: StoreOptions = {}) {
    this.db = db;
    this.st = new Statements(db);
    this.Tx = SqliteTx.of(this.st);
    this.path = db.name;
    this.log = opts.log ?? STDERR_LOG;
    // Savepoint journals would spill to disk after 64 KiB (half of an insert's cost); they live only until
    // COMMIT and play no part in crash recovery (the WAL does), so memory keeps durability unchanged.
    db.pragma('temp_store = MEMORY');
    this.begin = db.prepare('BEGIN IMMEDIATE');
    this.commit = db.prepare('COMMIT');
    this.rollback = db.prepare('ROLLBACK');
    this.savepoint = db.prepare('SAVEPOINT body');
    this.release = db.prepare('RELEASE body');
    this.rollbackTo = db.prepare('ROLLBACK TO body');
    this.busyAsync = opts.sync === 'store';
    // SQLite's busy handler sleeps on the thread, stopping the event loop (and /healthz). The server's store
    // waits with timers instead (see busy()); tx() fails at once.
    if (this.busyAsync) db.pragma('busy_timeout = 0');
    const wal = opts.sync === 'store' ? Durability.walFile(db) : null;
    if (wal !== null) this.checkpointer = new Checkpointer(db, realpathSync(db.name), this.log, this.st);
    this.durability = new Durability(this.log, wal, this.checkpointer, this.st);
  }

  /** The connection, for src/platform/storage/ only: domain code goes through Reader and Tx. */
  get sqliteHandle(): Database.Database {
    return this.db;
  }

  get commits(): number {
    return this.durability.commits;
  }

  async get<T = Row>(sql: string, ...params: unknown[]): Promise<T | undefined> {
    const held = this.db.inTransaction;
    if (held) await this.lock();
    let row: unknown;
    try {
      const st = this.st;
      const p = st.cache.get(sql) ?? st.add(sql);
      const rows = p.rows === undefined ? st.rowsOf(p) : p.rows;
      if (rows === null) row = p.stmt.get(...params);
      else {
        const a = rows.get(...params) as unknown[] | undefined;
        row = a === undefined ? a : a.length === p.width ? p.build!(a) : columnsChanged(p);
      }
    } finally {
      if (held) this.unlock();
    }
    if (this.durability.durable < this.durability.commits) await this.durability.settled();
    return row as T | undefined;
  }

  async all<T = Row>(sql: string, ...params: unknown[]): Promise<T[]> {
    const held = this.db.inTransaction;
    if (held) await this.lock();
    let rows: T[];
    try {
      rows = (this.st.cache.get(sql) ?? this.st.add(sql)).stmt.all(...params) as T[];
    } finally {
      if (held) this.unlock();
    }
    if (this.durability.durable < this.durability.commits) await this.durability.settled();
    return rows;
  }

  private lock(): Promise<void> | void {
    if (!this.locked) {
      this.locked = true;
      return;
    }
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  private unlock(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.locked = false;
  }

  async tx<T>(fn: Body<T>): Promise<T> {
    if (this.locked) await this.lock();
    else this.locked = true;
    const tx = new this.Tx();
    let value: unknown;
    try {
      // As before a group commit: a long run of tx() (a clock advance) must also let the WAL start over.
      if (this.checkpointer?.catchUp) this.checkpointer.catchUpNow();
      this.begin.run();
      value = fn(tx);
      if (value instanceof Promise) value = await Promise.race([value, nextTurn(OUTSIDE)]);
      if (value === OUTSIDE) throw new Error(AWAITED_OUTSIDE);
      tx.live = false;
      this.commit.run();
    } catch (err) {
      tx.live = false;
      if (this.db.inTransaction) this.rollback.run();
      this.unlock();
      // A refusal can rest on data as much as a result can.
      if (this.durability.durable < this.durability.commits) await this.durability.settled();
      throw err;
    }
    if (this.waiters.length === 0) this.locked = false;
    else this.waiters.shift()!();
    this.st.written++;
    const durable = this.durability.committed();
    if (durable !== null) await durable;
    if (tx.hooks !== null) {
      for (const h of tx.hooks) {
        try {
          h();
        } catch (err) {
          this.hookFailed(err);
        }
      }
    }
    return value as T;
  }

  /** One that throws is logged, not rethrown: it must not undo or hide a commit; the durable record (jobs, outbox) retries it. */
  private hookFailed(err: unknown): void {
    this.log.error('after-commit action failed', { error: String(err) });
  }

  /** `fn` over one snapshot (a read transaction; other processes write on unseen). `fn` awaits only its Reader. */
  async snapshot<T>(fn: (q: Reader) => Promise<T> | T): Promise<T> {
    if (this.locked) await this.lock();
    else this.locked = true;
    const tx = new this.Tx();
    let value: unknown;
    try {
      this.st.exec('BEGIN DEFERRED');
      // The first read starts the snapshot; everything after reads the same.
      value = fn(tx);
      if (value instanceof Promise) value = await Promise.race([value, nextTurn(OUTSIDE)]);
      if (value === OUTSIDE) throw new Error(AWAITED_OUTSIDE);
    } finally {
      tx.live = false;
      if (this.db.inTransaction) this.commit.run();
      this.unlock();
    }
    if (this.durability.durable < this.durability.commits) await this.durability.settled();
    return value as T;
  }

  async write<T>(fn: Body<T>): Promise<T> {
    let g = this.group;
    if (g === null || g.txs.length >= GROUP_LIMIT) {
      g = this.group = this.last = { txs: [], done: null as unknown as Promise<void> };
      g.done = nextTurn(g).then(this.commitGroup);
    }
    const tx = new this.Tx();
    tx.fn = fn as Body<unknown>;
    g.txs.push(tx);
    await g.done;
    if (!tx.ok) throw tx.value;
    if (tx.hooks !== null) {
      for (const h of tx.hooks) {
        try {
          h();
        } catch (err) {
          this.hookFailed(err);
        }
      }
    }
    return tx.value as T;
  }

  /**
   * The group's bodies in one transaction, each in its savepoint: one that throws is rolled back alone. When the
   * whole transaction is gone (a full disk or I/O error can make SQLite roll it back) every body gets its error.
   */
  private readonly commitGroup = async (g: Group): Promise<void> => {
    if (this.locked) await this.lock();
    else this.locked = true;
    if (this.group === g) this.group = null;
    let storageErr: unknown = null;
    // Every body that awaits only its Tx ends within the turn the group started in: one watchdog serves them all.
    let watchdog: Promise<typeof OUTSIDE> | null = null;
    try {
      if (this.checkpointer?.catchUp) this.checkpointer.catchUpNow();
      try {
        this.begin.run();
      } catch (err) {
        await this.busy(err);
      }
      for (const tx of g.txs) {
        this.savepoint.run();
        try {
          let value: unknown = tx.fn!(tx);
          if (value instanceof Promise) value = await Promise.race([value, (watchdog ??= nextTurn(OUTSIDE))]);
          if (value === OUTSIDE) {
            watchdog = null;
            throw new Error(AWAITED_OUTSIDE);
          }
          tx.live = false;
          this.release.run();
          tx.ok = true;
          tx.value = value;
        } catch (err) {
          tx.live = false;
          tx.value = err;
          if (STORAGE_CODES.test(String((err as { code?: string }).code ?? ''))) storageErr = err;
          if (!this.db.inTransaction) throw err;
          this.rollbackTo.run();
          this.release.run();
        }
      }
      this.commit.run();
    } catch (err) {
      if (this.db.inTransaction) this.rollback.run();
      if (this.last === g) this.last = null;
      this.unlock();
      throw this.refused(err);
    }
    if (this.last === g) this.last = null;
    if (this.waiters.length === 0) this.locked = false;
    else this.waiters.shift()!();
    if (storageErr !== null) this.refused(storageErr);
    else this.failure = null;
    this.st.written++;
    return this.durability.committed() ?? undefined;
  };

  /**
   * BEGIN failed. Another process holding the file's write lock is waited out on timers for up to
   * BUSY_LIMITS.total_ms (sync: 'store', not while closing), holding this store's lock so the groups keep their
   * order; reads go on meanwhile, as no transaction is open. Anything else, or longer, is refused.
   */
  private async busy(err: unknown): Promise<void> {
    const since = Date.now();
    for (let retry_ms = BUSY_LIMITS.first_retry_ms; ; retry_ms = Math.min(retry_ms * 2, BUSY_LIMITS.longest_retry_ms)) {
      const busy = (err as { code?: string }).code === 'SQLITE_BUSY';
      if (!busy || !this.busyAsync || this.closing || Date.now() - since >= BUSY_LIMITS.total_ms) throw err;
      await sleep(retry_ms);
      try {
        return void this.begin.run();
      } catch (again) {
        err = again;
      }
    }
  }

  /** A refused write: recorded for trouble() (the bodies it took with it are answered 503). */
  private refused(err: unknown): unknown {
    const e = err as { code?: string; message?: string };
    this.failure = { code: e.code ?? 'SQLITE_ERROR', message: String(e.message ?? err), at: Date.now() };
    this.log.error('storage refused a write; the group is answered 503', { code: this.failure.code, error: this.failure.message });
    return err;
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
   * reload, never a stale answer), and by `PRAGMA data_version` for other processes' commits. That statement
   * opens a read of the WAL (about a tenth of a GET's cost), so it is read at most once per
   * KEY_VERSION_FRESH_MS: another process's revocation counts within that much of its commit.
   */
  keyTablesVersion(): number {
    const dv = this.dataVersion ?? this.watchKeyTables();
    const t = performance.now();
    if (t - dv.readAt < KEY_VERSION_FRESH_MS) return this.keyVersion;
    dv.readAt = t;
    const v = dv.stmt.get();
    if (v !== dv.seen) {
      dv.seen = v;
      this.keyVersion++;
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
    return (this.dataVersion = { stmt, seen: stmt.get(), readAt: performance.now() });
  }

  /** Commit everything queued and wait for the disk (shutdown, a clock advance). */
  async flush(): Promise<void> {
    for (let g = this.last; g !== null; g = this.last) {
      await g.done.catch(() => undefined);
      if (this.last === g) this.last = null;
    }
    this.durability.syncNow();
  }

  /** Flush, then close (once a sync on the thread pool is done with it). */
  async close(): Promise<void> {
    if (!this.db.open) return;
    this.closing = true;
    await this.flush();
    this.checkpointer?.close();
    this.db.close();
    this.isOpen = false;
    this.durability.close();
  }
}

/** The admin commands' log: errors to stderr, as JSON lines. */
const STDERR_LOG = createLogger('debug', (line) => process.stderr.write(line));

// The SQLite transaction: statements prepared once per SQL text, each call on a Tx one frame.
import type Database from 'better-sqlite3';
import { TX_ENDED, type Body, type Row, type RunResult, type Tx } from '../tx';

/** A body that waited on something other than its transaction; it is rolled back. */
export const AWAITED_OUTSIDE =
  'a transaction body awaited something other than its transaction (the network, a timer, another request, or a read through the store instead of its Tx); it would hold the write lock, so it was rolled back';

/** SQL built from column lists is bounded, but a bound costs nothing. */
const STMT_CACHE_LIMIT = 2000;

/**
 * `rows`, made at the first get, reads one row as an array into one object literal of fixed shape (`build`):
 * better-sqlite3 builds rows property by property, which for a 32-column payment costs as much as the query. The
 * literal comes from the SQL's column names, never data. Null when unreadable so (duplicate names, no columns).
 */
export interface Prepared {
  stmt: Database.Statement;
  rows?: Database.Statement | null;
  width: number;
  build?: (a: unknown[]) => unknown;
}

/** Compiled once per SQL text and shared by every caller; `written` counts rows changed and commits (wal.ts). */
export class Statements {
  readonly cache = new Map<string, Prepared>();
  written = 0;

  constructor(readonly db: Database.Database) {}

  add(sql: string): Prepared {
    const p: Prepared = { stmt: this.db.prepare(sql), rows: undefined, width: 0, build: undefined };
    if (this.cache.size >= STMT_CACHE_LIMIT) this.cache.clear();
    this.cache.set(sql, p);
    return p;
  }

  /** A statement without parameters or rows (savepoints, BEGIN). */
  exec(sql: string): void {
    (this.cache.get(sql) ?? this.add(sql)).stmt.run();
  }

  /** The first get of `p`: its row reader, or null. */
  rowsOf(p: Prepared): Database.Statement | null {
    p.rows = null;
    if (!p.stmt.reader) return null;
    // raw() changes a statement, so not the shared one.
    const stmt = this.db.prepare(p.stmt.source);
    const names = stmt.raw(true).columns().map((c) => c.name);
    if (new Set(names).size !== names.length) return null;
    const fields = names.map((n, i) => `${JSON.stringify(n)}: a[${i}]`).join(', ');
    p.width = names.length;
    p.build = new Function('a', `return { ${fields} };`) as (a: unknown[]) => unknown;
    return (p.rows = stmt);
  }
}

/** A schema change after preparing would shift the columns; it happens only at start-up, but never misread. */
export function columnsChanged(p: Prepared): never {
  throw new Error(`cannot read rows of "${p.stmt.source.slice(0, 80)}": the columns changed`);
}

/**
 * A transaction on one SQLite connection, alive while its body runs (`live`). A body's awaits on it settle within
 * the current turn, as SQLite answers at once. In a group commit it keeps its body (`fn`) and the body's outcome
 * (`ok`, `value`). It has no constructor: the store makes one per body with `new` of the class `SqliteTx.of` made
 * for its connection, which holds the statements and the defaults on its prototype, so making one calls nothing.
 */
export class SqliteTx implements Tx {
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

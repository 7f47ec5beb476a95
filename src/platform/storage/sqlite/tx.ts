// The SQLite engine's transaction: statements on the one connection, a savepoint per part, after-commit actions.
import type Database from 'better-sqlite3';
import { cachedRowReader, cachedStmt } from './statements';
import { TX_ENDED, type Row, type RunResult, type Tx } from '../tx';

/** Statements whose columns share a name cannot use the row reader; they fall back to better-sqlite3's rows. */
const plainGet = new WeakMap<Database.Database, Set<string>>();

/** The first row of `sql` on `db`, through the fast row reader where the statement allows it. */
export function getRow(db: Database.Database, sql: string, params: unknown[]): unknown {
  let plain = plainGet.get(db);
  if (plain === undefined || !plain.has(sql)) {
    try {
      return cachedRowReader(db, sql).get(...params);
    } catch (err) {
      // Only a statement the reader cannot build (two columns of one name, no columns) falls back; a failing
      // query fails the same way below.
      if (!/two columns share a name|only for statements that return data/.test(String((err as Error).message))) throw err;
      if (plain === undefined) plainGet.set(db, (plain = new Set()));
      plain.add(sql);
    }
  }
  return cachedStmt(db, sql).get(...params);
}

/** A transaction on one SQLite connection, alive while its body runs. */
export class SqliteTx implements Tx {
  readonly engine = 'sqlite' as const;
  private live = true;
  private depth = 0;

  constructor(
    private readonly db: Database.Database,
    readonly connection: object,
    private readonly hooks: Array<() => void>,
  ) {}

  /** Called by the engine when the body has ended (or was failed): any later call is refused. */
  end(): void {
    this.live = false;
  }

  get<T = Row>(sql: string, ...params: unknown[]): Promise<T | undefined> {
    if (!this.live) return Promise.reject(new Error(TX_ENDED));
    try {
      return Promise.resolve(getRow(this.db, sql, params) as T | undefined);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  all<T = Row>(sql: string, ...params: unknown[]): Promise<T[]> {
    if (!this.live) return Promise.reject(new Error(TX_ENDED));
    try {
      return Promise.resolve(cachedStmt(this.db, sql).all(...params) as T[]);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  run(sql: string, ...params: unknown[]): Promise<RunResult> {
    if (!this.live) return Promise.reject(new Error(TX_ENDED));
    try {
      const r = cachedStmt(this.db, sql).run(...params);
      return Promise.resolve({ changes: r.changes, lastInsertRowid: Number(r.lastInsertRowid) });
    } catch (err) {
      return Promise.reject(err);
    }
  }

  async savepoint<T>(fn: (tx: Tx) => Promise<T> | T): Promise<T> {
    if (!this.live) throw new Error(TX_ENDED);
    const name = `nested${++this.depth}`;
    cachedStmt(this.db, `SAVEPOINT ${name}`).run();
    try {
      const value = await fn(this);
      if (!this.live) throw new Error(TX_ENDED);
      cachedStmt(this.db, `RELEASE ${name}`).run();
      return value;
    } catch (err) {
      if (this.live && this.db.inTransaction) {
        cachedStmt(this.db, `ROLLBACK TO ${name}`).run();
        cachedStmt(this.db, `RELEASE ${name}`).run();
      }
      throw err;
    } finally {
      this.depth--;
    }
  }

  afterCommit(fn: () => void): void {
    if (!this.live) throw new Error(TX_ENDED);
    this.hooks.push(fn);
  }
}

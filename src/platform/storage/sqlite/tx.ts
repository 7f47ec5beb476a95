// The SQLite transaction: statements (prepared once), the body's watchdog, and the connection's write lock.
import type Database from 'better-sqlite3';
import { TX_ENDED, type Body, type Reader, type Row, type RunResult, type Tx } from '../tx';

/** A body that waited on something other than its transaction; it is rolled back. */
export const AWAITED_OUTSIDE =
  'a transaction body awaited something other than its transaction (the network, a timer, another request, or a read through the store instead of its Tx); it would hold the write lock, so it was rolled back';

/** SQL built from column lists is bounded, but a bound costs nothing. */
const STMT_CACHE_LIMIT = 2000;

/**
 * `row`, made at the first get, reads one row as an array into one object literal of fixed shape: better-sqlite3
 * builds rows property by property, which for a 32-column payment costs as much as the query. The literal comes
 * from the SQL's column names, never data. Null when unreadable so (duplicate names, no columns).
 */
interface Prepared {
  stmt: Database.Statement;
  row?: RowReader | null;
}

type RowReader = { stmt: Database.Statement; width: number; build: (a: unknown[]) => unknown };

/** Compiled once per SQL text and shared by every caller (run/get/all only). */
export class Statements {
  private readonly cache = new Map<string, Prepared>();

  constructor(private readonly db: Database.Database) {}

  of(sql: string): Prepared {
    return this.cache.get(sql) ?? this.add(sql);
  }

  private add(sql: string): Prepared {
    const p = { stmt: this.db.prepare(sql) };
    if (this.cache.size >= STMT_CACHE_LIMIT) this.cache.clear();
    this.cache.set(sql, p);
    return p;
  }

  get(sql: string, params: unknown[]): unknown {
    const p = this.cache.get(sql) ?? this.add(sql);
    if (p.row === undefined) p.row = this.rowReader(sql);
    const r = p.row;
    if (r === null) return p.stmt.get(...params);
    const a = r.stmt.get(...params) as unknown[] | undefined;
    if (a === undefined) return undefined;
    // A schema change after preparing would shift the columns; it happens only at start-up, but never misread.
    if (a.length !== r.width) throw new Error(`cannot read rows of "${sql.slice(0, 80)}": the columns changed`);
    return r.build(a);
  }

  private rowReader(sql: string): RowReader | null {
      // raw() changes a statement, so not the shared one.
    const stmt = this.db.prepare(sql);
    if (!stmt.reader) return null;
    const names = stmt.raw(true).columns().map((c) => c.name);
    if (new Set(names).size !== names.length) return null;
    const fields = names.map((n, i) => `${JSON.stringify(n)}: a[${i}]`).join(', ');
    return { stmt, width: names.length, build: new Function('a', `return { ${fields} };`) as (a: unknown[]) => unknown };
  }
}

/** A transaction on one SQLite connection, alive while its body runs. */
export class SqliteTx implements Tx {
  readonly engine = 'sqlite' as const;
  private live = true;
  private depth = 0;

  constructor(
    private readonly st: Statements,
    private readonly db: Database.Database,
    readonly connection: object,
    private readonly hooks: Array<() => void>,
  ) {}

  /** After the body ended (or was failed) any call is refused. */
  end(): void {
    this.live = false;
  }

  get<T = Row>(sql: string, ...params: unknown[]): Promise<T | undefined> {
    if (!this.live) return Promise.reject(new Error(TX_ENDED));
    try {
      return Promise.resolve(this.st.get(sql, params) as T | undefined);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  all<T = Row>(sql: string, ...params: unknown[]): Promise<T[]> {
    if (!this.live) return Promise.reject(new Error(TX_ENDED));
    try {
      return Promise.resolve(this.st.of(sql).stmt.all(...params) as T[]);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  run(sql: string, ...params: unknown[]): Promise<RunResult> {
    if (!this.live) return Promise.reject(new Error(TX_ENDED));
    try {
      const r = this.st.of(sql).stmt.run(...params);
      return Promise.resolve({ changes: r.changes, lastInsertRowid: Number(r.lastInsertRowid) });
    } catch (err) {
      return Promise.reject(err);
    }
  }

  async savepoint<T>(fn: (tx: Tx) => Promise<T> | T): Promise<T> {
    if (!this.live) throw new Error(TX_ENDED);
    const name = `nested${++this.depth}`;
    this.st.of(`SAVEPOINT ${name}`).stmt.run();
    try {
      const value = await fn(this);
      if (!this.live) throw new Error(TX_ENDED);
      this.st.of(`RELEASE ${name}`).stmt.run();
      return value;
    } catch (err) {
      if (this.live && this.db.inTransaction) {
        this.st.of(`ROLLBACK TO ${name}`).stmt.run();
        this.st.of(`RELEASE ${name}`).stmt.run();
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

/**
 * A body's awaits on its Tx settle within the current turn (SQLite answers at once); one still running at the
 * turn's end waits on something else and would hold the write lock: it fails with AWAITED_OUTSIDE.
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
    const settle = (ok: boolean, v: unknown): void => {
      if (done) return;
      done = true;
      clearImmediate(watchdog);
      if (ok) resolve(v as T);
      else reject(v);
    };
    out.then(
      (v: T) => settle(true, v),
      (err: unknown) => settle(false, err),
    );
  });
}

/** One transaction at a time, in order; a read outside a transaction takes it too, to wait instead of seeing its rows. */
export class WriteLock {
  private locked = false;
  private waiters: Array<() => void> = [];

  get held(): boolean {
    return this.locked;
  }

  /** Null when taken at once, else settles when it is ours. */
  take(): Promise<void> | null {
    if (!this.locked) {
      this.locked = true;
      return null;
    }
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  give(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.locked = false;
  }
}

export type BodyStatements = { savepoint: Database.Statement; release: Database.Statement; rollbackTo: Database.Statement };

/**
 * A group's bodies, each in its savepoint: one that throws is rolled back alone. `lost`: the whole transaction is
 * gone (a full disk or I/O error can make SQLite roll it back); `storageErr`: a storage error left it standing.
 */
export async function runBodies(
  st: Statements,
  db: Database.Database,
  connection: object,
  stmts: BodyStatements,
  batch: Array<{ fn: Body<unknown> }>,
  outcomes: Array<{ ok: boolean; value: unknown; hooks: Array<() => void> }>,
): Promise<{ lost: unknown; storageErr: unknown }> {
  let lost: unknown = null;
  let storageErr: unknown = null;
  for (const p of batch) {
    const hooks: Array<() => void> = [];
    const tx = new SqliteTx(st, db, connection, hooks);
    stmts.savepoint.run();
    try {
      const value = await runBody(p.fn, tx);
      tx.end();
      stmts.release.run();
      outcomes.push({ ok: true, value, hooks });
    } catch (err) {
      tx.end();
      if (STORAGE_CODES.test(String((err as { code?: string }).code ?? ''))) storageErr = err;
      if (!db.inTransaction) {
        lost = err;
        break;
      }
      try {
        stmts.rollbackTo.run();
        stmts.release.run();
      } catch (undo) {
        lost = undo;
        break;
      }
      outcomes.push({ ok: false, value: err, hooks: [] });
    }
  }
  return { lost, storageErr };
}

const STORAGE_CODES = /^SQLITE_(FULL|IOERR|CANTOPEN|READONLY)/;

/**
 * `fn` over one snapshot, in a read transaction without the file's write lock: other processes write on (WAL)
 * unseen. For long reads that must agree with themselves (ledger check, doctor). `fn` awaits only its Reader.
 */
export async function readSnapshot<T>(st: Statements, db: Database.Database, lock: WriteLock, connection: object, fn: (q: Reader) => Promise<T> | T): Promise<T> {
  const wait = lock.take();
  if (wait) await wait;
  const tx = new SqliteTx(st, db, connection, []);
  try {
    st.of('BEGIN DEFERRED').stmt.run();
    try {
      // The first read starts the snapshot; everything after reads the same.
      return await runBody(fn, tx);
    } finally {
      tx.end();
      if (db.inTransaction) st.of('COMMIT').stmt.run();
    }
  } finally {
    lock.give();
  }
}

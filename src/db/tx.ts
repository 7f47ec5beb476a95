import type Database from 'better-sqlite3';

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

/**
 * The one way to write. `tx` runs a body now in its own immediate transaction; `write` queues a body and
 * commits every body queued in the same turn of the event loop in one transaction (group commit), each in
 * its own savepoint so that one failing body rolls back only itself. Promises settle after the commit, so a
 * response is sent only once its data is durable.
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
  /** Bound once so that every Tx shares it instead of allocating a closure per body. */
  readonly stmtFn = (sql: string): Database.Statement => this.stmt(sql);

  constructor(db: Database.Database) {
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
  }

  /** A cached prepared statement of this store's connection (see cachedStmt: run/get/all only). */
  stmt(sql: string): Database.Statement {
    return cachedStmt(this.db, sql);
  }

  /** A cached single-row reader of this store's connection (see cachedRowReader): for wide rows on hot paths. */
  reader(sql: string): RowReader {
    return cachedRowReader(this.db, sql);
  }

  private newTx(hooks: Array<() => void>): Tx {
    return { db: this.db, stmt: this.stmtFn, afterCommit: (h) => hooks.push(h) };
  }

  /** Run `fn` in one synchronous immediate transaction, now; after-commit callbacks run after it commits. */
  tx<T>(fn: (tx: Tx) => T): T {
    if (this.inTx) throw new Error('cannot open a transaction inside another');
    const hooks: Array<() => void> = [];
    const tx = this.newTx(hooks);
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
    runHooks(hooks);
    return result;
  }

  /** Queue `fn` for the next group commit; resolves with its result once committed, rejects with its error. */
  write<T>(fn: (tx: Tx) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.flushFn);
      }
    });
  }

  private readonly flushFn = (): void => this.flush();

  /** Commit everything queued now (also called on shutdown). */
  flush(): void {
    this.scheduled = false;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, GROUP_LIMIT);
      this.commitGroup(batch);
    }
  }

  private commitGroup(batch: Pending[]): void {
    const outcomes: Array<{ ok: boolean; value: unknown; hooks: Array<() => void> }> = [];
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
    for (let i = 0; i < batch.length; i++) {
      const o = outcomes[i];
      if (o.ok) {
        runHooks(o.hooks);
        batch[i].resolve(o.value);
      } else {
        batch[i].reject(o.value);
      }
    }
  }
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

import type Database from 'better-sqlite3';

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
  let cache = stmtCaches.get(db);
  if (!cache) {
    cache = new Map();
    stmtCaches.set(db, cache);
  }
  let s = cache.get(sql);
  if (!s) {
    s = db.prepare(sql);
    if (cache.size >= STMT_CACHE_LIMIT) cache.clear();
    cache.set(sql, s);
  }
  return s;
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
        setImmediate(() => this.flush());
      }
    });
  }

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
    const T0 = process.hrtime.bigint();
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
    const T1 = process.hrtime.bigint();
    try {
      this.commit.run();
      const T2 = process.hrtime.bigint();
      (globalThis as any).__st ??= { n: 0, groups: 0, body: 0n, commit: 0n };
      const st = (globalThis as any).__st; st.n += batch.length; st.groups++; st.body += T1 - T0; st.commit += T2 - T1;
      if (st.groups % 200 === 0) console.error('GROUPSTAT', st.n / st.groups, Number(st.body) / st.n / 1e3, 'us/body', Number(st.commit) / st.groups / 1e6, 'ms/commit');
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

import type Database from 'better-sqlite3';

/** What a transaction body receives: the database and a way to act after the commit. */
export interface Tx {
  db: Database.Database;
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
  private readonly stmtCache = new Map<string, Database.Statement>();
  private inTx = false;

  constructor(db: Database.Database) {
    this.db = db;
  }

  /** A prepared statement, compiled once per SQL text. */
  stmt(sql: string): Database.Statement {
    let s = this.stmtCache.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.stmtCache.set(sql, s);
    }
    return s;
  }

  /** Run `fn` in one synchronous immediate transaction, now; after-commit callbacks run after it commits. */
  tx<T>(fn: (tx: Tx) => T): T {
    if (this.inTx) throw new Error('cannot open a transaction inside another');
    const hooks: Array<() => void> = [];
    const tx: Tx = { db: this.db, afterCommit: (h) => hooks.push(h) };
    this.inTx = true;
    let result: T;
    try {
      this.db.exec('BEGIN IMMEDIATE');
      try {
        result = fn(tx);
        this.db.exec('COMMIT');
      } catch (err) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
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
      this.db.exec('BEGIN IMMEDIATE');
    } catch (err) {
      this.inTx = false;
      for (const p of batch) p.reject(err);
      return;
    }
    for (const p of batch) {
      const hooks: Array<() => void> = [];
      const tx: Tx = { db: this.db, afterCommit: (h) => hooks.push(h) };
      this.db.exec('SAVEPOINT body');
      try {
        const value = p.fn(tx);
        this.db.exec('RELEASE body');
        outcomes.push({ ok: true, value, hooks });
      } catch (err) {
        this.db.exec('ROLLBACK TO body');
        this.db.exec('RELEASE body');
        outcomes.push({ ok: false, value: err, hooks: [] });
      }
    }
    try {
      this.db.exec('COMMIT');
    } catch (err) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
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

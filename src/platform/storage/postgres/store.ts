import pg from 'pg';
import { createLogger, type Logger } from '../../log';
import { TX_ENDED, type Body, type Engine, type Reader, type Row, type RunResult, type Tx } from '../tx';
import { KEY_TABLES, type Store, type StorageTrouble } from '../store';
import { oneWrite, pgStatement, prepared, type PgStatement } from './sql';
import { PG_LIMITS } from '../limits';
import { PgEventFeed } from './events';
import { RetryLane, type InLane } from './lane';
import { commitUnknown, endsPgTransaction, isConnectionLoss, isRetryable, isStalePlan, storageError } from './errors';

/** As statements name them (PgTx.written). */
const KEY_TABLE_NAMES: ReadonlySet<string> = new Set(KEY_TABLES.map((t) => t.table));

/**
 * The PostgreSQL engine: a bounded pool on one database shared by any number of nodes. Write transactions run
 * SERIALIZABLE, the one-writer-at-a-time effect every body written for SQLite assumes (a refund's remainder, a
 * payout's balance, one charge per period). One aborted for serialization or deadlock (40001, 40P01) runs again,
 * up to PG_LIMITS.retries: bodies touch only their Tx and after-commit actions run after the COMMIT that worked.
 * A connection lost during COMMIT is never retried: DB_COMMIT_UNKNOWN (a 503; an Idempotency-Key retry finds the
 * outcome). Commits are durable when COMMIT returns (`synchronous_commit = on`).
 */
export class PgStore implements Store {
  readonly engine = 'postgres' as const;
  readonly path: string;
  readonly eventFeed: PgEventFeed;
  private readonly pool: pg.Pool;
  private readonly log: Logger;
  /** The database's clock minus this process's (see measureClock). */
  private clockOffsetMs = 0;
  private clockTimer: NodeJS.Timeout | null = null;
  readonly now = (): number => Date.now() + this.clockOffsetMs;
  private failure: StorageTrouble | null = null;
  isOpen = true;
  private readonly lane = new RetryLane();

  constructor(pool: pg.Pool, opts: { path: string; log?: Logger; listenClient: () => pg.Client }) {
    this.pool = pool;
    this.path = opts.path;
    // Without a server's log (an admin command), only warnings and errors.
    this.log = opts.log ?? createLogger('warn', (line) => process.stderr.write(line));
    this.eventFeed = new PgEventFeed(pool, opts.listenClient, this.log);
  }

  /** The server's time counts as read at the middle of the round trip; repeated every PG_LIMITS.clock_check_ms. */
  async measureClock(): Promise<void> {
    const t0 = Date.now();
    const r = await this.pool.query('SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS t');
    const t1 = Date.now();
    this.clockOffsetMs = Math.round(Number(r.rows[0].t) - (t0 + t1) / 2);
    if (this.isOpen) this.clockTimer ??= setInterval(() => void this.measureClock().catch(() => {}), PG_LIMITS.clock_check_ms).unref();
  }

  keyTablesVersion(): number {
    return this.eventFeed.keyTablesVersion();
  }

  get<T = Row>(sql: string, ...params: unknown[]): Promise<T | undefined> {
    return this.query(sql, params).then((r) => r.rows[0] as T | undefined);
  }

  all<T = Row>(sql: string, ...params: unknown[]): Promise<T[]> {
    return this.query(sql, params).then((r) => r.rows as T[]);
  }

  private async query(sql: string, params: unknown[], again = true): Promise<pg.QueryResult> {
    const st = pgStatement(sql);
    try {
      // The pool drops a connection whose statement failed, so a stale prepared statement goes with it.
      const r = await this.pool.query(prepared(st, params));
      // A node that could not reach the database serves (and /healthz says so) at once.
      if (this.failure?.code === 'DB_UNAVAILABLE') this.failure = null;
      return r;
    } catch (err) {
      if (again && isStalePlan(err)) return this.query(sql, params, false);
      this.log.debug('postgres statement failed', { code: (err as { code?: string }).code, error: String(err), sql: st.text.slice(0, 300) });
      throw this.noteFailure(storageError(err));
    }
  }

  /** Durable once COMMIT returned: a write is a transaction of its own. */
  write<T>(fn: Body<T>): Promise<T> {
    return this.tx(fn);
  }

  async tx<T>(fn: Body<T>): Promise<T> {
    const lane: InLane = {};
    try {
      return await this.attempts(fn, lane);
    } finally {
      lane.leave?.();
    }
  }

  /** Attempts past lane_after wait for the node's lane first. */
  private async attempts<T>(fn: Body<T>, lane: InLane): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      if (attempt > PG_LIMITS.lane_after) lane.leave ??= await this.lane.enter();
      const client = await this.connect();
      const hooks: Array<() => void> = [];
      const tx = new PgTx(client, hooks, this.log);
      const written = tx.written;
      let broken = false;
      let result: T;
      try {
        // Pipelined with the body's first statement: a failed BEGIN fails that too, whose error is thrown here.
        oneWrite(client);
        const begin = client.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
        begin.catch(() => {});
        try {
          result = await fn(tx);
        } finally {
          tx.end();
        }
        await begin;
        try {
          await client.query('COMMIT');
        } catch (err) {
          if (isConnectionLoss(err)) {
            broken = true;
            throw commitUnknown(err);
          }
          throw err;
        }
      } catch (thrown) {
        // Statements sent side by side (Promise.all in a body) fail together: the first failure (a serialization
        // failure, say) says what happened, the others only that the transaction was already aborted (25P02).
        const err = (thrown as { code?: string }).code === '25P02' && tx.lastFailure !== undefined ? tx.lastFailure : thrown;
        // A stale prepared statement (the body runs again elsewhere) or a lost connection: the connection goes.
        if (isStalePlan(err) || isConnectionLoss(err)) broken = true;
        if (!broken) await client.query('ROLLBACK').catch(() => (broken = true));
        client.release(broken ? true : undefined);
        if ((isRetryable(err) || isStalePlan(err)) && attempt < PG_LIMITS.retries) {
          await backoff(attempt);
          continue;
        }
        throw this.noteFailure(storageError(err));
      }
      client.release();
      this.failure = null;
      // Before the commit's answer leaves, not at the announcement's delivery.
      for (const t of written) if (KEY_TABLE_NAMES.has(t)) this.eventFeed.keyTablesChanged();
      for (const h of hooks) {
        try {
          h();
        } catch (err) {
          this.log.error('after-commit action failed', { error: String(err) });
        }
      }
      return result!;
    }
  }

  async snapshot<T>(fn: (q: Reader) => Promise<T> | T): Promise<T> {
    const client = await this.connect();
    const tx = new PgTx(client, [], this.log);
    let broken = false;
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const out = await fn(tx);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      broken = isConnectionLoss(err);
      if (!broken) await client.query('ROLLBACK').catch(() => (broken = true));
      throw storageError(err);
    } finally {
      tx.end();
      client.release(broken ? true : undefined);
    }
  }

  /** A wait longer than the pool's connection timeout is an unavailable database. */
  private async connect(): Promise<pg.PoolClient> {
    if (!this.isOpen) throw new Error('the store is closed');
    try {
      return await this.pool.connect();
    } catch (err) {
      throw this.noteFailure(storageError(err));
    }
  }

  private noteFailure(err: Error): Error {
    const code = (err as { code?: string }).code;
    if (code === 'DB_UNAVAILABLE' || code === 'DB_COMMIT_UNKNOWN') this.failure = { code, message: err.message, at: Date.now() };
    return err;
  }

  /** For the engine's own maintenance (src/platform/storage/ only: a copy, a check). */
  async raw<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    const c = await this.connect();
    let broken = false;
    try {
      return await fn(c);
    } catch (err) {
      broken = isConnectionLoss(err);
      throw err;
    } finally {
      c.release(broken ? true : undefined);
    }
  }

  trouble(): StorageTrouble | null {
    return this.failure;
  }

  async probeWrite(): Promise<void> {
    await this.tx((tx) => tx.get('SELECT 1 AS ok'));
  }

  async flush(): Promise<void> {}

  async close(): Promise<void> {
    if (!this.isOpen) return;
    if (this.clockTimer) clearInterval(this.clockTimer);
    await this.eventFeed.stop();
    this.isOpen = false;
    await this.pool.end();
  }
}

export class PgTx implements Tx {
  readonly engine: Engine = 'postgres';
  private live = true;
  private depth = 0;
  /** The key tables among them move keyTablesVersion at commit. */
  readonly written = new Set<string>();
  /** The last failure of a statement of this transaction other than 25P02, as marked: what a 25P02 after it stands for. */
  lastFailure: unknown = undefined;

  constructor(
    private readonly client: pg.PoolClient,
    private readonly hooks: Array<() => void>,
    private readonly log: Logger,
  ) {}

  end(): void {
    this.live = false;
  }

  private async query(sql: string, params: unknown[]): Promise<{ st: PgStatement; r: pg.QueryResult }> {
    if (!this.live) throw new Error(TX_ENDED);
    const st = pgStatement(sql);
    if (st.writes !== null) this.written.add(st.writes);
    oneWrite(this.client);
    try {
      return { st, r: await this.client.query(prepared(st, params)) };
    } catch (err) {
      // Debug only: a serialization failure is routine (the transaction runs again).
      this.log.debug('postgres statement failed', { code: (err as { code?: string }).code, error: String(err), sql: st.text.slice(0, 300) });
      const m = marked(err);
      if ((err as { code?: string }).code !== '25P02') this.lastFailure = m;
      throw m;
    }
  }

  async get<T = Row>(sql: string, ...params: unknown[]): Promise<T | undefined> {
    return (await this.query(sql, params)).r.rows[0] as T | undefined;
  }

  async all<T = Row>(sql: string, ...params: unknown[]): Promise<T[]> {
    return (await this.query(sql, params)).r.rows as T[];
  }

  async run(sql: string, ...params: unknown[]): Promise<RunResult> {
    // `RETURNING id`: the last row's first column.
    const { r } = await this.query(sql, params);
    const key = r.rows.length > 0 && r.fields.length > 0 ? Number(r.rows[r.rows.length - 1][r.fields[0].name]) : 0;
    return { changes: r.rowCount ?? 0, lastInsertRowid: key };
  }

  async savepoint<T>(fn: (tx: Tx) => Promise<T> | T): Promise<T> {
    if (!this.live) throw new Error(TX_ENDED);
    const name = `nested${++this.depth}`;
    await this.client.query(`SAVEPOINT ${name}`).catch((err) => Promise.reject(marked(err)));
    try {
      const value = await fn(this);
      if (!this.live) throw new Error(TX_ENDED);
      await this.client.query(`RELEASE SAVEPOINT ${name}`);
      return value;
    } catch (err) {
      // A serialization failure or a lost connection ends the whole transaction: no savepoint can save it.
      if (this.live && !isRetryable(err) && !isConnectionLoss(err)) {
        await this.client.query(`ROLLBACK TO SAVEPOINT ${name}`).catch((undo) => Promise.reject(marked(undo)));
        await this.client.query(`RELEASE SAVEPOINT ${name}`);
      }
      throw marked(err);
    } finally {
      this.depth--;
    }
  }

  afterCommit(fn: () => void): void {
    if (!this.live) throw new Error(TX_ENDED);
    this.hooks.push(fn);
  }
}

/** Marked as ending the whole transaction where it does (see endsTransaction in ../tx.ts). */
function marked(err: unknown): unknown {
  if (endsPgTransaction(err)) Object.assign(err as object, { endsTransaction: true });
  return err;
}

function backoff(attempt: number): Promise<void> {
  const ms = Math.min(PG_LIMITS.retry_max_ms, PG_LIMITS.retry_first_ms * 2 ** (attempt - 1)) * (0.5 + Math.random());
  return new Promise((resolve) => setTimeout(resolve, ms));
}

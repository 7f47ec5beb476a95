/**
 * The storage interface as the rest of src/ imports it: Store here, Tx and Reader in tx.ts. The engines themselves
 * are SqliteStore (sqlite/store.ts) and PgStore (postgres/store.ts).
 */
import type { Body, Reader, Row } from './tx';

export type { Body, Engine, Reader, Row, RunResult, Tx } from './tx';
export { TX_ENDED, endsTransaction } from './tx';
export { BUSY_LIMITS, type StoreOptions } from './limits';

/** A storage failure as trouble() reports it. */
export interface StorageTrouble {
  code: string;
  message: string;
  at: number;
}

/**
 * The one way to reach the database, on either engine: SqliteStore (one file, one process writing) or PgStore
 * (a PostgreSQL database shared by any number of nodes). Domain code sees only this, Reader and Tx.
 *
 * Nothing that is not durable leaves it: a write settles once its commit is on disk (SQLite) or committed
 * (PostgreSQL, synchronous_commit on), and a read through the store (get, all, snapshot) answers once every
 * commit it may have seen is. Whatever a caller then shows outside the process (a response, an event, a
 * webhook) survives a power loss, without the caller waiting for anything itself.
 */
export interface Store extends Reader {
  /** The database as the operator named it: a file path, or a PostgreSQL URL without its password. */
  readonly path: string;
  /** The identity Tx.connection names; the same for every transaction of this store. */
  readonly connection: object;
  /**
   * Real time in ms as the database keeps it: the process's own clock on SQLite; on PostgreSQL the server's clock
   * (its offset from this process's measured at start and every minute), so that the leases, claims and
   * lockouts every node writes compare on one clock however the nodes' clocks drift.
   */
  readonly now: () => number;
  /** True while the store can be used. */
  readonly isOpen: boolean;
  /** True while a transaction of this process holds the store's one connection (SQLite); always false on PostgreSQL. */
  readonly inTransaction: boolean;
  /** Commits made through this store so far. */
  readonly commits: number;
  /**
   * Committed events of every process sharing the database, in stream order (PostgreSQL, see pg-events.ts);
   * null where this process's own commits are the only ones (SQLite), whose after-commit order is the stream's.
   */
  readonly eventFeed: EventFeed | null;
  /**
   * A number that moves whenever a commit may have changed the rows API keys are resolved from (KEY_TABLES),
   * made through this store, by another process or on another node, for the one cache of them
   * (platform/auth/key-cache.ts): an entry read while the number stood at n is current while it still does.
   */
  keyTablesVersion(): number;
  /**
   * Run `fn` in a transaction of its own. Resolves (and its after-commit actions run) once the commit is on disk
   * (SQLite) or committed (PostgreSQL); a body that throws rejects once everything it may have read is.
   */
  tx<T>(fn: Body<T>): Promise<T>;
  /** Run `fn` over one consistent snapshot of committed data. */
  snapshot<T>(fn: (q: Reader) => Promise<T> | T): Promise<T>;
  /** Queue `fn` for the next commit (SQLite groups the bodies of one turn); settles as tx() does. */
  write<T>(fn: Body<T>): Promise<T>;
  /** The storage's last refusal while writes still fail; null when they work. */
  trouble(): StorageTrouble | null;
  /** Resolves when the storage takes writes again (clearing trouble()); rejects while it does not. */
  probeWrite(): Promise<void>;
  /** Commit everything queued now (shutdown). */
  flush(): Promise<void>;
  /** Flush, then release the connection(s). */
  close(): Promise<void>;
}

/** Committed events of every node, in stream order, for the streams one node serves. */
export interface EventFeed {
  /** Call `fn` with every event numbered from now on, once, in stream order; returns the unsubscribe function. */
  subscribe(fn: (row: Row) => void): () => void;
  /** This node appended events and committed: number them now (coalesced with a pass already running). */
  kick(): void;
  /**
   * A stream opens here: read new events for the listeners from now on. Resolves once every event numbered after
   * this call will reach them, so a replay read after it leaves no gap. Reads stop when no stream follows.
   */
  follow(): Promise<void>;
  /** A stream that followed has ended. */
  unfollow(): void;
  start(): void;
  stop(): Promise<void>;
}

/**
 * The tables API keys are resolved from, and (for UPDATE) the columns that count: a change to any of them may
 * change a key's answer (see Store.keyTablesVersion). postgres/schema.sql's announcing triggers name the same.
 */
export const KEY_TABLES: ReadonlyArray<{ table: string; columns?: readonly string[] }> = [
  { table: 'api_keys' },
  { table: 'shops', columns: ['id', 'merchant_id', 'name', 'scopes', 'ip_allowlist', 'signing_secret', 'require_signature'] },
  { table: 'merchants', columns: ['id', 'live_enabled'] },
  { table: 'shop_acquirers' },
  { table: 'shop_payout_providers' },
];

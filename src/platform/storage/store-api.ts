import type { Body } from './sqlite/body';
import type { ChangeSignal } from './change-signal';
import type { Reader, Row } from './tx';

/** A storage failure as trouble() reports it. */
export interface StorageTrouble {
  code: string;
  message: string;
  at: number;
}

/**
 * The one way to reach the database, on either engine: SqliteStore (one file, one process writing) or PgStore
 * (a PostgreSQL database shared by any number of nodes). Domain code sees only this, Reader and Tx.
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
  /** The database's change signal, for caches (see change-signal.ts). */
  readonly changes: ChangeSignal;
  /** Null when every commit made so far (or up to `upTo`) is durable; else a promise that settles once they are. */
  whenDurable(upTo?: number): Promise<void> | null;
  /** Run `fn` in a transaction of its own; settles once the commit is durable. */
  tx<T>(fn: Body<T>, opts?: { durable: 'now' | 'later' }): Promise<T>;
  /** Run `fn` over one consistent snapshot of committed data. */
  snapshot<T>(fn: (q: Reader) => Promise<T> | T): Promise<T>;
  /** Queue `fn` for the next commit; resolves with its result once durable. */
  write<T>(fn: Body<T>, seen?: { seq?: number }): Promise<T>;
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

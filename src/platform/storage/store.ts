// The storage interface: Store here, Tx and Reader in tx.ts; engines in sqlite/store.ts and postgres/store.ts.
import type { Body, Reader, Row } from './tx';

export type { Body, Engine, Reader, Row, RunResult, Tx } from './tx';
export { TX_ENDED, endsTransaction } from './tx';

export interface StorageTrouble {
  code: string;
  message: string;
  at: number;
}

/**
 * The one way to reach the database, on either engine. Nothing that is not durable leaves it: a write settles
 * once its commit is on disk (SQLite) or committed (PostgreSQL, synchronous_commit on), and a read through the
 * store answers once every commit it may have seen is, so whatever a caller shows outside survives a power loss.
 */
export interface Store extends Reader {
  /** The database as the operator named it: a file path, or a PostgreSQL URL without its password. */
  readonly path: string;
  /**
   * Real time in ms as the database keeps it: on PostgreSQL the server's clock (offset measured at start and each
   * minute), so leases, claims and lockouts written by every node compare on one clock.
   */
  readonly now: () => number;
  readonly isOpen: boolean;
  /** Committed events of every process, in stream order (PostgreSQL); null on SQLite, whose after-commit order is the stream's. */
  readonly eventFeed: EventFeed | null;
  /**
   * Moves whenever a commit (of any process or node) may have changed the rows API keys are resolved from
   * (KEY_TABLES): an entry of KeyCache (platform/auth/authenticate.ts) read at n is current while the number stands at n.
   */
  keyTablesVersion(): number;
  /** Settles once the commit is durable; a body that throws rejects once everything it may have read is. */
  tx<T>(fn: Body<T>): Promise<T>;
  snapshot<T>(fn: (q: Reader) => Promise<T> | T): Promise<T>;
  /** Queue `fn` for the next commit (SQLite groups the bodies of one turn). */
  write<T>(fn: Body<T>): Promise<T>;
  trouble(): StorageTrouble | null;
  /** Resolves when the storage takes writes again (clearing trouble()). */
  probeWrite(): Promise<void>;
  /** Commit everything queued (shutdown). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

export interface EventFeed {
  /** `fn` gets every event numbered from now on, once, in stream order. */
  subscribe(fn: (row: Row) => void): () => void;
  /** Number this node's appended events now (coalesced with a running pass). */
  kick(): void;
  /** Resolves once every event numbered after this call will reach the listeners, so a replay after it leaves no gap. */
  follow(): Promise<void>;
  unfollow(): void;
  start(): void;
  stop(): Promise<void>;
}

/** The tables (and UPDATE columns) API keys are resolved from; postgres/schema.sql's announcing triggers name the same. */
export const KEY_TABLES: ReadonlyArray<{ table: string; columns?: readonly string[] }> = [
  { table: 'api_keys' },
  { table: 'shops', columns: ['id', 'merchant_id', 'name', 'scopes', 'ip_allowlist', 'signing_secret', 'require_signature'] },
  { table: 'merchants', columns: ['id', 'live_enabled'] },
  { table: 'shop_acquirers' },
  { table: 'shop_payout_providers' },
];

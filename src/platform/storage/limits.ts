import type { Logger } from '../log';

/** Most transaction bodies one group commit holds; the rest wait for the next. */
export const GROUP_LIMIT = 512;

/**
 * Waiting for another process's write lock (sync: 'store'): the group retries after these gaps, off the
 * event loop, and is refused (SQLITE_BUSY, a 503 to clients) once it has waited `total_ms`.
 */
export const BUSY_LIMITS = { first_retry_ms: 5, longest_retry_ms: 200, total_ms: 5000 };

/** How a store makes its commits durable. */
export interface StoreOptions {
  /**
   * `sqlite` (default): SQLite syncs the WAL inside every COMMIT (`synchronous=FULL`), blocking the thread.
   * `store` (the server): SQLite writes commits to the WAL without syncing them (`synchronous=NORMAL`, which
   * still syncs checkpoints) and the store syncs the WAL file itself on the thread pool before anyone learns of a
   * commit, so the event loop goes on serving while the disk works (sqlite/durable.ts). Checkpoints run on a
   * thread of their own (checkpointer.ts). Only for a file database in WAL mode whose every write goes through this store; otherwise `sqlite`.
   */
  sync?: 'sqlite' | 'store';
  /** Where a failed WAL sync, a failed checkpoint or a failed after-commit action is logged (default stderr). */
  log?: Logger;
}

/**
 * The PostgreSQL engine's bounds. A node keeps at most `pool` connections (plus one for LISTEN); size the
 * database's max_connections above nodes × (pool + 2). A transaction PostgreSQL aborts for a serialization
 * failure or a deadlock runs again up to `retries` times, after a random pause that doubles from
 * `retry_first_ms` up to `retry_max_ms`; after `lane_after` failures its next attempts take the node's retry lane
 * (src/platform/storage/postgres/lane.ts), one at a time. A statement that runs longer than `statement_timeout_ms` is cancelled,
 * and a connection idle inside a transaction for `idle_in_transaction_ms` is closed by the server.
 */
export const PG_LIMITS = {
  pool: 10,
  retries: 30,
  retry_first_ms: 2,
  retry_max_ms: 50,
  lane_after: 2,
  statement_timeout_ms: 30_000,
  idle_in_transaction_ms: 60_000,
  connect_timeout_ms: 5_000,
  clock_check_ms: 60_000,
};

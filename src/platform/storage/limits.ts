import type { Logger } from '../log';

/** The rest wait for the next. */
export const GROUP_LIMIT = 512;

/** Another process's write lock (sync: 'store'): retried on timers, refused (SQLITE_BUSY, a 503) after `total_ms`. */
export const BUSY_LIMITS = { first_retry_ms: 5, longest_retry_ms: 200, total_ms: 5000 };

export interface StoreOptions {
  /**
   * `sqlite` (default): SQLite syncs the WAL in every COMMIT, blocking the thread. `store` (the server, a WAL file
   * whose every write goes through this store): `synchronous=NORMAL` and the store syncs the WAL on the thread pool
   * before anyone learns of a commit; checkpoints on their own thread (both sqlite/wal.ts).
   */
  sync?: 'sqlite' | 'store';
  /** Default stderr. */
  log?: Logger;
}

/**
 * A node keeps at most `pool` connections plus one for LISTEN (max_connections > nodes × (pool + 2)). A
 * serialization failure or deadlock retries up to `retries` times after a random pause doubling from
 * `retry_first_ms` to `retry_max_ms`; after `lane_after` failures through the node's lane (postgres/lane.ts), one
 * at a time. Statements past `statement_timeout_ms` are cancelled; idle-in-transaction past its limit, closed.
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

/**
 * SQL that depends on the engine, named in one place. Domain code sends SQL through Reader and Tx; a statement
 * whose text differs between SQLite and PostgreSQL is written once per engine, here as a function that asks
 * `q.engine`, or beside its use as `{ sqlite: '…', postgres: '…' }[q.engine]`. PostgreSQL's engine changes
 * nothing in a text but its parameters (`?` and `@name` become `$n`, postgres/sql.ts):
 *
 * - Counters: SQLite keeps an AUTOINCREMENT table's highest number ever issued in `sqlite_sequence`
 *   (lastIssuedEventSeq, nextPaymentSeq); PostgreSQL has sequences.
 * - Schema introspection (listTables, tableColumns) and constraint checks deferred to COMMIT
 *   (deferForeignKeys): `sqlite_master` and pragmas here, `information_schema` and `SET CONSTRAINTS` there.
 * - Error codes: a primary-key conflict is `SQLITE_CONSTRAINT_PRIMARYKEY` here, SQLSTATE 23505 there
 *   (isPrimaryKeyConflict). After a failed statement SQLite keeps the transaction; PostgreSQL aborts it unless
 *   the statement ran in a savepoint (Tx.savepoint).
 * - Planner hints: `INDEXED BY` (indexedBy: the job and delivery counts here, the registers, the cabinet's
 *   timeline and overview) is SQLite's; PostgreSQL plans without hints.
 * - Row locks: `FOR UPDATE` (forUpdate) is PostgreSQL's; SQLite's write transaction holds the whole database.
 * - Scalar min and max: SQLite's two-argument `min(a, b)` and `max(a, b)` are PostgreSQL's `LEAST` and
 *   `GREATEST` (key usage, webhook secrets, the cabinet's sign-in throttle), written per engine at their use.
 * - `RETURNING`: both engines have it; an INSERT whose caller needs the new row's number says `RETURNING id`
 *   (or its key's name), and Tx.run's lastInsertRowid is that number on both.
 * - JSON: a payment's GET answer is built in SQL with `json_object`/`json_group_array` and instants with
 *   `strftime` (payments/store.ts); PostgreSQL has `json_build_object`, `json_agg` and `to_char`.
 * - Integers: SQLite's are 64-bit; PostgreSQL's `int8`, `count()` and `sum()` reach JavaScript as strings and
 *   milliseconds need `BIGINT` columns.
 * - Booleans in SQL: `sum(attempt = 0)` counts a comparison as 0 or 1 here; PostgreSQL needs a `CASE` or a
 *   `FILTER` clause (pendingJobsByKind).
 * - Parameters: `?` by position everywhere; a few inserts bind `@name` from an object (tokens, payouts,
 *   subscriptions, T-Bank sessions), which a PostgreSQL engine turns into `$n`.
 */

import type { Engine, Reader, Tx } from './store';
import { PG_EVENTS_AFTER_SQL, PG_LAST_POSITION_SQL } from './postgres/events';

/**
 * The end of a SELECT that locks the rows it reads until the transaction ends, so that a check and the write
 * that depends on it cannot interleave with another transaction's (a refund's remainder, for one): ` FOR UPDATE`
 * on PostgreSQL (under SERIALIZABLE the lock turns a late serialization failure into a wait). Empty for SQLite:
 * a write transaction holds the database's write lock from BEGIN IMMEDIATE to its end, so whatever it reads
 * stays as read.
 */
export function forUpdate(engine: Engine): string {
  return engine === 'postgres' ? ' FOR UPDATE' : '';
}

/** A planner hint naming the index a table is read through (` INDEXED BY name`): SQLite's; PostgreSQL has none. */
export function indexedBy(engine: Engine, index: string): string {
  return engine === 'sqlite' ? ` INDEXED BY ${index}` : '';
}

// ---- events ----
/**
 * The highest event sequence number ever issued (deleted rows included: AUTOINCREMENT never reuses one), as
 * SQLite keeps it in `sqlite_sequence`; 0 before the first event.
 */
export async function lastIssuedEventSeq(q: Reader): Promise<number> {
  // PostgreSQL: the stream follows commit-ordered positions, not seq (see pg-events.ts).
  if (q.engine === 'postgres') return (await q.get<{ seq: number }>(PG_LAST_POSITION_SQL))?.seq ?? 0;
  const row = await q.get<{ seq: number }>(`SELECT seq FROM sqlite_sequence WHERE name = 'events'`);
  return row?.seq ?? 0;
}

/** A shop's events of a mode after a stream position, in stream order (parameters: shop, mode, after, limit). */
export function streamEventsSql(q: Reader): string {
  return q.engine === 'postgres' ? PG_EVENTS_AFTER_SQL : `SELECT * FROM events WHERE shop_id = ? AND mode = ? AND seq > ? ORDER BY seq LIMIT ?`;
}

// ---- payments ----
/**
 * One above the highest payment seq ever issued, deleted rows included: AUTOINCREMENT keeps the highest in
 * `sqlite_sequence`, and the table's own maximum covers a row inserted with an explicit seq before that was
 * recorded. 1 before the first payment.
 */
export async function nextPaymentSeq(q: Reader): Promise<number> {
  // PostgreSQL: the identity's sequence hands out each number once, whatever commits or rolls back. Named as
  // PostgreSQL names it (table_column_seq), the name resolves once when the statement is prepared; a lookup by
  // pg_get_serial_sequence ran at every create.
  if (q.engine === 'postgres') return (await q.get<{ n: number }>(`SELECT nextval('payments_seq_seq') AS n`))!.n;
  const r = await q.get<{ n: number }>(
    `SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'payments'), 0), coalesce((SELECT max(seq) FROM payments), 0)) + 1 AS n`,
  );
  return r!.n;
}

/** `n` payment numbers from PostgreSQL's sequence in one statement (each handed out once, whatever commits). */
export async function nextPaymentSeqsPg(q: Reader, n: number): Promise<number[]> {
  return (await q.all<{ n: number }>(`SELECT nextval('payments_seq_seq') AS n FROM generate_series(1, CAST(? AS INTEGER))`, n)).map((r) => Number(r.n));
}

/** True when `err` is SQLite refusing a row whose primary key is already taken. */
export function isPrimaryKeyConflict(err: unknown): boolean {
  const e = err as { code?: string; constraint?: string } | null;
  if (e?.code === '23505') return typeof e.constraint === 'string' && e.constraint.endsWith('_pkey');
  return e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

// ---- reset ----
// The SQLite-specific parts of the test-data reset (src/banks/simulator/clock.ts): reading the schema, and
// deferring foreign-key checks to the commit. Another engine gives its own answers here.

/** The names of the database's own tables (SQLite's internal tables left out). */
export async function listTables(q: Reader): Promise<string[]> {
  if (q.engine === 'postgres') {
    const pgRows = await q.all<{ name: string }>(
      `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'kopek_schema'`,
    );
    return pgRows.map((r) => r.name);
  }
  const rows = await q.all<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`);
  return rows.map((r) => r.name);
}

/** The column names of a table. */
export async function tableColumns(q: Reader, table: string): Promise<string[]> {
  if (q.engine === 'postgres') {
    const pgRows = await q.all<{ name: string }>(`SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?`, table);
    return pgRows.map((r) => r.name);
  }
  const rows = await q.all<{ name: string }>(`SELECT name FROM pragma_table_info(?)`, table);
  return rows.map((r) => r.name);
}

/** Check foreign keys at this transaction's commit instead of at each statement (rows go in any order). */
export async function deferForeignKeys(tx: Tx): Promise<void> {
  await tx.run(tx.engine === 'postgres' ? 'SET CONSTRAINTS ALL DEFERRED' : 'PRAGMA defer_foreign_keys = ON');
}

// ---- scheduler ----
// SQLite-specific reads of the scheduler and the metrics: they name the partial index to read through
// (INDEXED BY) and sum comparisons as numbers, so that a scrape or `kopek jobs` never reads finished rows.
// Another engine gives its own versions of these functions.

/** Pending jobs per kind, first runs (attempt 0) and retries apart, through the partial index of pending jobs. */
export function pendingJobsByKind(q: Reader): Promise<Array<{ kind: string; pending: number; retrying: number }>> {
  if (q.engine === 'postgres') {
    return q.all(`SELECT kind, count(*) FILTER (WHERE attempt = 0) AS pending, count(*) FILTER (WHERE attempt > 0) AS retrying FROM jobs WHERE state = 'pending' GROUP BY kind`);
  }
  return q.all<{ kind: string; pending: number; retrying: number }>(
    `SELECT kind, sum(attempt = 0) AS pending, sum(attempt > 0) AS retrying FROM jobs INDEXED BY jobs_run WHERE state = 'pending' GROUP BY kind`,
  );
}

/** Dead jobs per kind, through the partial index of failing jobs. */
export function deadJobsByKind(q: Reader): Promise<Array<{ kind: string; dead: number }>> {
  return q.all<{ kind: string; dead: number }>(`SELECT kind, count(*) AS dead FROM jobs${indexedBy(q.engine, 'jobs_failing')} WHERE state = 'dead' GROUP BY kind`);
}

/** Webhook deliveries waiting for an answer, counted through their partial index: only those rows, however long the log. */
export async function pendingDeliveryCount(q: Reader): Promise<number> {
  const r = await q.get<{ n: number }>(`SELECT count(*) AS n FROM webhook_deliveries${indexedBy(q.engine, 'webhook_deliveries_due')} WHERE state = 'pending'`);
  return r?.n ?? 0;
}

// ---- aggregates ----
/** The values of `expr` in a group joined with commas (SQLite's GROUP_CONCAT, PostgreSQL's string_agg). */
export function groupConcat(q: Reader, expr: string): string {
  return q.engine === 'postgres' ? `string_agg((${expr})::text, ',')` : `GROUP_CONCAT(${expr})`;
}

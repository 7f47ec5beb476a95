/**
 * SQL that depends on the engine, named in one place. A statement whose text differs between SQLite and
 * PostgreSQL is written once per engine, here (asking `q.engine`) or beside its use as
 * `{ sqlite: '…', postgres: '…' }[q.engine]`. PostgreSQL's engine changes only parameters (`?`, `@name` → `$n`).
 * The differences: counters (`sqlite_sequence` vs sequences); introspection and deferred constraints
 * (`sqlite_master`, pragmas vs `information_schema`, `SET CONSTRAINTS`); error codes (a failed statement aborts a
 * PostgreSQL transaction unless it ran in Tx.savepoint); `INDEXED BY` hints (SQLite only); `FOR UPDATE`
 * (PostgreSQL only); two-argument `min`/`max` vs `LEAST`/`GREATEST`; JSON (`json_object`, `json_group_array`,
 * `strftime` vs `json_build_object`, `json_agg`, `to_char`); PostgreSQL's `int8`, `count()` and `sum()` arrive
 * as strings; `sum(a = 0)` needs a `CASE` or `FILTER` on PostgreSQL. Both have `RETURNING`.
 */

import type { Engine, Reader, Tx } from './store';
import { PG_EVENTS_AFTER_SQL, PG_LAST_POSITION_SQL } from './postgres/events';

/**
 * ` FOR UPDATE` on PostgreSQL, so a check and the write that depends on it cannot interleave with another
 * transaction's (a refund's remainder); under SERIALIZABLE it turns a late failure into a wait. Empty for
 * SQLite: BEGIN IMMEDIATE holds the database's write lock to the end.
 */
export function forUpdate(engine: Engine): string {
  return engine === 'postgres' ? ' FOR UPDATE' : '';
}

export function indexedBy(engine: Engine, index: string): string {
  return engine === 'sqlite' ? ` INDEXED BY ${index}` : '';
}

/** The highest event seq ever issued (AUTOINCREMENT never reuses one, even deleted); 0 before the first. */
export async function lastIssuedEventSeq(q: Reader): Promise<number> {
  // PostgreSQL: the stream follows commit-ordered positions, not seq (see postgres/events.ts).
  if (q.engine === 'postgres') return (await q.get<{ seq: number }>(PG_LAST_POSITION_SQL))?.seq ?? 0;
  return (await q.get<{ seq: number }>(`SELECT seq FROM sqlite_sequence WHERE name = 'events'`))?.seq ?? 0;
}

/** A shop's events of a mode after a stream position, in stream order (parameters: shop, mode, after, limit). */
export function streamEventsSql(q: Reader): string {
  return q.engine === 'postgres' ? PG_EVENTS_AFTER_SQL : `SELECT * FROM events WHERE shop_id = ? AND mode = ? AND seq > ? ORDER BY seq LIMIT ?`;
}

/**
 * One above the highest payment seq ever issued, deleted rows included (`sqlite_sequence`, or the table's max
 * for a row inserted with an explicit seq before that was recorded), as `n`.
 */
export const NEXT_PAYMENT_SEQ = {
  // Named as PostgreSQL names it, resolved once at prepare; pg_get_serial_sequence ran per create.
  postgres: `SELECT nextval('payments_seq_seq') AS n`,
  sqlite: `SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'payments'), 0), coalesce((SELECT max(seq) FROM payments), 0)) + 1 AS n`,
} as const;

/** `n` payment numbers from PostgreSQL's sequence in one statement. */
export async function nextPaymentSeqsPg(q: Reader, n: number): Promise<number[]> {
  return (await q.all<{ n: number }>(`SELECT nextval('payments_seq_seq') AS n FROM generate_series(1, CAST(? AS INTEGER))`, n)).map((r) => Number(r.n));
}

export function isPrimaryKeyConflict(err: unknown): boolean {
  const e = err as { code?: string; constraint?: string } | null;
  if (e?.code === '23505') return typeof e.constraint === 'string' && e.constraint.endsWith('_pkey');
  return e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

// Schema reads and deferred foreign keys of the test-data reset (src/banks/simulator/clock.ts).
/** SQLite's internal tables left out. */
export async function listTables(q: Reader): Promise<string[]> {
  const sql = {
    postgres: `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'kopek_schema'`,
    sqlite: `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`,
  }[q.engine];
  return (await q.all<{ name: string }>(sql)).map((r) => r.name);
}

export async function tableColumns(q: Reader, table: string): Promise<string[]> {
  const sql = {
    postgres: `SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?`,
    sqlite: `SELECT name FROM pragma_table_info(?)`,
  }[q.engine];
  return (await q.all<{ name: string }>(sql, table)).map((r) => r.name);
}

/** Foreign keys checked at commit, so rows go in any order. */
export async function deferForeignKeys(tx: Tx): Promise<void> {
  await tx.run(tx.engine === 'postgres' ? 'SET CONSTRAINTS ALL DEFERRED' : 'PRAGMA defer_foreign_keys = ON');
}

// The scheduler's and metrics' reads name the partial index, so a scrape or `kopek jobs` never reads finished rows.
/** Pending jobs per kind, first runs (attempt 0) and retries apart. */
export function pendingJobsByKind(q: Reader): Promise<Array<{ kind: string; pending: number; retrying: number }>> {
  return q.all({
    postgres: `SELECT kind, count(*) FILTER (WHERE attempt = 0) AS pending, count(*) FILTER (WHERE attempt > 0) AS retrying FROM jobs WHERE state = 'pending' GROUP BY kind`,
    sqlite: `SELECT kind, sum(attempt = 0) AS pending, sum(attempt > 0) AS retrying FROM jobs INDEXED BY jobs_run WHERE state = 'pending' GROUP BY kind`,
  }[q.engine]);
}

export function deadJobsByKind(q: Reader): Promise<Array<{ kind: string; dead: number }>> {
  return q.all<{ kind: string; dead: number }>(`SELECT kind, count(*) AS dead FROM jobs${indexedBy(q.engine, 'jobs_failing')} WHERE state = 'dead' GROUP BY kind`);
}

/** Through their partial index: only those rows, however long the log. */
export async function pendingDeliveryCount(q: Reader): Promise<number> {
  const r = await q.get<{ n: number }>(`SELECT count(*) AS n FROM webhook_deliveries${indexedBy(q.engine, 'webhook_deliveries_due')} WHERE state = 'pending'`);
  return r?.n ?? 0;
}

export function groupConcat(q: Reader, expr: string): string {
  return q.engine === 'postgres' ? `string_agg((${expr})::text, ',')` : `GROUP_CONCAT(${expr})`;
}

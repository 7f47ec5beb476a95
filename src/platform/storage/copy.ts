import type pg from 'pg';
import { SCHEMA_SQL } from './schema-text';
import { SCHEMA_VERSION } from './sqlite/open';
import type { SqliteStore } from './sqlite/store';
import type { PgStore } from './postgres/store';
import { pgCounters, type RowsOf } from './counters';

/** PostgreSQL statements take at most 65 535 parameters. */
const COPY_BATCH_ROWS = 500;

export interface CopyReport {
  tables: Array<{ table: string; source: number; target: number }>;
  /** Every counter of the target as left, each checked at or past its table's largest key and SQLite's counter. */
  sequences: Array<{ table: string; column: string; last: number }>;
}

export type CopyProgress = (table: string, done: number, total: number) => void;

/** In schema.sql's order: a table comes after those it references. */
export function schemaTables(): string[] {
  return [...SCHEMA_SQL.matchAll(/CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?"?(\w+)"?/gi)].map((m) => m[1]);
}

/** Null when it is empty. */
export async function targetProblem(target: PgStore): Promise<string | null> {
  for (const t of schemaTables()) {
    if (t === 'database_identity') continue;
    const r = await target.get<{ n: number }>(`SELECT count(*) AS n FROM (SELECT 1 FROM ${t} LIMIT 1) AS any_row`);
    if ((r?.n ?? 0) > 0) return `the target database is not empty (table ${t} has rows); copy only into an empty database`;
  }
  return null;
}

/**
 * In one PostgreSQL transaction read from one SQLite snapshot: all or nothing. The identity row is the source's,
 * so stream clients resume across the move; events keep their seq as stream position; every key continues past
 * the higher of `sqlite_sequence` (deleted rows too) and the largest key, so nothing is handed out twice.
 */
export async function copySqliteToPostgres(source: SqliteStore, target: PgStore, progress: CopyProgress = () => {}): Promise<CopyReport> {
  const db = source.sqliteHandle;
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version !== SCHEMA_VERSION) {
    throw new Error(`the source's schema is version ${version}, this build's ${SCHEMA_VERSION}: run kopek migrate on it once (or copy with the matching build)`);
  }
  const tables = schemaTables();
  const report: CopyReport = { tables: [], sequences: [] };
  db.exec('BEGIN DEFERRED');
  try {
    await target.raw(async (c) => {
      await c.query('BEGIN');
      try {
        await c.query('DELETE FROM database_identity');
        // Any order within a table; foreign keys are checked at the commit.
        await c.query('SET CONSTRAINTS ALL DEFERRED');
        for (const table of tables) {
          const total = (db.prepare(`SELECT count(*) AS n FROM "${table}"`).get() as { n: number }).n;
          await copyTable(db, c, table, total, progress);
          report.tables.push({ table, source: total, target: 0 });
        }
        report.sequences = await continueSequences(db, c);
        await c.query('COMMIT');
      } catch (err) {
        await c.query('ROLLBACK').catch(() => {});
        throw err;
      }
    });
  } finally {
    db.exec('COMMIT');
  }
  for (const t of report.tables) t.target = (await target.get<{ n: number }>(`SELECT count(*) AS n FROM ${t.table}`))?.n ?? 0;
  return report;
}

async function copyTable(db: SqliteStore['sqliteHandle'], c: pg.ClientBase, table: string, total: number, progress: CopyProgress): Promise<void> {
  let batch: Record<string, unknown>[] = [];
  let done = 0;
  progress(table, 0, total);
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    const cols = Object.keys(batch[0]);
    const values: unknown[] = [];
    const tuples = batch.map((row) => `(${cols.map((col) => `$${values.push(row[col] ?? null)}`).join(', ')})`);
    await c.query(`INSERT INTO ${table} (${cols.map((x) => `"${x}"`).join(', ')}) VALUES ${tuples.join(', ')}`, values);
    done += batch.length;
    batch = [];
    progress(table, done, total);
  };
  for (const row of db.prepare(`SELECT * FROM "${table}"`).iterate() as Iterable<Record<string, unknown>>) {
    batch.push(row);
    if (batch.length >= COPY_BATCH_ROWS) await flush();
  }
  await flush();
  if (table === 'events') {
    // The trigger queued every copied event: each keeps its seq as its stream position instead.
    await c.query('DELETE FROM event_queue');
    await c.query('INSERT INTO event_positions (pos, seq, shop_id, mode) SELECT seq, seq, shop_id, mode FROM events');
  }
}

/** Each counter (pgCounters) set to the higher of SQLite's and the largest key; one read back behind either fails the copy. */
async function continueSequences(db: SqliteStore['sqliteHandle'], c: pg.ClientBase): Promise<CopyReport['sequences']> {
  const sqliteCounters = new Map((db.prepare('SELECT name, seq FROM sqlite_sequence').all() as Array<{ name: string; seq: number }>).map((r) => [r.name, r.seq]));
  const rows: RowsOf = async <T>(sql: string) => (await c.query(sql)).rows as T[];
  const floorOf = (table: string, max: number): number => Math.max(max, sqliteCounters.get(table === 'event_positions' ? 'events' : table) ?? 0);
  for (const counter of await pgCounters(rows)) {
    const last = floorOf(counter.table, counter.max);
    if (last > 0) await c.query('SELECT setval($1::regclass, $2, true)', [counter.sequence, last]);
  }
  const out: CopyReport['sequences'] = [];
  for (const counter of await pgCounters(rows)) {
    const floor = floorOf(counter.table, counter.max);
    if (counter.last < floor) {
      throw new Error(`cannot continue the numbers of ${counter.table}.${counter.column}: its counter ${counter.sequence} stands at ${counter.last}, behind ${floor}; nothing was copied`);
    }
    out.push({ table: counter.table, column: counter.column, last: counter.last });
  }
  return out;
}

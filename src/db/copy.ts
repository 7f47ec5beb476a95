import type pg from 'pg';
import { SCHEMA_SQL } from './schema-text';
import { SCHEMA_VERSION } from './open';
import type { SqliteStore } from './store';
import type { PgStore } from './pg-store';
import { numberedTables } from './pg-sql';

/** Rows sent to PostgreSQL in one INSERT (its statements take at most 65 535 parameters). */
const COPY_BATCH_ROWS = 500;

/** How a copy went, table by table. */
export interface CopyReport {
  tables: Array<{ table: string; source: number; target: number }>;
  /** The sequences set on the target: each numbered table's next number, and the stream's next position. */
  sequences: Array<{ table: string; column: string; last: number }>;
}

/** Progress of a copy: rows copied of a table so far, out of its total. */
export type CopyProgress = (table: string, done: number, total: number) => void;

/** The tables of schema.sql in the order it creates them: a table comes after those it references. */
export function schemaTables(ddl = SCHEMA_SQL): string[] {
  const out: string[] = [];
  const re = /CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?"?(\w+)"?/gi;
  for (let m = re.exec(ddl); m !== null; m = re.exec(ddl)) out.push(m[1]);
  return out;
}

/** Why the target cannot take a copy (it holds data), or null when it is empty. */
export async function targetProblem(target: PgStore): Promise<string | null> {
  for (const t of schemaTables()) {
    if (t === 'database_identity') continue;
    const r = await target.get<{ n: number }>(`SELECT count(*) AS n FROM (SELECT 1 FROM ${t} LIMIT 1) AS any_row`);
    if ((r?.n ?? 0) > 0) return `the target database is not empty (table ${t} has rows); copy only into an empty database`;
  }
  return null;
}

/**
 * Copy every row of the SQLite database into the PostgreSQL one, in one PostgreSQL transaction read from one
 * SQLite snapshot: either the whole database arrives or nothing does. The database's identity row is the
 * source's, so event-stream clients resume across the move. Numbers continue from SQLite's own counters
 * (`sqlite_sequence`, which remembers numbers of deleted rows too), never from the largest row left, so no
 * public number or event id is ever handed out twice; each copied event keeps its stream position (its seq).
 */
export async function copySqliteToPostgres(source: SqliteStore, target: PgStore, progress: CopyProgress = () => {}): Promise<CopyReport> {
  const db = source.sqliteHandle;
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version !== SCHEMA_VERSION) {
    throw new Error(`the source's schema is version ${version}, this build's ${SCHEMA_VERSION}: start kopek on it once (or copy with the matching build)`);
  }
  const tables = schemaTables();
  const report: CopyReport = { tables: [], sequences: [] };
  db.exec('BEGIN DEFERRED');
  try {
    await target.raw(async (c) => {
      await c.query('BEGIN');
      try {
        await c.query('DELETE FROM database_identity');
        // Rows go in any order within a table; foreign keys are checked at the commit.
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
    // The trigger queued every copied event for numbering: each keeps its seq as its stream position instead.
    await c.query('DELETE FROM event_queue');
    await c.query('INSERT INTO event_positions (pos, seq, shop_id, mode) SELECT seq, seq, shop_id, mode FROM events');
  }
}

/** Set every identity sequence past the highest number SQLite ever gave (deleted rows included), and the stream's. */
async function continueSequences(db: SqliteStore['sqliteHandle'], c: pg.ClientBase): Promise<CopyReport['sequences']> {
  const counters = new Map((db.prepare('SELECT name, seq FROM sqlite_sequence').all() as Array<{ name: string; seq: number }>).map((r) => [r.name, r.seq]));
  const out: CopyReport['sequences'] = [];
  for (const [table, column] of numberedTables(SCHEMA_SQL)) {
    const max = (db.prepare(`SELECT coalesce(max("${column}"), 0) AS m FROM "${table}"`).get() as { m: number }).m;
    const last = Math.max(max, counters.get(table) ?? 0);
    if (last > 0) await c.query(`SELECT setval(pg_get_serial_sequence($1, $2), $3, true)`, [table, column, last]);
    out.push({ table, column, last });
    if (table === 'events' && last > 0) {
      await c.query(`SELECT setval('event_pos', $1, true)`, [last]);
      out.push({ table: 'event_positions', column: 'pos', last });
    }
  }
  return out;
}

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openDatabase } from '../../src/platform/storage/sqlite/open';
import { dropPgDatabase, emptyPgDatabase, TEST_PG } from '../helpers/pg';
import { openPgStorage } from '../../src/platform/storage/postgres/open';

// Each engine's schema is its own file (schema.sql, src/platform/storage/postgres/schema.sql) plus the numbered
// migrations both run. This test opens a fresh database of each engine and compares what they end with: tables,
// columns (name, nullability, a type class), primary keys, unique constraints, foreign keys and indexes (names,
// columns, unique, partial). Any difference not listed below, with its reason, fails it.

/** Tables only PostgreSQL has, and why. */
const PG_ONLY_TABLES: Record<string, string> = {
  kopek_schema: 'the schema version: SQLite keeps it in PRAGMA user_version',
  event_queue: "the event stream's commit-ordered positions (postgres/events.ts): SQLite's seq is already in commit order",
  event_positions: "the event stream's commit-ordered positions (postgres/events.ts)",
};
/** Indexes only PostgreSQL has, and why. */
const PG_ONLY_INDEXES: Record<string, string> = {
  event_positions_shop: 'an index of event_positions, a table only PostgreSQL has',
};

type TypeClass = 'integer' | 'text' | 'real' | 'blob';

/** What the two engines are compared on, one line per fact so that a difference names itself. */
function facts(d: Described): string[] {
  const out: string[] = [];
  for (const [table, t] of [...d].sort(([a], [b]) => a.localeCompare(b))) {
    out.push(`table ${table}`);
    for (const c of t.columns) out.push(`column ${table}.${c.name} ${c.type}${c.notNull ? ' NOT NULL' : ''}`);
    out.push(`primary key ${table}(${t.primaryKey.join(', ')})`);
    for (const u of t.unique.sort()) out.push(`unique ${table}(${u})`);
    for (const f of t.foreignKeys.sort()) out.push(`foreign key ${table}${f}`);
    for (const i of t.indexes.sort()) out.push(`index ${i}`);
  }
  return out;
}

interface Table {
  columns: Array<{ name: string; type: TypeClass; notNull: boolean }>;
  primaryKey: string[];
  /** Column lists of UNIQUE constraints (a UNIQUE column or a table's UNIQUE (…)), comma-joined. */
  unique: string[];
  /** `(cols) → table(cols) [ON DELETE CASCADE]`. */
  foreignKeys: string[];
  /** CREATE INDEX'es: `name ON table(cols)`, with UNIQUE and WHERE … noted. */
  indexes: string[];
}
type Described = Map<string, Table>;

function typeClass(declared: string): TypeClass {
  const t = declared.toLowerCase();
  if (t === 'integer' || t === 'bigint') return 'integer';
  if (t === 'text') return 'text';
  if (t === 'real' || t === 'double precision') return 'real';
  if (t === 'blob' || t === 'bytea') return 'blob';
  throw new Error(`a column type this test does not class: ${declared}`);
}

function indexLine(name: string, table: string, columns: string[], unique: boolean, partial: boolean): string {
  return `${unique ? 'UNIQUE ' : ''}${name} ON ${table}(${columns.join(', ')})${partial ? ' WHERE …' : ''}`;
}

function describeSqlite(path: string): Described {
  const db = openDatabase(path);
  try {
    const out: Described = new Map();
    const tables = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).pluck().all() as string[];
    for (const table of tables) {
      const cols = db.prepare('SELECT name, type, "notnull", pk FROM pragma_table_info(?) ORDER BY cid').all(table) as Array<{ name: string; type: string; notnull: number; pk: number }>;
      const t: Table = {
        // A primary key's columns are NOT NULL on PostgreSQL; SQLite only says so for some (a rowid alias, WITHOUT
        // ROWID): counted as NOT NULL here, since kopek never writes a NULL key.
        columns: cols.map((c) => ({ name: c.name, type: typeClass(c.type), notNull: c.notnull === 1 || c.pk > 0 })),
        primaryKey: cols.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name),
        unique: [],
        foreignKeys: [],
        indexes: [],
      };
      const fks = db.prepare('SELECT id, seq, "table", "from", "to", on_delete FROM pragma_foreign_key_list(?) ORDER BY id, seq').all(table) as Array<{ id: number; table: string; from: string; to: string; on_delete: string }>;
      for (const id of new Set(fks.map((f) => f.id))) {
        const parts = fks.filter((f) => f.id === id);
        const cascade = parts[0].on_delete === 'CASCADE' ? ' ON DELETE CASCADE' : '';
        t.foreignKeys.push(`(${parts.map((p) => p.from).join(', ')}) → ${parts[0].table}(${parts.map((p) => p.to).join(', ')})${cascade}`);
      }
      const indexes = db.prepare('SELECT name, "unique", origin, partial FROM pragma_index_list(?)').all(table) as Array<{ name: string; unique: number; origin: string; partial: number }>;
      for (const ix of indexes) {
        const columns = (db.prepare('SELECT name FROM pragma_index_info(?) ORDER BY seqno').all(ix.name) as Array<{ name: string | null }>).map((c) => c.name ?? '<expression>');
        if (ix.origin === 'u') t.unique.push(columns.join(', '));
        else if (ix.origin === 'c') t.indexes.push(indexLine(ix.name, table, columns, ix.unique === 1, ix.partial === 1));
      }
      out.set(table, t);
    }
    return out;
  } finally {
    db.close();
  }
}

async function describePg(c: pg.Client): Promise<Described> {
  const out: Described = new Map();
  const tables = await c.query(`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`);
  for (const { name: table } of tables.rows as Array<{ name: string }>) {
    const cols = await c.query(
      `SELECT column_name AS name, data_type AS type, is_nullable = 'NO' AS not_null FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`,
      [table],
    );
    const t: Table = {
      columns: cols.rows.map((r) => ({ name: r.name, type: typeClass(r.type), notNull: r.not_null })),
      primaryKey: [],
      unique: [],
      foreignKeys: [],
      indexes: [],
    };
    const colNames = `(SELECT string_agg(a.attname, ', ' ORDER BY k.i) FROM unnest(%KEYS%) WITH ORDINALITY AS k(n, i) JOIN pg_attribute a ON a.attrelid = %REL% AND a.attnum = k.n)`;
    const cons = await c.query(
      `SELECT con.contype AS kind, ${colNames.replace('%KEYS%', 'con.conkey').replace('%REL%', 'con.conrelid')} AS cols,
              ref.relname AS ref_table, ${colNames.replace('%KEYS%', 'con.confkey').replace('%REL%', 'con.confrelid')} AS ref_cols,
              con.confdeltype AS on_delete
         FROM pg_constraint con LEFT JOIN pg_class ref ON ref.oid = con.confrelid
        WHERE con.conrelid = $1::regclass AND con.contype IN ('p', 'u', 'f')`,
      [table],
    );
    for (const r of cons.rows) {
      if (r.kind === 'p') t.primaryKey = r.cols.split(', ');
      else if (r.kind === 'u') t.unique.push(r.cols);
      else t.foreignKeys.push(`(${r.cols}) → ${r.ref_table}(${r.ref_cols})${r.on_delete === 'c' ? ' ON DELETE CASCADE' : ''}`);
    }
    const ixs = await c.query(
      `SELECT ic.relname AS name, ix.indisunique AS is_unique, ix.indpred IS NOT NULL AS partial,
              (SELECT string_agg(coalesce(a.attname::text, '<expression>'), ', ' ORDER BY k.i) FROM unnest(ix.indkey::int2[]) WITH ORDINALITY AS k(n, i)
                 LEFT JOIN pg_attribute a ON a.attrelid = ix.indrelid AND a.attnum = k.n AND k.n > 0) AS cols
         FROM pg_index ix JOIN pg_class ic ON ic.oid = ix.indexrelid
        WHERE ix.indrelid = $1::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint con WHERE con.conindid = ix.indexrelid)`,
      [table],
    );
    for (const r of ixs.rows) t.indexes.push(indexLine(r.name, table, r.cols.split(', '), r.is_unique, r.partial));
    out.set(table, t);
  }
  return out;
}

test('a fresh SQLite database describes itself: every table has a primary key and every column a known type class', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-schema-'));
  try {
    const d = describeSqlite(join(dir, 'kopek.db'));
    assert.ok(d.size > 20);
    for (const [table, t] of d) assert.ok(t.primaryKey.length > 0 || table === 'database_identity', `${table} has a primary key`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a fresh PostgreSQL database has the tables, columns, keys and indexes a fresh SQLite database has', { skip: TEST_PG ? false : 'needs KOPEK_TEST_PG' }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-schema-'));
  const url = await emptyPgDatabase();
  try {
    const sqlite = facts(describeSqlite(join(dir, 'kopek.db')));
    await (await openPgStorage(url)).close();
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    let postgres: string[];
    try {
      postgres = facts(await describePg(c));
    } finally {
      await c.end();
    }
    const pgOnly = (f: string): boolean =>
      Object.keys(PG_ONLY_TABLES).some((t) => f.startsWith(`table ${t}`) || f.includes(` ${t}.`) || f.includes(` ${t}(`) || f.startsWith(`index ${t} `)) ||
      Object.keys(PG_ONLY_INDEXES).some((i) => f.startsWith(`index ${i} `));
    assert.ok(sqlite.filter((f) => f.startsWith('index ')).length > 30 && sqlite.filter((f) => f.startsWith('foreign key ')).length > 10);
    assert.deepEqual(
      postgres.filter((f) => !pgOnly(f)),
      sqlite,
      'the two engines end with the same schema',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await dropPgDatabase(url);
  }
});

import type { Reader } from './store';

// The counters that hand out generated keys, read beside the tables they number. A counter behind its table
// hands out a number the table already holds: every insert there fails on the primary key until the counter
// has used the taken numbers up (a database moved by hand, a restore that set no sequences). `kopek db copy`
// checks its target with these before it commits, and `kopek doctor` reports any counter that fell behind.

/** One generated key's counter and the largest key of the table it numbers. */
export interface Counter {
  table: string;
  column: string;
  /** The PostgreSQL sequence (as regclass text), or `sqlite_sequence` on SQLite. */
  sequence: string;
  /** The last number the counter handed out; 0 when it has handed out none. */
  last: number;
  /** The largest key in the table; 0 when the table is empty. */
  max: number;
}

/** Statement text (no parameters) in, rows out: a Reader's `all` or a bare PostgreSQL client's query. */
export type RowsOf = <T>(sql: string) => Promise<T[]>;

/** A generated key on PostgreSQL: the column, its table and the sequence that numbers it. */
export interface KeySequence {
  table: string;
  column: string;
  /** The sequence as regclass text (quoted where it must be), ready to select from or setval. */
  sequence: string;
  /** The table and column quoted for a statement. */
  tableSql: string;
  columnSql: string;
}

/**
 * Every sequence owned by a column of a table in the search path, from the catalog: identity columns (deptype
 * `i`) and serial columns or `OWNED BY` sequences (deptype `a`), however the column was declared. Nothing is
 * listed by hand, so a table the schema gains is covered without a change here.
 */
export async function pgKeySequences(rows: RowsOf): Promise<KeySequence[]> {
  return rows<KeySequence>(
    `SELECT t.relname AS "table", a.attname AS "column", s.oid::regclass::text AS "sequence",
            quote_ident(t.relname) AS "tableSql", quote_ident(a.attname) AS "columnSql"
       FROM pg_class s
       JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = s.oid
                       AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
       JOIN pg_class t ON t.oid = d.refobjid
       JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid
      WHERE s.relkind = 'S' AND t.relkind IN ('r', 'p') AND pg_table_is_visible(t.oid)
      ORDER BY t.relname, a.attname`,
  );
}

/**
 * The one sequence no column owns: `event_pos` gives event_positions.pos (a numbering pass calls it, the
 * column has no default). It stands beside the owned ones when the schema has it.
 */
const EVENT_POSITIONS: KeySequence = { table: 'event_positions', column: 'pos', sequence: 'event_pos', tableSql: 'event_positions', columnSql: 'pos' };

/** The last number `sequence` handed out (0: none yet): its last_value once called, else one before its start. */
export async function pgSequenceLast(rows: RowsOf, sequence: string): Promise<number> {
  const [r] = await rows<{ last_value: number | string; is_called: boolean | number | string }>(`SELECT last_value, is_called FROM ${sequence}`);
  const called = r.is_called === true || r.is_called === 1 || r.is_called === 't';
  return called ? Number(r.last_value) : Number(r.last_value) - 1;
}

/** Every generated key's counter on PostgreSQL, each beside its table's largest key. */
export async function pgCounters(rows: RowsOf): Promise<Counter[]> {
  const keys = await pgKeySequences(rows);
  const [pos] = await rows<{ present: boolean | number }>(`SELECT to_regclass('event_pos') IS NOT NULL AND to_regclass('event_positions') IS NOT NULL AS present`);
  if (pos.present === true || pos.present === 1) keys.push(EVENT_POSITIONS);
  const out: Counter[] = [];
  for (const k of keys) {
    const [m] = await rows<{ m: number | string }>(`SELECT coalesce(max(${k.columnSql}), 0) AS m FROM ${k.tableSql}`);
    out.push({ table: k.table, column: k.column, sequence: k.sequence, last: await pgSequenceLast(rows, k.sequence), max: Number(m.m) });
  }
  return out;
}

/**
 * SQLite's counters: the `sqlite_sequence` row of each AUTOINCREMENT table beside its largest rowid. A table
 * without AUTOINCREMENT numbers from its largest rowid and has no counter to fall behind.
 */
export async function sqliteCounters(rows: RowsOf): Promise<Counter[]> {
  const tables = await rows<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%AUTOINCREMENT%' ORDER BY name`);
  const seq = new Map((await rows<{ name: string; seq: number }>('SELECT name, seq FROM sqlite_sequence')).map((r) => [r.name, r.seq]));
  const out: Counter[] = [];
  for (const { name } of tables) {
    const quoted = `"${name.replace(/"/g, '""')}"`;
    const [key] = await rows<{ name: string }>(`SELECT name FROM pragma_table_info('${name.replace(/'/g, "''")}') WHERE pk = 1`);
    const [m] = await rows<{ m: number }>(`SELECT coalesce(max(rowid), 0) AS m FROM ${quoted}`);
    out.push({ table: name, column: key?.name ?? 'rowid', sequence: 'sqlite_sequence', last: seq.get(name) ?? 0, max: m.m });
  }
  return out;
}

/** The database's counters, on its engine. */
export function counters(q: Reader): Promise<Counter[]> {
  const rows: RowsOf = (sql) => q.all(sql);
  return q.engine === 'postgres' ? pgCounters(rows) : sqliteCounters(rows);
}

/**
 * Keys a counter numbers on paper only: every row is written with its key given, so the counter hands out
 * nothing and stands wherever it was last set (a copy sets it too). recurrent_payments is keyed by its
 * payment's seq (src/money/tokens/store.ts writes it with each row); PostgreSQL's schema gives the column an identity
 * as it does every INTEGER PRIMARY KEY.
 */
const KEYS_GIVEN_BY_ROWS: ReadonlySet<string> = new Set(['recurrent_payments.payment_seq']);

/** The counters whose next number is one their table already holds (keys every row gives itself aside). */
export function behindTheirTables(list: Counter[]): Counter[] {
  return list.filter((c) => c.last < c.max && !KEYS_GIVEN_BY_ROWS.has(`${c.table}.${c.column}`));
}

/** A counter as a finding names it: `ledger_postings.id: counter at 1, largest key 16`. */
export function describeCounter(c: Counter): string {
  return `${c.table}.${c.column}: counter at ${c.last}, largest key ${c.max}`;
}

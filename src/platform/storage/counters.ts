import type { Reader } from './store';

// The counters that hand out generated keys. One behind its table hands out taken numbers (a database moved by
// hand, a restore that set no sequences); `kopek db copy` checks its target with these, `kopek doctor` reports them.

export interface Counter {
  table: string;
  column: string;
  /** The PostgreSQL sequence (as regclass text), or `sqlite_sequence` on SQLite. */
  sequence: string;
  /** 0 when it has handed out none. */
  last: number;
  /** 0 when the table is empty. */
  max: number;
}

/** A Reader's `all` or a bare PostgreSQL client's query. */
export type RowsOf = <T>(sql: string) => Promise<T[]>;

/** A counter's names, with its table and column quoted for SQL. */
type KeySequence = Pick<Counter, 'table' | 'column' | 'sequence'> & { tableSql: string; columnSql: string };

/** The one sequence no column owns: a numbering pass calls `event_pos` for event_positions.pos. */
const EVENT_POSITIONS: KeySequence = { table: 'event_positions', column: 'pos', sequence: 'event_pos', tableSql: 'event_positions', columnSql: 'pos' };

export async function pgCounters(rows: RowsOf): Promise<Counter[]> {
  // Every sequence owned by a column (identity `i` or serial/`OWNED BY` `a`), from the catalog: none listed by hand.
  const keys = await rows<KeySequence>(
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
  const [pos] = await rows<{ present: boolean | number }>(`SELECT to_regclass('event_pos') IS NOT NULL AND to_regclass('event_positions') IS NOT NULL AS present`);
  if (pos.present === true || pos.present === 1) keys.push(EVENT_POSITIONS);
  const out: Counter[] = [];
  for (const k of keys) {
    const [m] = await rows<{ m: number | string }>(`SELECT coalesce(max(${k.columnSql}), 0) AS m FROM ${k.tableSql}`);
    const [s] = await rows<{ last_value: number | string; is_called: boolean | number | string }>(`SELECT last_value, is_called FROM ${k.sequence}`);
    // Not called yet: none handed out, 0.
    const called = s.is_called === true || s.is_called === 1 || s.is_called === 't';
    out.push({ table: k.table, column: k.column, sequence: k.sequence, last: called ? Number(s.last_value) : Number(s.last_value) - 1, max: Number(m.m) });
  }
  return out;
}

/** `sqlite_sequence` beside each AUTOINCREMENT table's largest rowid; other tables have no counter to fall behind. */
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

export function counters(q: Reader): Promise<Counter[]> {
  const rows: RowsOf = (sql) => q.all(sql);
  return q.engine === 'postgres' ? pgCounters(rows) : sqliteCounters(rows);
}

/**
 * Keys every row gives itself, so the counter hands out nothing: recurrent_payments is keyed by its payment's seq
 * (tokens/store.ts), though PostgreSQL's schema gives it an identity as every INTEGER PRIMARY KEY.
 */
const KEYS_GIVEN_BY_ROWS: ReadonlySet<string> = new Set(['recurrent_payments.payment_seq']);

/** The counters whose next number their table already holds. */
export function behindTheirTables(list: Counter[]): Counter[] {
  return list.filter((c) => c.last < c.max && !KEYS_GIVEN_BY_ROWS.has(`${c.table}.${c.column}`));
}

/** E.g. `ledger_postings.id: counter at 1, largest key 16`. */
export function describeCounter(c: Counter): string {
  return `${c.table}.${c.column}: counter at ${c.last}, largest key ${c.max}`;
}

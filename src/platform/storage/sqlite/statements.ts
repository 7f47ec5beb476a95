import type Database from 'better-sqlite3';

/** SQL built from column lists is bounded, but a bound costs nothing. */
const STMT_CACHE_LIMIT = 2000;

/**
 * `rows`, made at the first get, reads one row as an array into one object literal of fixed shape (`build`):
 * better-sqlite3 builds rows property by property, which for a 32-column payment costs as much as the query. The
 * literal comes from the SQL's column names, never data. Null when unreadable so (duplicate names, no columns).
 */
export interface Prepared {
  stmt: Database.Statement;
  rows?: Database.Statement | null;
  width: number;
  build?: (a: unknown[]) => unknown;
}

/** A connection's statements, compiled once per SQL text for the store and its transactions; `written` counts rows changed and commits (wal.ts). */
export class Statements {
  readonly cache = new Map<string, Prepared>();
  written = 0;

  constructor(readonly db: Database.Database) {}

  add(sql: string): Prepared {
    const p: Prepared = { stmt: this.db.prepare(sql), rows: undefined, width: 0, build: undefined };
    if (this.cache.size >= STMT_CACHE_LIMIT) this.cache.clear();
    this.cache.set(sql, p);
    return p;
  }

  /** A statement without parameters or rows (savepoints, BEGIN). */
  exec(sql: string): void {
    (this.cache.get(sql) ?? this.add(sql)).stmt.run();
  }

  /** The first get of `p`: its row reader, or null. */
  rowsOf(p: Prepared): Database.Statement | null {
    p.rows = null;
    if (!p.stmt.reader) return null;
    // raw() changes a statement, so not the shared one.
    const stmt = this.db.prepare(p.stmt.source);
    const names = stmt.raw(true).columns().map((c) => c.name);
    if (new Set(names).size !== names.length) return null;
    const fields = names.map((n, i) => `${JSON.stringify(n)}: a[${i}]`).join(', ');
    p.width = names.length;
    p.build = new Function('a', `return { ${fields} };`) as (a: unknown[]) => unknown;
    return (p.rows = stmt);
  }
}

/** A schema change after preparing would shift the columns; it happens only at start-up, but never misread. */
export function columnsChanged(p: Prepared): never {
  throw new Error(`cannot read rows of "${p.stmt.source.slice(0, 80)}": the columns changed`);
}

import type Database from 'better-sqlite3';

/** A reader of one row at a time; see cachedRowReader. */
export interface RowReader {
  get(...params: unknown[]): unknown;
}

/** Most statements a connection's cache holds; SQL built from column lists is bounded, but a bound costs nothing. */
const STMT_CACHE_LIMIT = 2000;

const stmtCaches = new WeakMap<Database.Database, Map<string, Database.Statement>>();
const readerCaches = new WeakMap<Database.Database, Map<string, RowReader>>();

/**
 * A prepared statement of `db`, compiled once per SQL text and shared by every caller on that connection:
 * use it with run/get/all only (pluck/raw/expand would change it for everyone, and an iterating statement
 * cannot be re-entered).
 */
export function cachedStmt(db: Database.Database, sql: string): Database.Statement {
  return cachedPerConnection(stmtCaches, db, sql, prepare);
}

/**
 * A single-row reader for `sql` on `db`, made once per SQL text. better-sqlite3 builds a row object one
 * property at a time, which for a wide row (a payment has 32 columns) costs as much as the query; this reader
 * takes the row as an array and builds the object with one literal of fixed shape, about half the cost. The
 * literal is generated from the statement's column names, which come from the SQL text, never from data.
 */
export function cachedRowReader(db: Database.Database, sql: string): RowReader {
  return cachedPerConnection(readerCaches, db, sql, makeRowReader);
}

function prepare(db: Database.Database, sql: string): Database.Statement {
  return db.prepare(sql);
}

function makeRowReader(db: Database.Database, sql: string): RowReader {
  // A statement of its own: raw() changes a statement, so it must not be one the shared cache hands out.
  const stmt = db.prepare(sql).raw(true);
  const names = stmt.columns().map((c) => c.name);
  if (new Set(names).size !== names.length) throw new Error(`cannot read rows of "${sql.slice(0, 80)}": two columns share a name`);
  const fields = names.map((n, i) => `${JSON.stringify(n)}: a[${i}]`).join(', ');
  const build = new Function('a', `return { ${fields} };`) as (a: unknown[]) => unknown;
  return {
    get(...params: unknown[]): unknown {
      const a = stmt.get(...params) as unknown[] | undefined;
      if (a === undefined) return undefined;
      // A schema change after preparing would shift the columns; it happens only at start-up, but never misread.
      if (a.length !== names.length) throw new Error(`cannot read rows of "${sql.slice(0, 80)}": the columns changed`);
      return build(a);
    },
  };
}

// `make` is a module-level function, not a closure, so a cache hit on this hot path allocates nothing.
function cachedPerConnection<V>(
  caches: WeakMap<Database.Database, Map<string, V>>,
  db: Database.Database,
  sql: string,
  make: (db: Database.Database, sql: string) => V,
): V {
  let cache = caches.get(db);
  if (!cache) {
    cache = new Map();
    caches.set(db, cache);
  }
  let value = cache.get(sql);
  if (value === undefined) {
    value = make(db, sql);
    if (cache.size >= STMT_CACHE_LIMIT) cache.clear();
    cache.set(sql, value);
  }
  return value;
}

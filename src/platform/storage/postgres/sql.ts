import type pg from 'pg';

/**
 * kopek's SQL as PostgreSQL binds it: only parameters change, `?` to `$1`, `$2`, … and `@name` (bound from one
 * object by bindNamed) to `$n`. String literals, quoted identifiers and comments are copied as they are.
 */

export interface PgStatement {
  text: string;
  /** `@name` parameters in `$n` order; null when bound by position. */
  names: string[] | null;
  /**
   * The name it is prepared under on every connection (parsed and planned once per connection), unique per process.
   * Null when the text holds a `;` (maybe several statements, which only a simple query carries).
   */
  name: string | null;
  /** The table an INSERT, UPDATE or DELETE writes. */
  writes: string | null;
}

/** SQL texts are the program's own, so this bounds nothing in practice. */
const CACHE_LIMIT = 4000;
const cache = new Map<string, PgStatement>();
/** Never reset, so a text seen again after the cache was cleared gets a new name. */
let named = 0;

const TOKEN = /'(?:[^']|'')*'|"(?:[^"]|"")*"|--[^\n]*|\/\*[\s\S]*?\*\/|\?|@([A-Za-z_]\w*)/g;

export function pgStatement(sql: string): PgStatement {
  const hit = cache.get(sql);
  if (hit !== undefined) return hit;
  let n = 0;
  let names = null as string[] | null;
  const text = sql.replace(TOKEN, (m: string, name: string | undefined) => {
    if (m === '?') return `$${++n}`;
    if (name === undefined) return m;
    names ??= [];
    const k = names.indexOf(name);
    return `$${k < 0 ? names.push(name) : k + 1}`;
  });
  if (names !== null && n > 0) throw new Error(`cannot mix ? and @name parameters: ${sql.slice(0, 80)}`);
  const written = /^\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+"?(\w+)/i.exec(text);
  const s: PgStatement = { text, names, name: text.replace(/;\s*$/, '').includes(';') ? null : `k${++named}`, writes: written ? written[1] : null };
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(sql, s);
  return s;
}

export function bindNamed(names: string[], params: unknown[]): unknown[] {
  const obj = params[0] as Record<string, unknown> | undefined;
  if (params.length !== 1 || obj === null || typeof obj !== 'object') throw new Error('a statement with @name parameters takes one object of values');
  return names.map((n) => {
    if (!(n in obj)) throw new Error(`missing named parameter "${n}"`);
    return obj[n];
  });
}

const corked = new WeakSet<object>();

/**
 * Hold a connection's writes to the end of the turn, so statements made without waiting (a BEGIN and the first
 * read, statements awaited with Promise.all) leave in one socket write. Uses pg's internal connection (kept for years); without it, nothing.
 */
export function oneWrite(client: pg.PoolClient): void {
  const stream = (client as unknown as { connection?: { stream?: { cork?: () => void; uncork?: () => void } } }).connection?.stream;
  if (!stream?.cork || !stream.uncork || corked.has(stream)) return;
  corked.add(stream);
  stream.cork();
  queueMicrotask(() => {
    corked.delete(stream);
    stream.uncork!();
  });
}

/**
 * Named prepared statements: parsing and planning were over a third of the database's work per request. undefined
 * is NULL (better-sqlite3 refuses it; kopek never sends it on purpose).
 */
export function prepared(st: PgStatement, params: unknown[]): pg.QueryConfig {
  const v = st.names === null ? params.slice() : bindNamed(st.names, params);
  for (let i = 0; i < v.length; i++) if (v[i] === undefined) v[i] = null;
  return st.name === null ? { text: st.text, values: v } : { name: st.name, text: st.text, values: v };
}

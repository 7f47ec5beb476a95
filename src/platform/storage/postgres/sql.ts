import type pg from 'pg';

/**
 * kopek's SQL as PostgreSQL binds it. A statement whose text differs between the engines is written once per
 * engine (dialect.ts, or beside its use); the one thing done to a text here is its parameters: `?` becomes `$1`,
 * `$2`, … in order, and `@name` (bound from one object) becomes `$n` too, with bindNamed turning the object into
 * the positional list. String literals, quoted identifiers and comments are copied as they are.
 */

/** A SQL text with PostgreSQL's parameters, and how to bind them. */
export interface PgStatement {
  text: string;
  /** The names of `@name` parameters in the order of their `$n`; null when the statement binds by position. */
  names: string[] | null;
  /**
   * The name this text is prepared under on every connection that runs it (see PgStore): parsed and planned
   * once per connection instead of at every execution. Unique per process: a name is never given to another text.
   * Null when the text holds a `;` (it may be several statements, which only a simple query can carry).
   */
  name: string | null;
  /** The table an INSERT, UPDATE or DELETE writes; null for anything else. */
  writes: string | null;
}

/** Most statements kept; SQL texts are the program's own, so this bounds nothing in practice. */
const CACHE_LIMIT = 4000;
const cache = new Map<string, PgStatement>();
/** Names given so far; never reset, so a text seen again after the cache was cleared gets a new name. */
let named = 0;

/** A quoted string, a quoted name or a comment (copied), or a parameter (numbered). */
const TOKEN = /'(?:[^']|'')*'|"(?:[^"]|"")*"|--[^\n]*|\/\*[\s\S]*?\*\/|\?|@([A-Za-z_]\w*)/g;

/** The statement for one SQL text (cached per text). */
export function pgStatement(sql: string): PgStatement {
  let s = cache.get(sql);
  if (s === undefined) {
    s = numberParameters(sql);
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(sql, s);
  }
  return s;
}

function numberParameters(sql: string): PgStatement {
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
  return { text, names, name: text.replace(/;\s*$/, '').includes(';') ? null : `k${++named}`, writes: written ? written[1] : null };
}

/** The positional values of a statement bound by name: `params` is one object holding every name. */
export function bindNamed(names: string[], params: unknown[]): unknown[] {
  const obj = params[0] as Record<string, unknown> | undefined;
  if (params.length !== 1 || obj === null || typeof obj !== 'object') throw new Error('a statement with @name parameters takes one object of values');
  return names.map((n) => {
    if (!(n in obj)) throw new Error(`missing named parameter "${n}"`);
    return obj[n];
  });
}

/** Values as PostgreSQL takes them: undefined is NULL, as better-sqlite3 refuses it and kopek never sends it on purpose. */
export function pgValues(values: unknown[]): unknown[] {
  for (let i = 0; i < values.length; i++) if (values[i] === undefined) values[i] = null;
  return values;
}

// How a statement goes on the wire: prepared by name, and written with the others of its turn.

/** Sockets whose writes wait for the end of the current turn (see oneWrite). */
const corked = new WeakSet<object>();

/**
 * Hold a connection's writes until the end of the current turn: statements made one after another without
 * waiting (a BEGIN and the body's first read, the statements of together()) leave in one write to the socket
 * instead of one each. The connection is pg's (an internal it has kept for years); without it nothing is held.
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

function values(st: PgStatement, params: unknown[]): unknown[] {
  return pgValues(st.names === null ? params.slice() : bindNamed(st.names, params));
}

/**
 * A statement goes as a named prepared statement: each connection parses and plans it once (that was over a
 * third of the database's work per request). A text that may hold several statements goes as a simple query.
 */
export function prepared(st: PgStatement, params: unknown[]): pg.QueryConfig {
  const v = values(st, params);
  return st.name === null ? { text: st.text, values: v } : { name: st.name, text: st.text, values: v };
}

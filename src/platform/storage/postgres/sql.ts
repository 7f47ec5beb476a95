/**
 * kopek's SQL as PostgreSQL reads it. Domain code writes one SQL text for both engines, in the common subset
 * (see dialect.ts); this file turns the few spellings that differ into PostgreSQL's, once per SQL text:
 *
 * - `?` parameters become `$1`, `$2`, … in order; `@name` parameters (bound from one object) become `$n` too,
 *   and `bindNamed` turns the object into the positional list.
 * - SQLite's planner hints (`INDEXED BY name`) are dropped.
 * - The two-argument scalar `min(a, b)` and `max(a, b)` become `LEAST` and `GREATEST` (the one-argument
 *   aggregates stay).
 * - `/*for-update*\/` (dialect.FOR_UPDATE) becomes `FOR UPDATE`.
 * - An INSERT into a table whose key the database numbers gets `RETURNING` that key, so that
 *   `RunResult.lastInsertRowid` means what it means on SQLite.
 *
 * String literals, quoted identifiers and comments are copied as they are.
 */

/** A SQL text translated for PostgreSQL, and how to bind its parameters. */
export interface PgStatement {
  text: string;
  /** The names of `@name` parameters in the order of their `$n`; null when the statement binds by position. */
  names: string[] | null;
  /** The key column RETURNING was added for (an INSERT into a numbered table); null otherwise. */
  returnsKey: string | null;
  /**
   * The name this text is prepared under on every connection that runs it (see PgStore): parsed and planned
   * once per connection instead of at every execution. Unique per process: a name is never given to another text.
   * Null when the text holds a `;` (it may be several statements, which only a simple query can carry).
   */
  name: string | null;
  /** The table an INSERT, UPDATE or DELETE writes; null for anything else. */
  writes: string | null;
}

/** Tables whose key the database numbers (INTEGER PRIMARY KEY on SQLite), with that key's column. */
export type NumberedTables = ReadonlyMap<string, string>;

/** Most translations kept; SQL texts are the program's own, so this bounds nothing in practice. */
const CACHE_LIMIT = 4000;
const cache = new Map<string, PgStatement>();
/** Names given so far; never reset, so a text translated again after the cache was cleared gets a new name. */
let named = 0;

/** Translate one SQL text (cached). */
export function pgStatement(sql: string, numbered: NumberedTables): PgStatement {
  let s = cache.get(sql);
  if (s === undefined) {
    s = translate(sql, numbered);
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(sql, s);
  }
  return s;
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

type Token = { kind: 'code' | 'literal'; text: string };

/** Split SQL into code and the parts copied as they are (strings, quoted names, comments). */
function tokenize(sql: string): Token[] {
  const out: Token[] = [];
  let code = '';
  let i = 0;
  const flush = (): void => {
    if (code) out.push({ kind: 'code', text: code });
    code = '';
  };
  while (i < sql.length) {
    const c = sql[i];
    if (c === "'" || c === '"') {
      let j = i + 1;
      for (;;) {
        if (j >= sql.length) break;
        if (sql[j] === c) {
          if (sql[j + 1] === c) j += 2;
          else break;
        } else j++;
      }
      flush();
      out.push({ kind: 'literal', text: sql.slice(i, j + 1) });
      i = j + 1;
    } else if (c === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      const j = end < 0 ? sql.length : end;
      flush();
      out.push({ kind: 'literal', text: sql.slice(i, j) });
      i = j;
    } else if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      const j = end < 0 ? sql.length : end + 2;
      const body = sql.slice(i, j);
      flush();
      out.push(body === '/*for-update*/' ? { kind: 'code', text: 'FOR UPDATE' } : { kind: 'literal', text: body });
      i = j;
    } else {
      code += c;
      i++;
    }
  }
  flush();
  return out;
}

function translate(sql: string, numbered: NumberedTables): PgStatement {
  const tokens = tokenize(sql);
  let n = 0;
  let names: string[] | null = null;
  const byName = new Map<string, number>();
  let text = '';
  for (const t of tokens) {
    if (t.kind === 'literal') {
      text += t.text;
      continue;
    }
    let code = t.text.replace(/\bINDEXED\s+BY\s+\w+/gi, '');
    code = code.replace(/\?|@([A-Za-z_]\w*)/g, (_m, name: string | undefined) => {
      if (name === undefined) return `$${++n}`;
      names ??= [];
      let k = byName.get(name);
      if (k === undefined) {
        names.push(name);
        k = names.length;
        byName.set(name, k);
      }
      return `$${k}`;
    });
    text += code;
  }
  if (names !== null && n > 0) throw new Error(`cannot mix ? and @name parameters: ${sql.slice(0, 80)}`);
  text = scalarMinMax(text);
  let returnsKey: string | null = null;
  const ins = /^\s*INSERT\s+INTO\s+"?(\w+)"?/i.exec(text);
  if (ins && !/\bRETURNING\b/i.test(text)) {
    const key = numbered.get(ins[1]);
    if (key !== undefined) {
      returnsKey = key;
      text = `${text.replace(/;\s*$/, '')} RETURNING ${key}`;
    }
  }
  const written = /^\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+"?(\w+)/i.exec(text);
  return { text, names, returnsKey, name: text.replace(/;\s*$/, '').includes(';') ? null : `k${++named}`, writes: written ? written[1] : null };
}

/**
 * `min(a, b, …)` and `max(a, b, …)` with more than one argument are SQLite's scalar functions: PostgreSQL spells
 * them LEAST and GREATEST. Runs on the translated text, where literals are already placed: a quote is skipped
 * over when counting parentheses and commas.
 */
function scalarMinMax(text: string): string {
  const re = /\b(min|max)\s*\(/gi;
  let out = '';
  let from = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    const open = m.index + m[0].length - 1;
    const args = topLevelCommas(text, open);
    if (args === 0) continue;
    out += text.slice(from, m.index) + (m[1].toLowerCase() === 'min' ? 'LEAST(' : 'GREATEST(');
    from = open + 1;
  }
  return out + text.slice(from);
}

/** Commas at the top level of the parenthesis opened at `open` (0 for one argument). */
function topLevelCommas(text: string, open: number): number {
  let depth = 0;
  let commas = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === "'" || c === '"') {
      const close = text.indexOf(c, i + 1);
      i = close < 0 ? text.length : close;
    } else if (c === '(') depth++;
    else if (c === ')') {
      depth--;
      if (depth === 0) return commas;
    } else if (c === ',' && depth === 1) commas++;
  }
  return commas;
}

// ---- the schema ----

/**
 * schema.sql (written for SQLite) as PostgreSQL DDL. The one source of the schema is schema.sql; this turns its
 * types and table options into PostgreSQL's:
 * - `INTEGER PRIMARY KEY [AUTOINCREMENT]` is a `BIGINT` identity that never reuses a number;
 * - `INTEGER` is `BIGINT` (milliseconds and kopecks need 64 bits), `REAL` is `DOUBLE PRECISION`, `BLOB` is `BYTEA`;
 * - `TEXT` columns compare byte by byte (`COLLATE "C"`), as SQLite's do, so cursors over text ids page alike;
 * - `STRICT` and `WITHOUT ROWID` have no meaning there and are dropped;
 * - foreign keys are checked at each statement as on SQLite, but may be deferred to the commit (dialect.deferForeignKeys);
 * - SQLite's random and clock functions in the schema's one INSERT become PostgreSQL's.
 */
export function pgSchema(sqliteDdl: string): string {
  const out: string[] = [];
  for (const t of tokenize(sqliteDdl)) {
    if (t.kind === 'literal') {
      if (!t.text.startsWith('--') && !t.text.startsWith('/*')) out.push(t.text);
      continue;
    }
    out.push(pgDdlCode(t.text));
  }
  return out
    .join('')
    .replace(/lower\(hex\(randomblob\(16\)\)\)/gi, `replace(gen_random_uuid()::text, '-', '')`)
    .replace(/CAST\(\(julianday\('now'\) - 2440587\.5\) \* 86400000 AS (?:INTEGER|BIGINT)\)/gi, `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`);
}

function pgDdlCode(code: string): string {
  return code
    .replace(/\)\s*STRICT\s*,\s*WITHOUT\s+ROWID/gi, ')')
    .replace(/\)\s*WITHOUT\s+ROWID\s*,\s*STRICT/gi, ')')
    .replace(/\)\s*STRICT\b/gi, ')')
    .replace(/\)\s*WITHOUT\s+ROWID\b/gi, ')')
    .replace(/\bINTEGER\s+PRIMARY\s+KEY(\s+AUTOINCREMENT)?/gi, 'BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY')
    .replace(/\bINTEGER\b/g, 'BIGINT')
    .replace(/(\bREFERENCES\s+\w+\s*\(\s*\w+\s*\)(?:\s+ON\s+DELETE\s+CASCADE)?)/gi, '$1 DEFERRABLE INITIALLY IMMEDIATE')
    .replace(/\bREAL\b/g, 'DOUBLE PRECISION')
    .replace(/\bBLOB\b/g, 'BYTEA')
    .replace(/(^|\n)(\s+\w+\s+)TEXT\b/g, '$1$2TEXT COLLATE "C"');
}

/** The numbered tables of a schema: each `CREATE TABLE name (col INTEGER PRIMARY KEY …`. */
export function numberedTables(sqliteDdl: string): Map<string, string> {
  const out = new Map<string, string>();
  const re = /CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?"?(\w+)"?\s*\(\s*(\w+)\s+INTEGER\s+PRIMARY\s+KEY/gi;
  for (let m = re.exec(sqliteDdl); m !== null; m = re.exec(sqliteDdl)) out.set(m[1], m[2]);
  return out;
}

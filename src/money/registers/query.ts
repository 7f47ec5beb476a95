import { badRequest } from '../../platform/http/errors';
import { DAY_MS, parseDay } from '../../platform/util/time';
import { decodeCursor, encodeCursor, type Cursor } from './cursor';

const LIMIT_DEFAULT = 50;
const LIMIT_MAX = 200;

export interface RegisterQuery {
  limit: number;
  /** Rows strictly older than this position (keyset), or null for the first page. */
  after: Cursor | null;
  /** Allowed statuses, or null for all. */
  statuses: string[] | null;
  /** created_at >= fromMs (start of the `from` UTC day). */
  fromMs: number | null;
  /** created_at < toMs (start of the day after `to`). */
  toMs: number | null;
  /** The register's own parameters (e.g. include_test, method), as given. */
  extra: Record<string, string>;
}

export interface RegisterSpec {
  statuses: readonly string[];
  /** Allowed values per name (an empty list accepts any non-empty value). */
  extra?: Record<string, readonly string[]>;
}

const COMMON = ['limit', 'cursor', 'status', 'from', 'to'];

function single(q: URLSearchParams, name: string): string | undefined {
  const all = q.getAll(name);
  if (all.length === 0) return undefined;
  if (all.length > 1) throw badRequest(`Query parameter "${name}" must be given once, got ${all.length} times`, name);
  return all[0];
}

/** limit (1..200, default 50), cursor, status list, from/to (UTC days, inclusive) and extras; anything invalid is 400. */
export function parseRegisterQuery(q: URLSearchParams, spec: RegisterSpec): RegisterQuery {
  const extraNames = Object.keys(spec.extra ?? {});
  for (const name of new Set(q.keys())) {
    if (!COMMON.includes(name) && !extraNames.includes(name)) {
      throw badRequest(`Unknown query parameter "${name}"; allowed: ${[...COMMON, ...extraNames].join(', ')}`, name);
    }
  }
  const rawLimit = single(q, 'limit') ?? String(LIMIT_DEFAULT);
  const limit = Number(rawLimit);
  if (!/^\d{1,4}$/.test(rawLimit) || limit < 1 || limit > LIMIT_MAX) {
    throw badRequest(`Query parameter "limit" must be an integer from 1 to ${LIMIT_MAX}, got "${rawLimit.slice(0, 32)}"`, 'limit');
  }
  const rawCursor = single(q, 'cursor');
  const after = rawCursor ? decodeCursor(rawCursor) : null;
  const statuses = single(q, 'status')?.split(',').map((s) => s.trim()) ?? null;
  const unknown = statuses?.find((s) => !spec.statuses.includes(s));
  if (unknown !== undefined) {
    throw badRequest(`Query parameter "status" must be a comma list of ${spec.statuses.join(', ')}, got "${unknown.slice(0, 32)}"`, 'status');
  }
  const fromMs = dayParam(q, 'from');
  const toStart = dayParam(q, 'to');
  const toMs = toStart === null ? null : toStart + DAY_MS;
  if (fromMs !== null && toMs !== null && fromMs >= toMs) {
    throw badRequest(`Query parameter "to" must not be before "from", got from=${q.get('from')} to=${q.get('to')}`, 'to');
  }
  const extra: Record<string, string> = {};
  for (const [name, allowed] of Object.entries(spec.extra ?? {})) {
    const v = single(q, name);
    if (v === undefined) continue;
    if (allowed.length > 0 ? !allowed.includes(v) : v.length === 0) {
      throw badRequest(`Query parameter "${name}" must be ${allowed.length ? `one of ${allowed.join(', ')}` : 'non-empty'}, got "${v.slice(0, 32)}"`, name);
    }
    extra[name] = v;
  }
  return { limit, after, statuses, fromMs, toMs, extra };
}

function dayParam(q: URLSearchParams, name: string): number | null {
  const v = single(q, name);
  if (v === undefined) return null;
  const ms = parseDay(v);
  if (ms === null) throw badRequest(`Query parameter "${name}" must be a date YYYY-MM-DD, got "${v.slice(0, 32)}"`, name);
  return ms;
}

/** `(t, NO_SEQ)` sorts before every row created at t. */
const NO_SEQ = -1;

/**
 * The position and day range as row-value bounds, so an index ending in (created_at, seq) seeks straight to the
 * page (`created_at < ? OR (… AND seq < ?)` made a page cost grow with its depth on SQLite).
 */
export function registerWhere(rq: RegisterQuery): { sql: string[]; params: unknown[] } {
  const sql: string[] = [];
  const params: unknown[] = [];
  // `created_at < to` is (to, NO_SEQ); the tighter of it and the cursor is the upper bound.
  let upper: [number, number] | null = rq.toMs === null ? null : [rq.toMs, NO_SEQ];
  if (rq.after && (upper === null || rq.after.createdAt < upper[0] || (rq.after.createdAt === upper[0] && rq.after.seq < upper[1]))) {
    upper = [rq.after.createdAt, rq.after.seq];
  }
  if (upper) {
    sql.push('(created_at, seq) < (?, ?)');
    params.push(upper[0], upper[1]);
  }
  if (rq.fromMs !== null) {
    sql.push('created_at >= ?');
    params.push(rq.fromMs);
  }
  // Rows added since the first page, not already excluded by the position.
  if (rq.after?.high !== undefined) {
    sql.push('seq <= ?');
    params.push(rq.after.high);
  }
  return { sql, params };
}

/** toPage needs the table's highest seq only for a first page that more rows follow. */
export function highNeeded(rows: readonly unknown[], rq: RegisterQuery): boolean {
  return rows.length > rq.limit && rq.limit > 0 && !rq.after;
}

/** A page of rows fetched with `LIMIT limit + 1`. `high`, the table's highest seq, goes into a first page's cursor. */
export function toPage<R extends { created_at: number; seq: number }, T>(
  rows: R[], rq: RegisterQuery, view: (r: R) => T,
  high?: number | (() => number),
): { items: T[]; next_cursor: string | null } {
  const more = rows.length > rq.limit;
  const page = more ? rows.slice(0, rq.limit) : rows;
  const last = page[page.length - 1];
  if (!more || !last) return { items: page.map(view), next_cursor: null };
  const bound = rq.after ? rq.after.high : typeof high === 'function' ? high() : high;
  return { items: page.map(view), next_cursor: encodeCursor({ createdAt: last.created_at, seq: last.seq, high: bound }) };
}

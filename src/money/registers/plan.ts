import type { Reader } from '../../platform/storage/store';
import { badRequest } from '../../platform/http/errors';
import { registerWhere, type RegisterQuery } from './query';

/** Every index starts (shop_id, mode) and ends (created_at, seq): a page is one seek and `limit + 1` rows in order. */
export interface RegisterTable {
  table: string;
  /** The index of a page with no filter: (shop_id, mode, created_at, seq). */
  plain: string;
  /** Equality columns between mode and created_at. */
  filtered: ReadonlyArray<{ index: string; columns: readonly string[] }>;
  /** A query not fixing a column of its index runs once per value. */
  domains: Readonly<Record<string, readonly string[]>>;
}

/** One per combination of mode and filter values, each of limit + 1 rows. */
export const REGISTER_SEEKS_MAX = 32;

/** A register over `table`: its plain index `<table>_register`, and each filtered index with its columns. */
function register(table: string, filtered: Record<string, string[]>, domains: Record<string, string[]>) {
  const indexes = Object.entries(filtered).map(([index, columns]) => ({ index, columns }));
  return { table, plain: `${table}_register`, filtered: indexes, domains } satisfies RegisterTable;
}

const SETTLES = ['pending', 'succeeded', 'failed'];

/** schema.sql creates the indexes. */
export const REGISTERS = {
  payments: register('payments', { payments_status: ['status'] }, {
    status: ['pending', 'processing', 'succeeded', 'failed', 'cancelled', 'refunded', 'expired'],
  }),
  refunds: register('refunds', { refunds_status: ['status'] }, { status: SETTLES }),
  payouts: register('payouts', { payouts_method_status: ['method', 'status'] }, {
    method: ['payouts_sbp', 'payouts_card', 'payouts_account'], status: SETTLES,
  }),
  tokens: register('tokens', { tokens_status: ['status'], tokens_customer: ['customer_ref', 'status'] }, {
    status: ['pending', 'active', 'cancelled'],
  }),
  subscriptions: register('subscriptions', {
    subscriptions_status: ['status'], subscriptions_customer: ['customer_ref', 'status'],
  }, { status: ['pending', 'active', 'past_due', 'cancelled'] }),
};

/** SQL per engine (SQLite's names the index) and parameters. */
export interface RegisterSeek {
  index: string;
  sql: { sqlite: string; postgres: string };
  params: unknown[];
}

/** Column → allowed values (undefined: no filter on that column). */
export type RegisterFilters = Record<string, readonly string[] | undefined>;

/** The index serving the filters, once per combination of mode and filter values; a filter no index serves is 400. */
export function registerSeeks(
  spec: RegisterTable, shopId: string, modes: readonly string[], filters: RegisterFilters, rq: RegisterQuery,
  columns = '*',
): RegisterSeek[] {
  const fixed = Object.keys(filters).filter((c) => filters[c] !== undefined);
  let best: { index: string; columns: readonly string[]; seeks: number } | null = fixed.length === 0 ? { index: spec.plain, columns: [], seeks: 1 } : null;
  for (const ix of fixed.length === 0 ? [] : spec.filtered) {
    if (!fixed.every((c) => ix.columns.includes(c))) continue;
    let seeks = 1;
    for (const c of ix.columns) seeks *= filters[c]?.length ?? spec.domains[c]?.length ?? Infinity;
    if (!best || seeks < best.seeks) best = { ...ix, seeks };
  }
  if (!best || best.seeks * modes.length > REGISTER_SEEKS_MAX) {
    throw badRequest(`Cannot filter ${spec.table} by ${fixed.join(' and ')} together: no index serves that combination`, fixed[fixed.length - 1]);
  }
  const where = registerWhere(rq);
  const eq = ['shop_id = ?', 'mode = ?', ...best.columns.map((c) => `${c} = ?`)];
  const rest = `WHERE ${[...eq, ...where.sql].join(' AND ')} ORDER BY created_at DESC, seq DESC LIMIT ?`;
  const sql = { sqlite: `SELECT ${columns} FROM ${spec.table} INDEXED BY ${best.index} ${rest}`, postgres: `SELECT ${columns} FROM ${spec.table} ${rest}` };
  // Every combination of the index's equality values, mode first.
  let combos: unknown[][] = modes.map((m) => [shopId, m]);
  for (const c of best.columns) {
    const values = [...new Set(filters[c] ?? spec.domains[c])];
    combos = combos.flatMap((prefix) => values.map((v) => [...prefix, v]));
  }
  return combos.map((values) => ({ index: best.index, sql, params: [...values, ...where.params, rq.limit + 1] }));
}

/** Newest first, at most `limit + 1` (so toPage knows if more follow), merged from the seeks run one by one through `q`. */
export async function registerRows<R extends { created_at: number; seq: number }>(
  q: Reader, spec: RegisterTable, shopId: string, modes: readonly string[], filters: RegisterFilters,
  rq: RegisterQuery, columns = '*',
): Promise<R[]> {
  const seeks = registerSeeks(spec, shopId, modes, filters, rq, columns);
  // One seek answers in order already: only rows of several need the merge.
  if (seeks.length === 1) return q.all<R>(seeks[0].sql[q.engine], ...seeks[0].params);
  const rows: R[] = [];
  for (const s of seeks) rows.push(...(await q.all<R>(s.sql[q.engine], ...s.params)));
  rows.sort((a, b) => b.created_at - a.created_at || b.seq - a.seq);
  return rows.slice(0, rq.limit + 1);
}

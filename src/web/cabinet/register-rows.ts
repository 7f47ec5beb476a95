import type { Reader } from '../../platform/storage/store';
import { ApiError } from '../../platform/http/errors';
import { registerSeeks, type RegisterSeek, type RegisterTable } from '../../money/registers/plan';
import type { Cursor } from '../../money/registers/cursor';
import type { RegisterQuery } from '../../money/registers/query';

/** Most index seeks one cabinet query merges: one per shop and status value, each of at most a page of rows. */
const CABINET_SEEKS_MAX = 64;
/** Most rows one cabinet query reads for a filter no index serves (order id, amounts); a page not full by then offers to search on. */
export const SCAN_ROWS_MAX = 20_000;

/** Conditions no register index serves, checked on each row of a bounded window of the register. */
export interface RowFilter {
  sql: string[];
  params: unknown[];
}

/** A page's rows (at most limit + 1, newest first) and, when a window ran out first, where the search stopped. */
export interface CabinetRows<R> {
  rows: R[];
  /** The oldest position searched (rows from it up are all on this page); null when the search was complete. */
  searchedTo: Cursor | null;
}

type Position = { created_at: number; seq: number };

function newer(a: Position, b: Position): boolean {
  return a.created_at > b.created_at || (a.created_at === b.created_at && a.seq > b.seq);
}

/** The index seeks of one cabinet query, one per shop and status value; more than CABINET_SEEKS_MAX is a 400 naming `shop`. */
export function cabinetSeeks(spec: RegisterTable, shopIds: readonly string[], mode: string, rq: RegisterQuery, columns = '*'): RegisterSeek[] {
  const seeks = shopIds.flatMap((id) => registerSeeks(spec, id, [mode], { status: rq.statuses ?? undefined }, rq, columns));
  if (seeks.length > CABINET_SEEKS_MAX) {
    throw new ApiError(400, 'bad_request', `Cannot list ${spec.table} of ${shopIds.length} shops with this many statuses at once: choose one shop or fewer statuses`, 'shop');
  }
  return seeks;
}

// A register page over a merchant's shops, newest first: one index seek per shop and status, merged (≤ seeks × (limit + 1)
// rows). With `extra` each seek filters a window of SCAN_ROWS_MAX / seeks rows; a page cut short holds the matches down to
// the shallowest window end (`searchedTo`).
export async function cabinetRows<R extends Position>(q: Reader, spec: RegisterTable, shopIds: readonly string[], mode: string, rq: RegisterQuery, extra: RowFilter): Promise<CabinetRows<R>> {
  const seeks = cabinetSeeks(spec, shopIds, mode, rq);
  const take = rq.limit + 1;
  const merge = (rows: R[]): R[] => rows.sort((a, b) => b.created_at - a.created_at || b.seq - a.seq).slice(0, take);
  if (extra.sql.length === 0) {
    const all: R[] = [];
    for (const s of seeks) all.push(...(await q.all<R>(s.sql[q.engine], ...s.params)));
    return { rows: merge(all), searchedTo: null };
  }

  const window = Math.max(take, Math.floor(SCAN_ROWS_MAX / seeks.length));
  const ends = cabinetSeeks(spec, shopIds, mode, rq, 'created_at, seq');
  const found: R[] = [];
  let shallowest: Position | null = null;
  for (let i = 0; i < seeks.length; i++) {
    const s = seeks[i];
    const bounds = s.params.slice(0, -1);
    const sql = `SELECT * FROM (${s.sql[q.engine]}) AS stretch WHERE ${extra.sql.join(' AND ')} ORDER BY created_at DESC, seq DESC LIMIT ?`;
    found.push(...(await q.all<R>(sql, ...bounds, window, ...extra.params, take)));
    // The window's last row, read from the index alone: where this seek stopped looking, if it was cut.
    const end = await q.get<Position>(`${ends[i].sql[q.engine]} OFFSET ?`, ...bounds, 1, window - 1);
    if (end && (shallowest === null || newer(end, shallowest))) shallowest = end;
  }
  const cut = shallowest;
  // Below the shallowest cut another seek may hold rows not read yet: they belong to the next search.
  const rows = merge(cut ? found.filter((r) => !newer(cut, r)) : found);
  if (cut === null || rows.length === take) return { rows, searchedTo: null };
  return { rows, searchedTo: { createdAt: cut.created_at, seq: cut.seq } };
}

import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../../money/core/core';
import { ApiError } from '../../platform/http/errors';
import { esc } from '../pay-page/render';
import { formatAmount, type Lang, failureReason } from '../pay-page/i18n';
import { encodeCursor, type Cursor } from '../../money/registers/cursor';
import { REGISTERS as TABLES, registerSeeks, type RegisterSeek, type RegisterTable } from '../../money/registers/plan';
import { parseRegisterQuery, toPage, type RegisterQuery } from '../../money/registers/query';
import { PAYMENT_STATUSES } from '../../money/bank-port/payment';
import { REFUND_STATUSES } from '../../money/refunds/handlers';
import { iso } from '../../platform/util/time';
import { cabinetPage, field, table, options } from './layout';
import { merchantShops, ownShop } from './scope';
import { ct, statusBadge, statusText, when, type CabKey, codeText, maskPhone, paymentStatusCell } from './text';
import type { Reader } from '../../platform/storage/store';

const PAGE_ROWS = 50;
/** Rows read per query while a CSV export streams: small enough to keep the database free between them. */
const CSV_CHUNK_ROWS = 500;

type Row = Record<string, unknown> & { seq: number; created_at: number; shop_id: string; amount: number; status: string };

interface Column {
  label: CabKey;
  num?: boolean;
  cell(r: Row, lang: Lang, shops: Map<string, string>): string;
  csv(r: Row, shops: Map<string, string>): string | number;
  csvName: string;
  /** In the export only, not on the page. */
  csvOnly?: boolean;
}

interface Register {
  name: 'payments' | 'refunds' | 'payouts';
  statuses: readonly string[];
  /** The register filters by order id (only payments carry one). */
  orderId?: boolean;
  columns: Column[];
  /** Adds to a page's rows (at most a page) what other tables know about them, before they are shown or exported. */
  enrich?(q: Reader, rows: Row[]): Promise<void>;
}

/** A refund's payment as a merchant knows it (order id, public number): the refunds table keeps only its UUID. */
async function refundPayments(q: Reader, rows: Row[]): Promise<void> {
  const ids = [...new Set(rows.map((r) => String(r.payment_id)))];
  if (ids.length === 0) return;
  const found = await q.all<{ id: string; public_id: string; order_id: string }>(`SELECT id, public_id, order_id FROM payments WHERE id IN (${ids.map(() => '?').join(', ')})`, ...ids);
  const byId = new Map(found.map((p) => [p.id, p]));
  for (const r of rows) {
    const p = byId.get(String(r.payment_id));
    r.payment_order_id = p?.order_id ?? '';
    r.payment_public_id = p?.public_id ?? '';
  }
}

/** A payout's recipient, never whole: the phone masked and the bank (SBP), the card's last four, the account's last four. */
function recipientOf(r: Row): string {
  let o: Record<string, string> = {};
  try {
    o = JSON.parse(String(r.recipient ?? '{}')) as Record<string, string>;
  } catch {
    // An unreadable echo shows as no recipient rather than failing the page.
  }
  if (r.method === 'payouts_sbp') return [o.phone ? maskPhone(o.phone) : '', r.bank_name ? String(r.bank_name) : ''].filter(Boolean).join(', ');
  if (r.method === 'payouts_card') return r.card_last4 ? `•••• ${String(r.card_last4)}` : '';
  return o.account_number ? `•••• ${o.account_number.slice(-4)}` : '';
}

const money = (lang: Lang, r: Row): string => esc(formatAmount(lang, r.amount, String(r.currency ?? 'RUB')));
const shopCol: Column = { label: 'shop', cell: (r, _l, shops) => esc(shops.get(r.shop_id) ?? r.shop_id), csv: (r, shops) => shops.get(r.shop_id) ?? r.shop_id, csvName: 'shop' };
const createdCol: Column = { label: 'created', cell: (r) => esc(when(r.created_at)), csv: (r) => iso(r.created_at), csvName: 'created_at' };

const REGISTERS: Record<Register['name'], Register> = {
  payments: {
    name: 'payments',
    statuses: PAYMENT_STATUSES,
    orderId: true,
    columns: [
      createdCol,
      { label: 'order', cell: (r) => `<a href="/cabinet/payments/${esc(r.id)}">${esc(r.order_id)}</a>`, csv: (r) => String(r.order_id), csvName: 'order_id' },
      { label: 'amount', num: true, cell: (r, l) => money(l, r), csv: (r) => r.amount, csvName: 'amount' },
      { label: 'status', cell: (r, l) => paymentStatusCell(l, { status: r.status, amount: r.amount, amount_refunded: Number(r.amount_refunded ?? 0), currency: String(r.currency ?? 'RUB') }), csv: (r) => r.status, csvName: 'status' },
      { label: 'method', cell: (r, l) => esc(codeText(l, String(r.method))), csv: (r) => String(r.method), csvName: 'method' },
      shopCol,
      // The operation id at the acquiring bank (live mode), for reconciling with the bank's own register.
      { label: 'payment', cell: () => '', csv: (r) => String((JSON.parse(String(r.metadata ?? '{}')) as Record<string, unknown>).bank_ref ?? ''), csvName: 'bank_ref', csvOnly: true },
      // What refunds returned of the payment so far (minor units), as its status cell shows it.
      { label: 'refund', cell: () => '', csv: (r) => Number(r.amount_refunded ?? 0), csvName: 'refunded_amount', csvOnly: true },
    ],
  },
  refunds: {
    name: 'refunds',
    statuses: REFUND_STATUSES,
    enrich: refundPayments,
    columns: [
      createdCol,
      { label: 'payment', cell: (r) => `<a href="/cabinet/payments/${esc(r.payment_id)}">${esc(String(r.payment_order_id || r.payment_public_id || r.payment_id))}</a>`, csv: (r) => String(r.payment_id), csvName: 'payment_id' },
      { label: 'payment_number', cell: (r) => esc(r.payment_public_id), csv: (r) => String(r.payment_order_id ?? ''), csvName: 'order_id' },
      { label: 'amount', num: true, cell: (r, l) => esc(formatAmount(l, r.amount, 'RUB')), csv: (r) => r.amount, csvName: 'amount' },
      { label: 'status', cell: (r, l) => statusBadge(l, r.status), csv: (r) => r.status, csvName: 'status' },
      { label: 'reason', cell: (r) => esc(r.reason), csv: (r) => String(r.reason), csvName: 'reason' },
      shopCol,
    ],
  },
  payouts: {
    name: 'payouts',
    statuses: ['pending', 'succeeded', 'failed'],
    columns: [
      createdCol,
      { label: 'method', cell: (r, l) => esc(codeText(l, String(r.method))), csv: (r) => String(r.method), csvName: 'method' },
      { label: 'recipient', cell: (r) => esc(recipientOf(r)), csv: (r) => recipientOf(r), csvName: 'recipient' },
      { label: 'amount', num: true, cell: (r, l) => money(l, r), csv: (r) => r.amount, csvName: 'amount' },
      { label: 'status', cell: (r, l) => statusBadge(l, r.status) + (r.fail_reason ? ` <small>${esc(failureReason(l, String(r.fail_reason)))}</small>` : ''), csv: (r) => r.status, csvName: 'status' },
      { label: 'id', cell: (r) => `<span class="mono">${esc(r.id)}</span>`, csv: (r) => String(r.id), csvName: 'id' },
      shopCol,
    ],
  },
};

/** The filter a register page shows, read from its query; `error` says what was refused. */
interface Filter {
  rq: RegisterQuery;
  shopIds: string[];
  shopId: string;
  extra: RowFilter;
  error: string | null;
}

/** Rubles as typed by a person (`1500`, `1 500,50`) to minor units; throws naming the field. */
function rubles(text: string | null, name: string): number | null {
  const t = (text ?? '').replace(/\s/g, '').replace(',', '.');
  if (t === '') return null;
  if (!/^\d{1,10}(\.\d{1,2})?$/.test(t)) throw new ApiError(400, 'bad_request', `Field "${name}" must be an amount in rubles like 1500 or 1500.50, got "${text!.slice(0, 32)}"`, name);
  return Math.round(Number(t) * 100);
}

async function readFilter(ctx: Ctx<Core>, reg: Register): Promise<Filter> {
  const q = ctx.query;
  const shopId = q.get('shop') ?? '';
  const common = new URLSearchParams({ limit: String(PAGE_ROWS) });
  for (const k of ['cursor', 'status', 'from', 'to']) if (q.get(k)) common.set(k, q.get(k)!);
  try {
    const shopIds = shopId ? [(await ownShop(ctx, shopId)).id] : (await merchantShops(ctx)).map((s) => s.id);
    const rq = parseRegisterQuery(common, { statuses: reg.statuses });
    const orderId = reg.orderId ? (q.get('order_id') ?? '').trim().slice(0, 128) : '';
    const [min, max] = [rubles(q.get('amount_min'), 'amount_min'), rubles(q.get('amount_max'), 'amount_max')];
    const extra: RowFilter = { sql: [], params: [] };
    if (orderId) extra.sql.push('order_id = ?'), extra.params.push(orderId);
    if (min !== null) extra.sql.push('amount >= ?'), extra.params.push(min);
    if (max !== null) extra.sql.push('amount <= ?'), extra.params.push(max);
    // A merge of too many shops and statuses is refused here, so the page shows why and the export sends nothing.
    cabinetSeeks(TABLES[reg.name], shopIds, ctx.cabinet!.mode, rq);
    return { rq, shopIds, shopId, extra, error: null };
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 400)) throw err;
    const rq = { ...parseRegisterQuery(new URLSearchParams(), { statuses: reg.statuses }), limit: PAGE_ROWS };
    return { rq, shopIds: [], shopId, extra: { sql: [], params: [] }, error: err.message };
  }
}

/** The rows of one query of the filter (newest first): at most limit + 1, and where a bounded search stopped. */
async function queryRows(ctx: Ctx<Core>, reg: Register, f: Filter, rq: RegisterQuery): Promise<CabinetRows<Row>> {
  if (f.shopIds.length === 0) return { rows: [], searchedTo: null };
  const found = await cabinetRows<Row>(ctx.app.store, TABLES[reg.name], f.shopIds, ctx.cabinet!.mode, rq, f.extra);
  await reg.enrich?.(ctx.app.store, found.rows);
  return found;
}

async function highSeq(ctx: Ctx<Core>, reg: Register): Promise<number> {
  return (await ctx.app.store.get<{ high: number | null }>(`SELECT MAX(seq) AS high FROM ${TABLES[reg.name].table}`))?.high ?? 0;
}

/** The query string of a filter without its cursor, for the export link and the pager. */
function filterQuery(ctx: Ctx<Core>, extra: Record<string, string> = {}): string {
  const q = new URLSearchParams();
  for (const k of ['shop', 'status', 'from', 'to', 'order_id', 'amount_min', 'amount_max']) if (ctx.query.get(k)) q.set(k, ctx.query.get(k)!);
  for (const [k, v] of Object.entries(extra)) q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : '';
}

async function filterForm(ctx: Ctx<Core>, reg: Register, f: Filter): Promise<string> {
  const lang = ctx.cabinet!.lang;
  const q = ctx.query;
  const shops = await merchantShops(ctx);
  const shopSelect = `<select id="f-shop" name="shop">${options([['', ct(lang, 'all_shops')], ...shops.map((s): [string, string] => [s.id, s.name])], f.shopId)}</select>`;
  const statusSelect = `<select id="f-status" name="status">${options([['', ct(lang, 'any_status')], ...reg.statuses.map((s): [string, string] => [s, statusText(lang, s)])], q.get('status') ?? '')}</select>`;
  const input = (id: string, name: string, type: string, extra = '') => `<input id="${id}" name="${name}" type="${type}" value="${esc(q.get(name) ?? '')}"${extra}>`;
  return `<form method="get" action="/cabinet/${reg.name}" class="filters" role="search">
${field('f-shop', ct(lang, 'shop'), shopSelect)}
${field('f-status', ct(lang, 'status'), statusSelect)}
${field('f-from', ct(lang, 'date_from'), input('f-from', 'from', 'date'))}
${field('f-to', ct(lang, 'date_to'), input('f-to', 'to', 'date'))}
${reg.orderId ? field('f-order', ct(lang, 'order_id'), input('f-order', 'order_id', 'text', ' maxlength="128"')) : ''}
${field('f-min', ct(lang, 'amount_from'), input('f-min', 'amount_min', 'text', ' inputmode="decimal"'))}
${field('f-max', ct(lang, 'amount_to'), input('f-max', 'amount_max', 'text', ' inputmode="decimal"'))}
<div class="actions"><button class="btn" type="submit">${esc(ct(lang, 'filter'))}</button><a class="btn secondary" href="/cabinet/${reg.name}">${esc(ct(lang, 'reset_filter'))}</a>
<a class="btn secondary" href="/cabinet/${reg.name}.csv${filterQuery(ctx)}" download>${esc(ct(lang, 'export_csv'))}</a></div>
</form>`;
}

/** GET /cabinet/{payments|refunds|payouts}: the register with its filter and cursor pages. */
export function registerPage(name: Register['name']): (ctx: Ctx<Core>) => Promise<Reply> {
  return async (ctx) => {
    const reg = REGISTERS[name];
    const lang = ctx.cabinet!.lang;
    const f = await readFilter(ctx, reg);
    const shops = new Map((await merchantShops(ctx)).map((s) => [s.id, s.name]));
    const found = await queryRows(ctx, reg, f, f.rq);
    // The table's highest seq goes into the first page's cursor; read only when toPage will ask for it (more rows follow).
    const high = found.rows.length > f.rq.limit && !f.rq.after ? await highSeq(ctx, reg) : 0;
    const page = toPage(found.rows, f.rq, (r) => r, () => high);
    // A filter checked row by row searched a bounded stretch of the register: the next page searches on below it.
    const searchedTo = found.searchedTo && !page.next_cursor ? found.searchedTo : null;
    if (searchedTo) page.next_cursor = encodeCursor({ ...searchedTo, high: f.rq.after ? f.rq.after.high : await highSeq(ctx, reg) });
    const shown = reg.columns.filter((c) => !c.csvOnly);
    const heads = shown.map((c) => ({ label: ct(lang, c.label), num: c.num }));
    const list = table(heads, page.items.map((r) => shown.map((c) => c.cell(r, lang, shops))), ct(lang, 'nothing'));
    const pager = [
      ctx.query.get('cursor') ? `<a class="btn secondary" href="/cabinet/${name}${filterQuery(ctx)}">${esc(ct(lang, 'first_page'))}</a>` : '',
      page.next_cursor ? `<a class="btn secondary" rel="next" href="/cabinet/${name}${filterQuery(ctx, { cursor: page.next_cursor })}">${esc(ct(lang, 'next_page'))}</a>` : '',
    ].join('');
    const body = `<h1>${esc(ct(lang, name))}</h1>
${f.error ? `<p class="alert" role="alert">${esc(f.error)}</p>` : ''}
${await filterForm(ctx, reg, f)}
${list}
${searchedTo ? `<p class="muted" role="status">${esc(ct(lang, 'searched_to').replace('{n}', SCAN_ROWS_MAX.toLocaleString(lang === 'ru' ? 'ru-RU' : 'en-GB')).replace('{when}', when(searchedTo.createdAt)))}</p>` : ''}
<div class="pager">${pager}</div>`;
    return cabinetPage(ctx, { title: ct(lang, name), active: name, body, status: f.error ? 400 : 200 });
  };
}

// Where a spreadsheet may start a cell: the field's start or after a separator (comma, semicolon, tab, pipe, line break), past
// spaces or quotes. A cell beginning with = + - @ (or full-width forms, tab, CR) runs as a formula; a `'` before makes it text.
const FORMULA_START = /(^|[,;\t|\r\n])([\s"']*)(?=[=+\-@\uFF1D\uFF0B\uFF0D\uFF20\t\r])/g;

/** A CSV field: formulas defused wherever a cell may begin (FORMULA_START); quoted when it holds a separator, quote or line break. */
function csvField(v: string | number): string {
  if (typeof v === 'number') return String(v);
  const safe = v.replace(FORMULA_START, "$1$2'");
  return /[",;\t\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** GET /cabinet/{payments|refunds|payouts}.csv: every row of the page's filter, streamed in keyset chunks (no whole file in memory). */
export function registerCsv(name: Register['name']): (ctx: Ctx<Core>) => Promise<Reply> {
  return async (ctx) => {
    const reg = REGISTERS[name];
    const f = await readFilter(ctx, reg);
    if (f.error) throw new ApiError(400, 'bad_request', f.error);
    const shops = new Map((await merchantShops(ctx)).map((s) => [s.id, s.name]));
    const res = ctx.res;
    const day = new Date(ctx.app.clocks.real()).toISOString().slice(0, 10);
    const disposition = `attachment; filename="${name}-${ctx.cabinet!.mode}-${day}.csv"`;
    res.writeHead(200, { 'Content-Type': 'text/csv; charset=utf-8', 'Content-Disposition': disposition, 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' });
    res.write(reg.columns.map((c) => c.csvName).join(',') + '\r\n');
    let rq: RegisterQuery = { ...f.rq, after: null, limit: CSV_CHUNK_ROWS };
    const high = await highSeq(ctx, reg);
    for (;;) {
      const { rows, searchedTo } = await queryRows(ctx, reg, f, rq);
      const chunk = rows.slice(0, CSV_CHUNK_ROWS);
      const text = chunk.map((r) => reg.columns.map((c) => csvField(c.csv(r, shops))).join(',') + '\r\n').join('');
      if (text && !res.write(text)) await new Promise<void>((resolve) => res.once('drain', resolve));
      const last = rows.length > CSV_CHUNK_ROWS ? chunk[chunk.length - 1] : null;
      const next = last ? { createdAt: last.created_at, seq: last.seq } : searchedTo;
      if (!next || res.destroyed) break;
      rq = { ...rq, after: { ...next, high } };
      // Each chunk is a bounded query; between two of them the server answers everyone else.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    res.end();
    return { raw: true };
  };
}

/** Most index seeks one cabinet query merges: one per shop and status value, each of at most a page of rows. */
const CABINET_SEEKS_MAX = 64;
/** Most rows one cabinet query reads for a filter no index serves (order id, amounts); a page not full by then offers to search on. */
export const SCAN_ROWS_MAX = 20_000;

/** Conditions no register index serves, checked on each row of a bounded window of the register. */
type RowFilter = { sql: string[]; params: unknown[] };

/** A page's rows (at most limit + 1, newest first) and, when a window ran out first, where the search stopped. */
interface CabinetRows<R> {
  rows: R[];
  /** The oldest position searched (rows from it up are all on this page); null when the search was complete. */
  searchedTo: Cursor | null;
}

type Position = { created_at: number; seq: number };

function newer(a: Position, b: Position): boolean {
  return a.created_at > b.created_at || (a.created_at === b.created_at && a.seq > b.seq);
}

/** The index seeks of one cabinet query, one per shop and status value; more than CABINET_SEEKS_MAX is a 400 naming `shop`. */
function cabinetSeeks(spec: RegisterTable, shopIds: readonly string[], mode: string, rq: RegisterQuery, columns = '*'): RegisterSeek[] {
  const seeks = shopIds.flatMap((id) => registerSeeks(spec, id, [mode], { status: rq.statuses ?? undefined }, rq, columns));
  if (seeks.length > CABINET_SEEKS_MAX) {
    throw new ApiError(400, 'bad_request', `Cannot list ${spec.table} of ${shopIds.length} shops with this many statuses at once: choose one shop or fewer statuses`, 'shop');
  }
  return seeks;
}

// A register page over a merchant's shops, newest first: one index seek per shop and status, merged (≤ seeks × (limit + 1)
// rows). With `extra` each seek filters a window of SCAN_ROWS_MAX / seeks rows; a page cut short holds the matches down to
// the shallowest window end (`searchedTo`).
async function cabinetRows<R extends Position>(q: Reader, spec: RegisterTable, shopIds: readonly string[], mode: string, rq: RegisterQuery, extra: RowFilter): Promise<CabinetRows<R>> {
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

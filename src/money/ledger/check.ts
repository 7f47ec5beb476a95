import type { Reader, Store } from '../../platform/storage/store';
import { groupConcat } from '../../platform/storage/dialect';
import { ACCOUNTS, MOVEMENTS, type Movement } from './ledger';

/** One book as the check found it: sums of its postings. */
interface BookSummary {
  merchant_id: string; shop_id: string; mode: string; balance: number; available: number; reserved: number;
  entries: number;
}

/** The outcome of `kopek ledger check`: every book, and every broken invariant in words. */
export interface CheckResult {
  ok: boolean;
  books: BookSummary[];
  problems: string[];
}

/** Most problems listed; a badly broken database would otherwise print without end. */
const MAX_PROBLEMS = 200;

/**
 * Over one snapshot that takes no write lock: each entry's postings balance and match its amount; stored balances equal
 * the sums; no reserve went negative nor any payout or refund overdrew `available`; every source has the movements its status calls for.
 */
export async function checkLedger(store: Store): Promise<CheckResult> {
  return store.snapshot(async (q) => {
    const problems: string[] = [];
    const note = (p: string) => {
      if (problems.length < MAX_PROBLEMS) problems.push(p);
    };
    await checkEntries(q, note);
    const books = await checkBooks(q, note);
    await checkSources(q, note);
    return { ok: problems.length === 0, books, problems };
  });
}

async function checkEntries(q: Reader, note: (p: string) => void): Promise<void> {
  const rows = await q.all<{
    id: number; movement: string; source_id: string; amount: number; shop_id: string; mode: string;
    n: number; sum: number; gain: number; foreign_rows: number | null; legs: string | null;
  }>(
    `SELECT e.id, e.movement, e.source_id, e.amount, e.shop_id, e.mode, COUNT(p.id) AS n, COALESCE(SUM(p.amount), 0) AS sum,
              COALESCE(SUM(CASE WHEN p.amount > 0 THEN p.amount END), 0) AS gain,
              SUM(CASE WHEN p.shop_id != e.shop_id OR p.mode != e.mode THEN 1 ELSE 0 END) AS foreign_rows,
              ${groupConcat(q, `p.account || ':' || p.amount`)} AS legs
       FROM ledger_entries e LEFT JOIN ledger_postings p ON p.entry_id = e.id
       GROUP BY e.id ORDER BY e.id`,
  );
  for (const e of rows) {
    const what = `entry ${e.id} (${e.movement} of "${e.source_id}")`;
    const m = MOVEMENTS[e.movement as Movement];
    if (!m) note(`${what}: unknown movement`);
    if (e.n < 2) note(`${what}: has ${e.n} postings, needs at least 2`);
    if (e.sum !== 0) note(`${what}: postings sum to ${e.sum}, not 0`);
    if (e.gain !== e.amount) note(`${what}: postings move ${e.gain}, the entry says ${e.amount}`);
    if (e.foreign_rows) note(`${what}: ${e.foreign_rows} postings belong to another book`);
    if (m && e.n === 2 && e.legs !== `${m.from}:${-e.amount},${m.to}:${e.amount}` && e.legs !== `${m.to}:${e.amount},${m.from}:${-e.amount}`) {
      note(`${what}: postings ${e.legs} are not ${m.from} → ${m.to}`);
    }
  }
  const orphans = (await q.get<{ n: number }>('SELECT COUNT(*) AS n FROM ledger_postings WHERE entry_id NOT IN (SELECT id FROM ledger_entries)'))!;
  if (orphans.n > 0) note(`${orphans.n} postings belong to no entry`);
}

async function checkBooks(q: Reader, note: (p: string) => void): Promise<BookSummary[]> {
  // Stored running balances against the sums of the postings, account by account, both ways round.
  const mismatches = await q.all<{ shop_id: string; mode: string; account: string; stored: number | null; summed: number }>(
    `WITH sums AS (SELECT shop_id, mode, account, SUM(amount) AS s FROM ledger_postings GROUP BY shop_id, mode, account)
       SELECT b.shop_id, b.mode, b.account, b.balance AS stored, COALESCE(s.s, 0) AS summed
       FROM ledger_balances b LEFT JOIN sums s USING (shop_id, mode, account) WHERE b.balance != COALESCE(s.s, 0)
       UNION ALL
       SELECT s.shop_id, s.mode, s.account, NULL, s.s FROM sums s
       WHERE NOT EXISTS (SELECT 1 FROM ledger_balances b WHERE b.shop_id = s.shop_id AND b.mode = s.mode AND b.account = s.account)`,
  );
  for (const r of mismatches) {
    note(`book ${r.shop_id}/${r.mode}: ${r.account} stored ${r.stored ?? '(missing)'} but its postings sum to ${r.summed}`);
  }
  const wrongMerchant = await q.all<{ id: number; shop_id: string }>(
    `SELECT e.id, e.shop_id FROM ledger_entries e JOIN shops s ON s.id = e.shop_id WHERE s.merchant_id != e.merchant_id LIMIT 20`,
  );
  for (const r of wrongMerchant) note(`entry ${r.id}: merchant differs from the merchant of shop ${r.shop_id}`);
  return replayBooks(q, note);
}

/** Walk every book's postings in order: reserves must never dip below 0, nor may a payout or a refund leave available below 0. */
async function replayBooks(q: Reader, note: (p: string) => void): Promise<BookSummary[]> {
  const rows = await q.all<{ id: number; merchant_id: string; shop_id: string; mode: string; movement: string; source_id: string; account: string; amount: number }>(
    `SELECT e.id, e.merchant_id, e.shop_id, e.mode, e.movement, e.source_id, p.account, p.amount
       FROM ledger_entries e JOIN ledger_postings p ON p.entry_id = e.id
       ORDER BY e.shop_id, e.mode, e.id, p.id`,
  );
  const books: BookSummary[] = [];
  let cur: BookSummary | null = null;
  let lastEntry = -1;
  for (const r of rows) {
    if (!cur || cur.shop_id !== r.shop_id || cur.mode !== r.mode) {
      cur = { merchant_id: r.merchant_id, shop_id: r.shop_id, mode: r.mode, balance: 0, available: 0, reserved: 0, entries: 0 };
      books.push(cur);
    }
    if (r.id !== lastEntry) {
      cur.entries++;
      lastEntry = r.id;
    }
    if (r.account === ACCOUNTS.available) cur.available += r.amount;
    else if (r.account === ACCOUNTS.reserved) cur.reserved += r.amount;
    else if (!r.account.startsWith('external:')) note(`entry ${r.id}: unknown account "${r.account}"`);
    cur.balance = cur.available + cur.reserved;
    if (r.account === ACCOUNTS.reserved && r.amount < 0 && cur.reserved < 0) {
      note(`book ${r.shop_id}/${r.mode}: reserves went to ${cur.reserved} at entry ${r.id} (${r.movement} of "${r.source_id}")`);
    }
    // Only reserves take money from available, and posting refuses either one (422) before it overdraws.
    if (r.account === ACCOUNTS.available && r.amount < 0 && cur.available < 0) {
      const what = r.movement === 'payout_reserved' ? 'payout' : r.movement === 'refund_reserved' ? 'refund' : r.movement;
      note(`book ${r.shop_id}/${r.mode}: ${what} "${r.source_id}" overdrew available to ${cur.available} at entry ${r.id}`);
    }
  }
  return books;
}

type MovementsOf = Map<string, Map<string, number>>;

/** Entries of some movements, by source id: source → movement → amount. */
async function movementsOf(q: Reader, movements: Movement[]): Promise<MovementsOf> {
  const out: MovementsOf = new Map();
  const rows = await q.all<{ source_id: string; movement: string; amount: number }>(
    `SELECT source_id, movement, amount FROM ledger_entries WHERE movement IN (${movements.map(() => '?').join(',')})`,
    ...movements,
  );
  for (const r of rows) {
    let m = out.get(r.source_id);
    if (!m) out.set(r.source_id, (m = new Map()));
    m.set(r.movement, r.amount);
  }
  return out;
}

type Posted = Map<string, number> | undefined;

/** Compare what a source posted with what its status calls for (movement → must it exist). */
function expect(note: (p: string) => void, what: string, amount: number, posted: Posted, want: Record<string, boolean>): void {
  for (const [movement, needed] of Object.entries(want)) {
    const got = posted?.get(movement);
    if (needed && got === undefined) note(`${what}: missing ${movement}`);
    else if (!needed && got !== undefined) note(`${what}: has ${movement} it should not have`);
    else if (got !== undefined && got !== amount) note(`${what}: ${movement} posted ${got}, its amount is ${amount}`);
  }
}

/** A table whose rows move money: they post the movements named after it, as a row's status `want`s. */
interface Source {
  table: string;
  verb: string;
  want(r: { status: string }, posted: Posted): Record<string, boolean>;
}

/** A refund refused at creation never reserved; one that reserved and failed must have released. */
const SOURCES: readonly Source[] = [
  {
    table: 'payouts', verb: 'moves',
    want: (p) => ({ payout_reserved: true, payout_settled: p.status === 'succeeded', payout_released: p.status === 'failed' }),
  },
  {
    table: 'payments', verb: 'credits',
    want: (p) => ({ payment_succeeded: p.status === 'succeeded' || p.status === 'refunded' }),
  },
  {
    table: 'refunds', verb: 'moves',
    want(r, posted) {
      const reserved = r.status !== 'failed' || posted?.has('refund_reserved') === true;
      return { refund_reserved: reserved, refund_settled: r.status === 'succeeded', refund_released: r.status === 'failed' && reserved };
    },
  },
];

const MOVEMENT_NAMES = Object.keys(MOVEMENTS) as Movement[];

async function checkSources(q: Reader, note: (p: string) => void): Promise<void> {
  for (const src of SOURCES) {
    const noun = src.table.slice(0, -1);
    const posted = await movementsOf(q, MOVEMENT_NAMES.filter((m) => m.startsWith(`${noun}_`)));
    for (const r of await q.all<{ id: string; amount: number; status: string }>(`SELECT id, amount, status FROM ${src.table}`)) {
      const mine = posted.get(r.id);
      expect(note, `${noun} "${r.id}" (${r.status})`, r.amount, mine, src.want(r, mine));
      posted.delete(r.id);
    }
    for (const id of posted.keys()) note(`ledger ${src.verb} ${noun} "${id}", which does not exist`);
  }
}

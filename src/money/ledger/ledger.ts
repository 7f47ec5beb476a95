import type { Reader, Tx } from '../../platform/storage/store';
import type { Mode } from '../../platform/clock';
import type { Ctx, Reply } from '../../platform/http/types';
import { ApiError } from '../../platform/http/errors';

/** The accounts of one book (a shop's test or live money). Shop accounts gain on a positive posting. */
export const ACCOUNTS = {
  available: 'shop:available',
  reserved: 'shop:reserved',
  acquiring: 'external:acquiring',
  refunds: 'external:refunds',
  payouts: 'external:payouts',
} as const;

type Account = (typeof ACCOUNTS)[keyof typeof ACCOUNTS];

/** Each movement as a transfer (`from` loses, `to` gains); `source`: the table whose row's seq keys its entry, once per source. */
export const MOVEMENTS = {
  payment_succeeded: { from: ACCOUNTS.acquiring, to: ACCOUNTS.available, source: 'payments' },
  refund_reserved: { from: ACCOUNTS.available, to: ACCOUNTS.reserved, source: 'refunds' },
  refund_settled: { from: ACCOUNTS.reserved, to: ACCOUNTS.refunds, source: 'refunds' },
  refund_released: { from: ACCOUNTS.reserved, to: ACCOUNTS.available, source: 'refunds' },
  payout_reserved: { from: ACCOUNTS.available, to: ACCOUNTS.reserved, source: 'payouts' },
  payout_settled: { from: ACCOUNTS.reserved, to: ACCOUNTS.payouts, source: 'payouts' },
  payout_released: { from: ACCOUNTS.reserved, to: ACCOUNTS.available, source: 'payouts' },
} as const satisfies Record<string, { from: Account; to: Account; source: 'payments' | 'refunds' | 'payouts' }>;

export type Movement = keyof typeof MOVEMENTS;

/** Which book a movement is written in. */
export interface Book {
  merchantId: string;
  shopId: string;
  mode: Mode;
}

/** Movements after which `shop:available` must not be negative: money out never overdraws the shop. */
const MUST_LEAVE_AVAILABLE = new Set<Movement>(['payout_reserved', 'refund_reserved']);

/**
 * One entry, two postings that sum to zero, and the running balances. A movement posts once per source: a replay
 * returns false and changes nothing; a broken invariant throws. `sourceSeq`: the source row's seq, when held.
 */
export async function post(tx: Tx, book: Book, movement: Movement, sourceId: string, amount: number, at: number, sourceSeq?: number): Promise<boolean> {
  if (!Number.isSafeInteger(amount) || amount <= 0) {
    throw new Error(`cannot post ${movement} for "${sourceId}": amount ${amount} is not a positive integer`);
  }
  // Without the seq given, the statement reads it (coalesce stops at its first non-NULL argument, so a given seq
  // costs no read); a source that does not exist leaves it NULL, which NOT NULL refuses.
  const entry = await tx.run(
    `INSERT INTO ledger_entries (merchant_id, shop_id, mode, movement, source_id, amount, at, source_seq)
       VALUES (?, ?, ?, ?, ?, ?, ?, coalesce(?, (SELECT seq FROM ${MOVEMENTS[movement].source} WHERE id = ?))) ON CONFLICT (movement, source_seq) DO NOTHING RETURNING id`,
    book.merchantId, book.shopId, book.mode, movement, sourceId, amount, at, sourceSeq ?? null, sourceId,
  );
  if (entry.changes === 0) return false;
  // Double entry: what one account loses the other gains; both postings in one statement, both balances in another,
  // side by side (the balances need no entry id). A write that returns rows is read through `all`.
  const { from, to } = MOVEMENTS[movement];
  const e = entry.lastInsertRowid;
  const [, balances] = await Promise.all([
    tx.run(
      'INSERT INTO ledger_postings (entry_id, shop_id, mode, account, amount) VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?)',
      e, book.shopId, book.mode, from, -amount,
      e, book.shopId, book.mode, to, amount,
    ),
    tx.all<{ account: Account; balance: number }>(
      `INSERT INTO ledger_balances (shop_id, mode, account, merchant_id, balance) VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?)
         ON CONFLICT (shop_id, mode, account) DO UPDATE SET balance = ledger_balances.balance + excluded.balance RETURNING account, balance`,
      book.shopId, book.mode, from, book.merchantId, -amount, book.shopId, book.mode, to, book.merchantId, amount,
    ),
  ]);
  let reserved: number | undefined;
  let available: number | undefined;
  for (const b of balances) {
    if (b.account === ACCOUNTS.reserved) reserved = b.balance;
    else if (b.account === ACCOUNTS.available) available = b.balance;
  }
  if (reserved !== undefined && reserved < 0) {
    throw new Error(`cannot post ${movement} for "${sourceId}": reserves would be ${reserved}, below 0`);
  }
  if (MUST_LEAVE_AVAILABLE.has(movement) && available !== undefined && available < 0) {
    // A 422 the caller's request answers with; the transaction rolls back, so nothing was reserved.
    const what = movement === 'refund_reserved' ? 'refund' : 'pay out';
    throw new ApiError(422, 'insufficient_funds', `Cannot ${what} ${amount}: it exceeds the available balance ${available + amount}`, 'amount');
  }
  return true;
}

export async function postedAmount(q: Reader, movement: Movement, sourceId: string): Promise<number | undefined> {
  const row = await q.get<{ amount: number }>(
    `SELECT amount FROM ledger_entries WHERE movement = ? AND source_seq = (SELECT seq FROM ${MOVEMENTS[movement].source} WHERE id = ?)`,
    movement, sourceId,
  );
  return row?.amount;
}

/** A shop's book in one mode: settled money and what of it is free for payouts. */
interface ShopBalance { shop_id: string; shop_name: string; balance: number; available: number }

/** What a shop may pay out now in a mode: its available balance, 0 when nothing was ever posted to it. */
export async function shopAvailable(q: Reader, shopId: string, mode: Mode): Promise<number> {
  const row = await q.get<{ balance: number }>('SELECT balance FROM ledger_balances WHERE shop_id = ? AND mode = ? AND account = ?', shopId, mode, ACCOUNTS.available);
  return row?.balance ?? 0;
}

/** Every shop of a merchant (oldest first) with its balance and available in a mode; shops without postings show 0. */
export async function merchantBalances(q: Reader, merchantId: string, mode: Mode): Promise<ShopBalance[]> {
  return q.all<ShopBalance>(
    `SELECT s.id AS shop_id, s.name AS shop_name,
            COALESCE(SUM(CASE WHEN b.account IN (?, ?) THEN b.balance END), 0) AS balance,
            COALESCE(SUM(CASE WHEN b.account = ? THEN b.balance END), 0) AS available
     FROM shops s LEFT JOIN ledger_balances b ON b.shop_id = s.id AND b.mode = ?
     WHERE s.merchant_id = ?
     GROUP BY s.id ORDER BY s.created_at, s.id`,
    ACCOUNTS.available, ACCOUNTS.reserved, ACCOUNTS.available, mode, merchantId,
  );
}

/** GET /v1/public/balance: over all the merchant's shops, each with its own `available` (a payout draws on it alone). */
export async function getBalance(ctx: Ctx<{ readonly store: Reader }>): Promise<Reply> {
  const a = ctx.auth!;
  const shops = await merchantBalances(ctx.app.store, a.merchantId, a.mode);
  const balance = shops.reduce((sum, s) => sum + s.balance, 0);
  const available = shops.reduce((sum, s) => sum + s.available, 0);
  return { body: { balance, available, currency: 'RUB', shops } };
}

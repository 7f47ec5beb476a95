import type { Reader, Tx } from '../../platform/storage/store';
import type { Mode } from '../../platform/clock';
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

/** Every money movement the ledger knows, as the transfer it makes: `from` loses the amount, `to` gains it. */
export const MOVEMENTS = {
  payment_succeeded: { from: ACCOUNTS.acquiring, to: ACCOUNTS.available },
  refund_reserved: { from: ACCOUNTS.available, to: ACCOUNTS.reserved },
  refund_settled: { from: ACCOUNTS.reserved, to: ACCOUNTS.refunds },
  refund_released: { from: ACCOUNTS.reserved, to: ACCOUNTS.available },
  payout_reserved: { from: ACCOUNTS.available, to: ACCOUNTS.reserved },
  payout_settled: { from: ACCOUNTS.reserved, to: ACCOUNTS.payouts },
  payout_released: { from: ACCOUNTS.reserved, to: ACCOUNTS.available },
} as const satisfies Record<string, { from: Account; to: Account }>;

export type Movement = keyof typeof MOVEMENTS;

/** Which book a movement is written in. */
export interface Book {
  merchantId: string;
  shopId: string;
  mode: Mode;
}

/** The table of a movement's source, whose seq keys the movement's entry (once per source). */
function sourceTable(movement: Movement): 'payments' | 'refunds' | 'payouts' {
  return movement.startsWith('payment') ? 'payments' : movement.startsWith('refund') ? 'refunds' : 'payouts';
}

/** Movements after which `shop:available` must not be negative: money out never overdraws the shop. */
const MUST_LEAVE_AVAILABLE = new Set<Movement>(['payout_reserved', 'refund_reserved']);

/**
 * Post a movement of `amount` for `sourceId` in the caller's transaction: one entry, two postings that
 * sum to zero, and the running balances. A movement posts once per source: a replay returns false and
 * changes nothing. Throws (rolling the caller back) when an invariant would break. `sourceSeq` is the source
 * row's seq when the caller holds the row; otherwise the statement reads it by `sourceId`.
 */
export async function post(tx: Tx, book: Book, movement: Movement, sourceId: string, amount: number, at: number, sourceSeq?: number): Promise<boolean> {
  if (!Number.isSafeInteger(amount) || amount <= 0) {
    throw new Error(`cannot post ${movement} for "${sourceId}": amount ${amount} is not a positive integer`);
  }
  // Without the seq given, the statement reads it (coalesce stops at its first non-NULL argument, so a given seq
  // costs no read); a source that does not exist leaves it NULL, which NOT NULL refuses.
  const entry = await tx.run(
    `INSERT INTO ledger_entries (merchant_id, shop_id, mode, movement, source_id, amount, at, source_seq)
       VALUES (?, ?, ?, ?, ?, ?, ?, coalesce(?, (SELECT seq FROM ${sourceTable(movement)} WHERE id = ?))) ON CONFLICT (movement, source_seq) DO NOTHING RETURNING id`,
    book.merchantId, book.shopId, book.mode, movement, sourceId, amount, at, sourceSeq ?? null, sourceId,
  );
  if (entry.changes === 0) return false;
  // Double entry: what one account loses the other gains; both postings in one statement, both balances in another.
  const { from, to } = MOVEMENTS[movement];
  const e = entry.lastInsertRowid;
  await tx.run(
    'INSERT INTO ledger_postings (entry_id, shop_id, mode, account, amount) VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?)',
    e, book.shopId, book.mode, from, -amount,
    e, book.shopId, book.mode, to, amount,
  );
  // A write that returns rows: read through `all`, in the caller's transaction like every other statement here.
  const balances = await tx.all<{ account: Account; balance: number }>(
    `INSERT INTO ledger_balances (shop_id, mode, account, merchant_id, balance) VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?)
       ON CONFLICT (shop_id, mode, account) DO UPDATE SET balance = ledger_balances.balance + excluded.balance RETURNING account, balance`,
    book.shopId, book.mode, from, book.merchantId, -amount, book.shopId, book.mode, to, book.merchantId, amount,
  );
  const after = new Map<Account, number>(balances.map((b) => [b.account, b.balance]));
  const reserved = after.get(ACCOUNTS.reserved);
  if (reserved !== undefined && reserved < 0) {
    throw new Error(`cannot post ${movement} for "${sourceId}": reserves would be ${reserved}, below 0`);
  }
  const available = after.get(ACCOUNTS.available);
  if (MUST_LEAVE_AVAILABLE.has(movement) && available !== undefined && available < 0) {
    // A 422 the caller's request answers with; the transaction rolls back, so nothing was reserved.
    const what = movement === 'refund_reserved' ? 'refund' : 'pay out';
    throw new ApiError(422, 'insufficient_funds', `Cannot ${what} ${amount}: it exceeds the available balance ${available + amount}`, 'amount');
  }
  return true;
}

/** The amount a movement posted for a source, or undefined when it has not been posted. */
export async function postedAmount(q: Reader, movement: Movement, sourceId: string): Promise<number | undefined> {
  const row = await q.get<{ amount: number }>(
    `SELECT amount FROM ledger_entries WHERE movement = ? AND source_seq = (SELECT seq FROM ${sourceTable(movement)} WHERE id = ?)`,
    movement, sourceId,
  );
  return row?.amount;
}

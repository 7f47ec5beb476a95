import type Database from 'better-sqlite3';
import { cachedStmt } from '../db/statements';
import type { Mode } from '../scheduler/clock';
import { ACCOUNTS } from './ledger';

/** A shop's book in one mode: settled money and what of it is free for payouts. */
export interface ShopBalance {
  shop_id: string;
  shop_name: string;
  balance: number;
  available: number;
}

/** The running balance of one account of a book; 0 when nothing was ever posted to it. */
export function accountBalance(db: Database.Database, shopId: string, mode: Mode, account: string): number {
  const row = cachedStmt(db, 'SELECT balance FROM ledger_balances WHERE shop_id = ? AND mode = ? AND account = ?').get(shopId, mode, account) as
    | { balance: number }
    | undefined;
  return row?.balance ?? 0;
}

/** What a shop may pay out now in a mode. */
export function shopAvailable(db: Database.Database, shopId: string, mode: Mode): number {
  return accountBalance(db, shopId, mode, ACCOUNTS.available);
}

/** Every shop of a merchant (oldest first) with its balance and available in a mode; shops without postings show 0. */
export function merchantBalances(db: Database.Database, merchantId: string, mode: Mode): ShopBalance[] {
  return cachedStmt(
    db,
    `SELECT s.id AS shop_id, s.name AS shop_name,
            COALESCE(SUM(CASE WHEN b.account IN (?, ?) THEN b.balance END), 0) AS balance,
            COALESCE(SUM(CASE WHEN b.account = ? THEN b.balance END), 0) AS available
     FROM shops s LEFT JOIN ledger_balances b ON b.shop_id = s.id AND b.mode = ?
     WHERE s.merchant_id = ?
     GROUP BY s.id ORDER BY s.created_at, s.id`,
  ).all(ACCOUNTS.available, ACCOUNTS.reserved, ACCOUNTS.available, mode, merchantId) as ShopBalance[];
}

import type { Reader } from '../../platform/storage/store';
import type { Mode } from '../../platform/clock';
import { ACCOUNTS } from './ledger';

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

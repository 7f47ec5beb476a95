import type { Reader, Tx } from '../../platform/storage/store';
import type { Mode } from '../../platform/clock';
import type { PayoutMethod } from './fields';

export interface PayoutRow {
  seq: number; id: string; merchant_id: string; shop_id: string; mode: Mode; amount: number; currency: string;
  method: PayoutMethod; status: 'pending' | 'succeeded' | 'failed';
  /** JSON object of the recipient fields; never a card number. */
  recipient: string; card_last4: string | null; bank_name: string | null; bank_ref: string; fail_reason: string;
  sim_outcome: 'succeeded' | 'failed' | null; sim_failure_code: string | null; created_at: number;
  completed_at: number | null;
}

export async function insertPayout(tx: Tx, p: Omit<PayoutRow, 'seq'>): Promise<void> {
  await tx.run(
    `INSERT INTO payouts (id, merchant_id, shop_id, mode, amount, currency, method, status, recipient, card_last4, bank_name,
                            bank_ref, fail_reason, sim_outcome, sim_failure_code, created_at, completed_at)
       VALUES (@id, @merchant_id, @shop_id, @mode, @amount, @currency, @method, @status, @recipient, @card_last4, @bank_name,
               @bank_ref, @fail_reason, @sim_outcome, @sim_failure_code, @created_at, @completed_at)`,
    p,
  );
}

/** Of any shop: callers check the shop and mode. */
export async function getPayout(q: Reader, id: string): Promise<PayoutRow | undefined> {
  return q.get<PayoutRow>('SELECT * FROM payouts WHERE id = ?', id);
}

/** False when it was no longer pending. */
export async function finishPayoutRow(tx: Tx, id: string, status: 'succeeded' | 'failed', failReason: string, at: number): Promise<boolean> {
  return (await tx.run(`UPDATE payouts SET status = ?, fail_reason = ?, completed_at = ? WHERE id = ? AND status = 'pending'`, status, failReason, at, id)).changes === 1;
}

/**
 * Live card payouts still pending with no provider id (bank_ref empty): after a restart their card number,
 * kept in memory only, is gone, so kopek can neither send them nor repeat the send. Each settles when the
 * provider's notification names it (kopek's payout id travels in its metadata); otherwise the operator
 * decides. `shopId`: one shop's, else every shop's. Newest last, at most `limit`.
 */
export async function payoutsNeedingDecision(q: Reader, shopId?: string, limit = 50) {
  return q.all<Pick<PayoutRow, 'id' | 'shop_id' | 'amount' | 'card_last4' | 'created_at'>>(
    `SELECT id, shop_id, amount, card_last4, created_at FROM payouts
      WHERE mode = 'live' AND method = 'payouts_card' AND status = 'pending' AND bank_ref = ''${shopId ? ' AND shop_id = ?' : ''}
      ORDER BY created_at, id LIMIT ?`,
    ...(shopId ? [shopId, limit] : [limit]),
  );
}

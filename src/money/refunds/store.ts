import type { Reader, Tx } from '../../platform/storage/store';
import type { RefundRow } from '../bank-port/refund';

export async function getRefund(q: Reader, id: string): Promise<RefundRow | undefined> {
  return q.get<RefundRow>('SELECT * FROM refunds WHERE id = ?', id);
}

export async function heldByRefunds(q: Reader, paymentId: string): Promise<number> {
  const sql = `SELECT COALESCE(SUM(amount), 0) AS held FROM refunds WHERE payment_id = ? AND status IN ('pending', 'succeeded')`;
  return (await q.get<{ held: number }>(sql, paymentId))!.held;
}

/** Insert a pending refund and its audit line (who asked, how much, why). */
export async function insertRefund(
  tx: Tx,
  r: Pick<RefundRow, 'id' | 'payment_id' | 'merchant_id' | 'shop_id' | 'mode' | 'amount' | 'reason' | 'created_at'>,
  keyId: string,
): Promise<void> {
  await tx.run(
    `INSERT INTO refunds (id, payment_id, merchant_id, shop_id, mode, amount, reason, status, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?)`,
    r.id, r.payment_id, r.merchant_id, r.shop_id, r.mode, r.amount, r.reason, r.created_at,
  );
  await tx.run(
    `INSERT INTO refund_audit (refund_id, payment_id, shop_id, mode, key_id, amount, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    r.id, r.payment_id, r.shop_id, r.mode, keyId, r.amount, r.reason, r.created_at,
  );
}

/** Write a pending refund's final status; false, and nothing written, when it is no longer pending. */
export async function finishRefundRow(tx: Tx, id: string, status: 'succeeded' | 'failed', failureCode: string, at: number): Promise<boolean> {
  return (await tx.run(`UPDATE refunds SET status = ?, failure_code = ?, completed_at = ? WHERE id = ? AND status = 'pending'`, status, failureCode, at, id)).changes === 1;
}

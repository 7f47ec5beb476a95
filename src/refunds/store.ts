import type { App } from '../app-types';
import type { Tx } from '../db/store';
import type { RefundRow } from '../payments/store';

/** A refund row by id. */
export function getRefund(app: App, id: string): RefundRow | undefined {
  return app.store.stmt('SELECT * FROM refunds WHERE id = ?').get(id) as RefundRow | undefined;
}

/** What succeeded and pending refunds of a payment hold. */
export function heldByRefunds(app: App, paymentId: string): number {
  const row = app.store
    .stmt(`SELECT COALESCE(SUM(amount), 0) AS held FROM refunds WHERE payment_id = ? AND status IN ('pending', 'succeeded')`)
    .get(paymentId) as { held: number };
  return row.held;
}

/** Insert a pending refund and its audit line (who asked, how much, why). */
export function insertRefund(
  tx: Tx,
  r: Pick<RefundRow, 'id' | 'payment_id' | 'merchant_id' | 'shop_id' | 'mode' | 'amount' | 'reason' | 'created_at'>,
  keyId: string,
): void {
  tx
    .stmt(
      `INSERT INTO refunds (id, payment_id, merchant_id, shop_id, mode, amount, reason, status, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?)`,
    )
    .run(r.id, r.payment_id, r.merchant_id, r.shop_id, r.mode, r.amount, r.reason, r.created_at);
  tx
    .stmt(`INSERT INTO refund_audit (refund_id, payment_id, shop_id, mode, key_id, amount, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
    .run(r.id, r.payment_id, r.shop_id, r.mode, keyId, r.amount, r.reason, r.created_at);
}

/** Write a refund's final status. */
export function finishRefundRow(tx: Tx, id: string, status: 'succeeded' | 'failed', failureCode: string, at: number): void {
  tx.stmt(`UPDATE refunds SET status = ?, failure_code = ?, completed_at = ? WHERE id = ?`).run(status, failureCode, at, id);
}

import type { App } from '../app-types';
import type { Tx } from '../db/tx';
import { iso, isoOrNull } from '../util/time';
import type { PaymentRow, PaymentView, RefundView } from './types';

/** A refund row as stored. */
export interface RefundRow {
  seq: number;
  id: string;
  payment_id: string;
  merchant_id: string;
  shop_id: string;
  mode: 'test' | 'live';
  amount: number;
  reason: string;
  status: 'pending' | 'succeeded' | 'failed';
  failure_code: string;
  created_at: number;
  completed_at: number | null;
}

/** A payment by id, any shop (callers check the shop). */
export function getPayment(app: App, id: string): PaymentRow | undefined {
  return app.store.stmt('SELECT * FROM payments WHERE id = ?').get(id) as PaymentRow | undefined;
}

/** The refunds of a payment, oldest first. */
export function refundsOf(app: App, paymentId: string): RefundRow[] {
  return app.store.stmt('SELECT * FROM refunds WHERE payment_id = ? ORDER BY seq').all(paymentId) as RefundRow[];
}

/** Write the changed columns of a payment (only the names given). */
export function updatePayment(tx: Tx, id: string, patch: Partial<PaymentRow>): void {
  const cols = Object.keys(patch);
  if (cols.length === 0) return;
  const sql = `UPDATE payments SET ${cols.map((c) => `${c} = @${c}`).join(', ')} WHERE id = @id`;
  tx.stmt(sql).run({ ...patch, id });
}

/** The parsed metadata of a row. */
export function metadataOf(row: PaymentRow): Record<string, string> {
  return JSON.parse(row.metadata) as Record<string, string>;
}

/** The API shape of a refund; `withCompleted` false leaves completed_at out (the create answer). */
export function refundView(r: RefundRow, withCompleted = true): RefundView {
  const v: RefundView = {
    id: r.id,
    payment_id: r.payment_id,
    merchant_id: r.merchant_id,
    amount: r.amount,
    reason: r.reason,
    status: r.status,
    failure_code: r.failure_code,
    created_at: iso(r.created_at),
  };
  if (withCompleted) v.completed_at = isoOrNull(r.completed_at);
  return v;
}

/** The Payment object as GET answers it, refunds included. */
export function paymentView(app: App, row: PaymentRow): PaymentView {
  const shop = app.store.stmt('SELECT name FROM shops WHERE id = ?').get(row.shop_id) as { name: string } | undefined;
  return {
    id: row.id,
    public_id: row.public_id,
    merchant_id: row.merchant_id,
    shop_id: row.shop_id,
    shop_name: shop?.name ?? '',
    order_id: row.order_id,
    status: row.status,
    amount: row.amount,
    amount_refunded: row.amount_refunded,
    currency: row.currency,
    method: row.method,
    rrn: row.rrn,
    bank_name: row.bank_name,
    return_url: row.return_url,
    description: row.description,
    purpose: row.purpose,
    created_at: iso(row.created_at),
    captured_at: isoOrNull(row.captured_at),
    finalized_at: isoOrNull(row.finalized_at),
    expires_at: iso(row.expires_at),
    processing_until: isoOrNull(row.processing_until),
    metadata: metadataOf(row),
    customer_card_brand: row.card_brand,
    customer_card_mask: row.card_mask,
    customer_card_holder: row.card_holder,
    customer_phone_mask: row.phone_mask,
    customer_payer_bank: row.payer_bank,
    refunds: refundsOf(app, row.id).map((r) => refundView(r)),
  };
}

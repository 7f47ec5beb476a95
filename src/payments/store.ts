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
  return app.store.reader('SELECT * FROM payments WHERE id = ?').get(id) as PaymentRow | undefined;
}

/** A payment row read with what its view needs besides: the shop's name and the refunds as a JSON array. */
export interface PaymentViewRow extends PaymentRow {
  view_shop_name: string | null;
  view_refunds: string;
}

/** A payment by id with its shop name and refunds, in one statement (GET answers it; callers check the shop). */
export function getPaymentForView(app: App, id: string): PaymentViewRow | undefined {
  return app.store
    .reader(
      `SELECT p.*, s.name AS view_shop_name,
              (SELECT json_group_array(json_object('seq', r.seq, 'id', r.id, 'payment_id', r.payment_id, 'merchant_id', r.merchant_id,
                        'shop_id', r.shop_id, 'mode', r.mode, 'amount', r.amount, 'reason', r.reason, 'status', r.status,
                        'failure_code', r.failure_code, 'created_at', r.created_at, 'completed_at', r.completed_at) ORDER BY r.seq)
               FROM refunds r WHERE r.payment_id = p.id) AS view_refunds
       FROM payments p LEFT JOIN shops s ON s.id = p.shop_id WHERE p.id = ?`,
    )
    .get(id) as PaymentViewRow | undefined;
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

/** The Payment object as GET answers it, refunds included; a row from getPaymentForView needs no more reads. */
export function paymentView(app: App, row: PaymentRow | PaymentViewRow): PaymentView {
  const joined = 'view_refunds' in row ? row : undefined;
  const shopName = joined
    ? joined.view_shop_name
    : (app.store.stmt('SELECT name FROM shops WHERE id = ?').get(row.shop_id) as { name: string } | undefined)?.name;
  const refunds = joined ? (JSON.parse(joined.view_refunds) as RefundRow[]) : refundsOf(app, row.id);
  return {
    id: row.id,
    public_id: row.public_id,
    merchant_id: row.merchant_id,
    shop_id: row.shop_id,
    shop_name: shopName ?? '',
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
    refunds: refunds.map((r) => refundView(r)),
  };
}

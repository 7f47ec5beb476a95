import type { Reader, Tx } from '../../platform/storage/store';
import { updateById } from '../../platform/storage/tx';
import { forUpdate, isPrimaryKeyConflict, NEXT_PAYMENT_SEQ } from '../../platform/storage/dialect';
import type { Mode } from '../../platform/clock';
import type { PaymentRow, PaymentView, RefundView } from '../bank-port/payment';
import type { RefundRow } from '../bank-port/refund';

/** Any shop (callers check the shop). Inside a transaction pass its tx, outside the store. */
export async function getPayment(q: Reader, id: string): Promise<PaymentRow | undefined> {
  return q.get<PaymentRow>('SELECT * FROM payments WHERE id = ?', id);
}

/** Locked until `tx` ends: a check made on it holds while the transaction writes. */
export async function lockPayment(tx: Tx, id: string): Promise<PaymentRow | undefined> {
  return tx.get<PaymentRow>(`SELECT * FROM payments WHERE id = ?${forUpdate(tx.engine)}`, id);
}

/** paymentView's columns, the shop and mode for the access check, and its shop's name. */
type ViewRow = Pick<
  PaymentRow,
  | 'id' | 'public_id' | 'merchant_id' | 'shop_id' | 'mode' | 'order_id' | 'status' | 'amount' | 'amount_refunded' | 'currency' | 'method'
  | 'rrn' | 'bank_name' | 'return_url' | 'description' | 'purpose' | 'created_at' | 'captured_at' | 'finalized_at' | 'expires_at'
  | 'processing_until' | 'metadata' | 'card_brand' | 'card_mask' | 'card_holder' | 'phone_mask' | 'payer_bank'
> & { shop_name: string | null };

const VIEW_ROW_SQL = `SELECT p.id, p.public_id, p.merchant_id, p.shop_id, p.mode, p.order_id, p.status, p.amount, p.amount_refunded,
    p.currency, p.method, p.rrn, p.bank_name, p.return_url, p.description, p.purpose, p.created_at, p.captured_at, p.finalized_at,
    p.expires_at, p.processing_until, p.metadata, p.card_brand, p.card_mask, p.card_holder, p.phone_mask, p.payer_bank, s.name AS shop_name
  FROM payments p LEFT JOIN shops s ON s.id = p.shop_id WHERE p.id = ?`;

/** As GET shows it (any shop: callers check it); refunds are read only when it may have some. */
export async function readPaymentView(q: Reader, id: string): Promise<{ shop_id: string; mode: Mode; view: PaymentView } | undefined> {
  const row = await q.get<ViewRow>(VIEW_ROW_SQL, id);
  if (!row) return undefined;
  // Only a succeeded payment takes refunds, and it stays succeeded or becomes refunded.
  const refunds = row.status === 'succeeded' || row.status === 'refunded' ? await refundsOf(q, row.id) : [];
  return { shop_id: row.shop_id, mode: row.mode, view: buildPaymentView(row, row.shop_name ?? '', refunds) };
}

export async function refundsOf(q: Reader, paymentId: string): Promise<RefundRow[]> {
  return q.all<RefundRow>('SELECT * FROM refunds WHERE payment_id = ? ORDER BY seq', paymentId);
}

export async function updatePayment(tx: Tx, id: string, patch: Partial<PaymentRow>): Promise<void> {
  await updateById(tx, 'payments', id, patch);
}

export function metadataOf(row: Pick<PaymentRow, 'metadata'>): Record<string, string> {
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
    created_at: new Date(r.created_at).toISOString(),
  };
  if (withCompleted) v.completed_at = r.completed_at == null ? null : new Date(r.completed_at).toISOString();
  return v;
}

export const SHOP_NAME_SQL = 'SELECT name FROM shops WHERE id = ?';

/** The Payment object as GET answers it; refunds are read only when it may have some (`unrefunded`: none, just succeeded). */
export async function paymentView(q: Reader, row: PaymentRow, unrefunded = false): Promise<PaymentView> {
  const shopName = (await q.get<{ name: string }>(SHOP_NAME_SQL, row.shop_id))?.name;
  const refunds = !unrefunded && (row.status === 'succeeded' || row.status === 'refunded') ? await refundsOf(q, row.id) : [];
  return buildPaymentView(row, shopName ?? '', refunds);
}

/** The Payment object of a row, its shop's name and its refunds. */
export function buildPaymentView(row: Omit<ViewRow, 'shop_name'>, shopName: string, refunds: RefundRow[]): PaymentView {
  return {
    id: row.id,
    public_id: row.public_id,
    merchant_id: row.merchant_id,
    shop_id: row.shop_id,
    shop_name: shopName,
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
    created_at: new Date(row.created_at).toISOString(),
    captured_at: row.captured_at == null ? null : new Date(row.captured_at).toISOString(),
    finalized_at: row.finalized_at == null ? null : new Date(row.finalized_at).toISOString(),
    expires_at: new Date(row.expires_at).toISOString(),
    processing_until: row.processing_until == null ? null : new Date(row.processing_until).toISOString(),
    metadata: JSON.parse(row.metadata) as Record<string, string>,
    customer_card_brand: row.card_brand,
    customer_card_mask: row.card_mask,
    customer_card_holder: row.card_holder,
    customer_phone_mask: row.phone_mask,
    customer_payer_bank: row.payer_bank,
    refunds: refunds.length === 0 ? [] : refunds.map((r) => refundView(r)),
  };
}

/** A deadline an expiry sweep watches: what is due (shop, mode, now, limit; earliest first) and the next end (shop, mode). */
export interface Deadline {
  due: string;
  next: string;
}

/** A pending payment's link ends at expires_at (partial index payments_pending_expiry). */
export const LINK_END: Deadline = {
  due: `SELECT * FROM payments WHERE shop_id = ? AND mode = ? AND status = 'pending' AND expires_at <= ? ORDER BY expires_at LIMIT ?`,
  next: `SELECT min(expires_at) AS at FROM payments WHERE shop_id = ? AND mode = ? AND status = 'pending'`,
};
/** A processing payment's bank session ends at processing_until (partial index payments_session_end). */
export const SESSION_END: Deadline = {
  due: `SELECT * FROM payments WHERE shop_id = ? AND mode = ? AND status = 'processing' AND processing_until <= ? ORDER BY processing_until LIMIT ?`,
  next: `SELECT min(processing_until) AS at FROM payments WHERE shop_id = ? AND mode = ? AND status = 'processing'`,
};

/** Six digits or more. */
const PUBLIC_ID_BASE = 100_000;

/** The other columns take their defaults. */
export type InsertParams = Pick<
  PaymentRow,
  | 'seq' | 'id' | 'public_id' | 'kind' | 'merchant_id' | 'shop_id' | 'mode' | 'order_id' | 'amount' | 'currency' | 'method'
  | 'method_fixed' | 'return_url' | 'description' | 'webhook_url' | 'purpose' | 'metadata' | 'created_at' | 'expires_at'
>;

// Positional: binding 19 values by name cost about 4 µs of a 50 µs create.
const INSERT_PAYMENT = `INSERT INTO payments (seq, id, public_id, kind, merchant_id, shop_id, mode, order_id, status, amount, currency, method, method_fixed,
    return_url, description, webhook_url, purpose, metadata, created_at, expires_at, processing_until)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
const PAYMENT_TUPLE = `, (${new Array(21).fill('?').join(', ')})`;

/** A payment whose session opens in its create's transaction (a saved method's charge) is written already processing. */
export interface OpenedAtInsert {
  status: 'processing';
  processing_until: number;
}

/**
 * One statement with seq, public_id and purpose (an UPDATE after the INSERT rewrote the row and its index). The
 * seq is one above the highest ever issued (NEXT_PAYMENT_SEQ), so never reused, even after a test reset; if another
 * writer took it meanwhile the primary key refuses and the read is made again once.
 */
export async function insertPayment(tx: Tx, params: InsertParams, seqRead?: number, opened?: OpenedAtInsert): Promise<PaymentRow> {
  for (let attempt = 0; ; attempt++) {
    // `seqRead`: the number the caller read in this transaction.
    const values: unknown[] = [];
    const row = numberedRow(params, attempt === 0 && seqRead !== undefined ? seqRead : (await tx.get<{ n: number }>(NEXT_PAYMENT_SEQ[tx.engine]))!.n, values, opened);
    try {
      await tx.run(INSERT_PAYMENT, ...values);
      return row;
    } catch (err) {
      if (attempt > 0 || !isPrimaryKeyConflict(err)) throw err;
    }
  }
}

/** Pending payments in one statement, the i-th numbered `seqs[i]` (from the sequence: no conflict to retry). */
export async function insertPayments(tx: Tx, params: InsertParams[], seqs: number[]): Promise<PaymentRow[]> {
  const values: unknown[] = [];
  const rows = params.map((p, i) => numberedRow(p, seqs[i], values));
  await tx.run(`${INSERT_PAYMENT}${PAYMENT_TUPLE.repeat(params.length - 1)}`, ...values);
  return rows;
}

/** `p` numbered `seq` (with the public id and bank purpose made from it), as its row; its values go on `values`. */
function numberedRow(p: InsertParams, seq: number, values: unknown[], opened?: OpenedAtInsert): PaymentRow {
  p.seq = seq;
  p.public_id = `P-${PUBLIC_ID_BASE + seq}`;
  // The only payment text the bank sees (never the merchant's description).
  p.purpose = `Оплата заказа ${p.public_id}`;
  const row = insertedRow(p);
  if (opened) {
    row.status = opened.status;
    row.processing_until = opened.processing_until;
  }
  // In column order.
  values.push(
    p.seq, p.id, p.public_id, p.kind, p.merchant_id, p.shop_id, p.mode, p.order_id, row.status, p.amount, p.currency,
    p.method, p.method_fixed, p.return_url, p.description, p.webhook_url, p.purpose, p.metadata, p.created_at, p.expires_at,
    row.processing_until,
  );
  return row;
}

/**
 * The inserted row built from what went in and the defaults, not read back (RETURNING cost a third of the
 * insert). Keys in SELECT * order; a test compares the two.
 */
export function insertedRow(p: InsertParams): PaymentRow {
  return {
    seq: p.seq,
    id: p.id,
    public_id: p.public_id,
    kind: p.kind,
    merchant_id: p.merchant_id,
    shop_id: p.shop_id,
    mode: p.mode,
    order_id: p.order_id,
    status: 'pending',
    amount: p.amount,
    amount_refunded: 0,
    currency: p.currency,
    method: p.method,
    method_fixed: p.method_fixed,
    return_url: p.return_url,
    description: p.description,
    webhook_url: p.webhook_url,
    purpose: p.purpose,
    metadata: p.metadata,
    rrn: '',
    bank_name: '',
    card_brand: '',
    card_mask: '',
    card_holder: '',
    phone_mask: '',
    payer_bank: '',
    created_at: p.created_at,
    expires_at: p.expires_at,
    processing_until: null,
    captured_at: null,
    finalized_at: null,
  };
}


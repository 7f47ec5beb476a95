import type { Reader, Tx } from '../../platform/storage/store';
import type { Clocks } from '../../platform/clock';
import { recordMismatch } from '../../money/bank-port/checks';
import { getPayment, metadataOf, updatePayment } from '../../money/payments/store';

// T-Bank's rows: requests (bank_requests, shared by live acquirers), sessions (tbank_sessions), RebillIds (tbank_rebills).

export interface SessionRow {
  payment_id: string;
  shop_id: string;
  order_id: string;
  attempt: number;
  bank_payment_id: string;
  payment_url: string;
  qr_payload: string;
  updated_at: number;
}

/** The payment an OrderId of this shop belongs to (any attempt). */
export async function paymentOfOrder(db: Reader, shopId: string, orderId: string): Promise<string | undefined> {
  const r = await db.get<{ subject_id: string }>(
    `SELECT subject_id FROM bank_requests WHERE order_id = ? AND shop_id = ? AND subject_kind = 'payment' AND operation = 'Init' LIMIT 1`,
    orderId, shopId,
  );
  return r?.subject_id;
}

export async function getSession(db: Reader, paymentId: string): Promise<SessionRow | undefined> {
  return db.get<SessionRow>('SELECT * FROM tbank_sessions WHERE payment_id = ?', paymentId);
}

/** Start a new attempt of a payment's session with a fresh OrderId (what the page showed is forgotten). */
export async function newAttempt(tx: Tx, paymentId: string, shopId: string, orderId: string, now: number): Promise<void> {
  await tx.run(
    `INSERT INTO tbank_sessions (payment_id, shop_id, order_id, attempt, updated_at) VALUES (?, ?, ?, 1, ?)
       ON CONFLICT (payment_id) DO UPDATE SET order_id = excluded.order_id, attempt = tbank_sessions.attempt + 1, bank_payment_id = '',
         payment_url = '', qr_payload = '', updated_at = excluded.updated_at`,
    paymentId, shopId, orderId, now,
  );
}

/** Update what the bank told about a session (empty values keep what is there). */
export async function updateSession(tx: Tx, paymentId: string, orderId: string, f: { bankPaymentId?: string; paymentUrl?: string; qrPayload?: string }, now: number): Promise<void> {
  await tx.run(
    `UPDATE tbank_sessions SET
         bank_payment_id = CASE WHEN @bpi <> '' THEN @bpi ELSE bank_payment_id END,
         payment_url = CASE WHEN @url <> '' THEN @url ELSE payment_url END,
         qr_payload = CASE WHEN @qr <> '' THEN @qr ELSE qr_payload END,
         updated_at = @now
       WHERE payment_id = @id AND order_id = @order`,
    { bpi: f.bankPaymentId ?? '', url: f.paymentUrl ?? '', qr: f.qrPayload ?? '', now, id: paymentId, order: orderId },
  );
}

/** Keep a saved method's RebillId (already encrypted). */
export async function putRebill(tx: Tx, tokenId: string, shopId: string, rebillEnc: string, now: number): Promise<void> {
  await tx.run(
    `INSERT INTO tbank_rebills (token_id, shop_id, rebill_enc, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (token_id) DO UPDATE SET rebill_enc = excluded.rebill_enc, updated_at = excluded.updated_at`,
    tokenId, shopId, rebillEnc, now,
  );
}

export async function getRebill(db: Reader, tokenId: string): Promise<string | undefined> {
  return (await db.get<{ rebill_enc: string }>('SELECT rebill_enc FROM tbank_rebills WHERE token_id = ?', tokenId))?.rebill_enc;
}

/** The recurrent role of a payment (binding a method, or charging one) and its token, if any. */
export async function recurrentOf(db: Reader, paymentId: string): Promise<{ kind: string; token_id: string | null } | undefined> {
  return db.get<{ kind: string; token_id: string | null }>('SELECT kind, token_id FROM recurrent_payments WHERE payment_seq = (SELECT seq FROM payments WHERE id = ?)', paymentId);
}

/** Show the bank's PaymentId of a payment's current attempt as its metadata.bank_ref (a new attempt's replaces it), so GET, webhooks and exports carry it. */
export async function putBankRef(tx: Tx, paymentId: string, bankPaymentId: string): Promise<void> {
  const p = bankPaymentId ? await getPayment(tx, paymentId) : undefined;
  if (!p) return;
  const meta = metadataOf(p);
  if (meta.bank_ref === bankPaymentId) return;
  meta.bank_ref = bankPaymentId;
  await updatePayment(tx, p.id, { metadata: JSON.stringify(meta) });
}

/** Keep, instead of applying, a bank's word whose Amount is not an integer of kopecks: `kopek doctor` shows it as sent (the bank amount -1: no payment has it). */
export async function keepUnreadableAmount(clocks: Pick<Clocks, 'real'>, tx: Tx, p: { id: string; shop_id: string; amount: number }, outcome: string, raw: string): Promise<void> {
  await recordMismatch(clocks, tx, { shopId: p.shop_id, subjectId: p.id, expected: p.amount, told: -1, outcome: `${outcome}; Amount ${raw} is not an integer of kopecks` });
}

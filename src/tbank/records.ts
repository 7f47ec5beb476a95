import type { Store, Tx } from '../db/store';

// T-Bank's rows: every request (bank_requests, shared by live acquirers), each payment's session
// (tbank_sessions) and each saved method's encrypted RebillId (tbank_rebills).

/** One recorded request to the bank. */
export interface BankRequestRow {
  id: number;
  shop_id: string;
  mode: 'test' | 'live';
  provider: string;
  operation: string;
  subject_kind: 'payment' | 'refund';
  subject_id: string;
  order_id: string;
  bank_payment_id: string;
  /** The JSON body as sent, without Password, Token or RebillId. */
  request: string;
  state: 'queued' | 'sent' | 'answered' | 'unknown';
  answer: string;
  created_at: number;
  sent_at: number | null;
  answered_at: number | null;
}

/** A payment's session at the bank. */
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

type Reader = Pick<Store, 'stmt'>;

/** Record a request before it is sent (state queued); returns its id. */
export function insertRequest(tx: Tx, r: Omit<BankRequestRow, 'id' | 'state' | 'answer' | 'sent_at' | 'answered_at'>): number {
  const info = tx
    .stmt(
      `INSERT INTO bank_requests (shop_id, mode, provider, operation, subject_kind, subject_id, order_id, bank_payment_id, request, state, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?)`,
    )
    .run(r.shop_id, r.mode, r.provider, r.operation, r.subject_kind, r.subject_id, r.order_id, r.bank_payment_id, r.request, r.created_at);
  return Number(info.lastInsertRowid);
}

/** A recorded request by id. */
export function getRequest(db: Reader, id: number): BankRequestRow | undefined {
  return db.stmt('SELECT * FROM bank_requests WHERE id = ?').get(id) as BankRequestRow | undefined;
}

/** The requests about one operation, oldest first. */
export function requestsOf(db: Reader, subjectId: string): BankRequestRow[] {
  return db.stmt('SELECT * FROM bank_requests WHERE subject_id = ? ORDER BY id').all(subjectId) as BankRequestRow[];
}

/** Mark a request as on its way (just before the bytes leave). */
export function markSent(tx: Tx, id: number, now: number): void {
  tx.stmt(`UPDATE bank_requests SET state = 'sent', sent_at = ? WHERE id = ? AND state = 'queued'`).run(now, id);
}

/** Record a request's answer (or why it is unknown). */
export function markAnswered(tx: Tx, id: number, state: 'answered' | 'unknown', answer: string, bankPaymentId: string, now: number): void {
  tx
    .stmt(`UPDATE bank_requests SET state = ?, answer = ?, answered_at = ?, bank_payment_id = CASE WHEN ? <> '' THEN ? ELSE bank_payment_id END WHERE id = ?`)
    .run(state, answer, now, bankPaymentId, bankPaymentId, id);
}

/** The payment an OrderId of this shop belongs to (any attempt). */
export function paymentOfOrder(db: Reader, shopId: string, orderId: string): string | undefined {
  const r = db
    .stmt(`SELECT subject_id FROM bank_requests WHERE order_id = ? AND shop_id = ? AND subject_kind = 'payment' AND operation = 'Init' LIMIT 1`)
    .get(orderId, shopId) as { subject_id: string } | undefined;
  return r?.subject_id;
}

/** A payment's session, if one was opened at the bank. */
export function getSession(db: Reader, paymentId: string): SessionRow | undefined {
  return db.stmt('SELECT * FROM tbank_sessions WHERE payment_id = ?').get(paymentId) as SessionRow | undefined;
}

/** Start a new attempt of a payment's session with a fresh OrderId (what the page showed is forgotten). */
export function newAttempt(tx: Tx, paymentId: string, shopId: string, orderId: string, now: number): number {
  const prev = getSession(tx, paymentId);
  const attempt = (prev?.attempt ?? 0) + 1;
  tx
    .stmt(
      `INSERT INTO tbank_sessions (payment_id, shop_id, order_id, attempt, updated_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (payment_id) DO UPDATE SET order_id = excluded.order_id, attempt = excluded.attempt, bank_payment_id = '',
         payment_url = '', qr_payload = '', updated_at = excluded.updated_at`,
    )
    .run(paymentId, shopId, orderId, attempt, now);
  return attempt;
}

/** Update what the bank told about a session (empty values keep what is there). */
export function updateSession(tx: Tx, paymentId: string, orderId: string, f: { bankPaymentId?: string; paymentUrl?: string; qrPayload?: string }, now: number): void {
  tx
    .stmt(
      `UPDATE tbank_sessions SET
         bank_payment_id = CASE WHEN @bpi <> '' THEN @bpi ELSE bank_payment_id END,
         payment_url = CASE WHEN @url <> '' THEN @url ELSE payment_url END,
         qr_payload = CASE WHEN @qr <> '' THEN @qr ELSE qr_payload END,
         updated_at = @now
       WHERE payment_id = @id AND order_id = @order`,
    )
    .run({ bpi: f.bankPaymentId ?? '', url: f.paymentUrl ?? '', qr: f.qrPayload ?? '', now, id: paymentId, order: orderId });
}

/** Keep a saved method's RebillId (already encrypted). */
export function putRebill(tx: Tx, tokenId: string, shopId: string, rebillEnc: string, now: number): void {
  tx
    .stmt(
      `INSERT INTO tbank_rebills (token_id, shop_id, rebill_enc, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (token_id) DO UPDATE SET rebill_enc = excluded.rebill_enc, updated_at = excluded.updated_at`,
    )
    .run(tokenId, shopId, rebillEnc, now);
}

/** A saved method's encrypted RebillId, if the bank gave one. */
export function getRebill(db: Reader, tokenId: string): string | undefined {
  return (db.stmt('SELECT rebill_enc FROM tbank_rebills WHERE token_id = ?').get(tokenId) as { rebill_enc: string } | undefined)?.rebill_enc;
}

/** The recurrent role of a payment (binding a method, or charging one) and its token, if any. */
export function recurrentOf(db: Reader, paymentId: string): { kind: string; token_id: string | null } | undefined {
  return db.stmt('SELECT kind, token_id FROM recurrent_payments WHERE payment_seq = (SELECT seq FROM payments WHERE id = ?)').get(paymentId) as { kind: string; token_id: string | null } | undefined;
}

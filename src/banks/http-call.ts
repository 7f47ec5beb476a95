import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Tx } from '../platform/storage/store';

/** Time a request job allows beyond the request's own timeout, so the request's unknown is what it records. */
export const JOB_MARGIN_MS = 5_000;

/** Largest answer body read from a bank or provider; a longer one is unreadable. */
const MAX_ANSWER_BYTES = 1_048_576;

/** What one call gave: the status and body as received, or unknown (and why, without secrets). */
export type RawAnswer = { kind: 'answer'; status: number; body: Buffer } | { kind: 'unknown'; reason: string };

export interface BankCall {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string | number>;
  payload?: Buffer;
  timeoutMs: number;
  /** Answers every lookup with the address a check of `url` found, so the connection goes there. */
  lookup?: LookupFunction;
  /** Who is called, as the reasons name it ("acquirer", "provider"). */
  who: string;
}

/** One call within the deadline; a timeout, connection error, broken or too large answer is unknown (the far end may have acted). */
export function callBank(c: BankCall): Promise<RawAnswer> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (s: RawAnswer): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(s);
    };
    if (!URL.canParse(c.url)) return resolve({ kind: 'unknown', reason: `the ${c.who} address is not a URL` });
    const u = new URL(c.url);
    const send = u.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(u, { method: c.method, headers: c.headers, ...(c.lookup ? { lookup: c.lookup } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (b: Buffer) => {
        size += b.length;
        if (size > MAX_ANSWER_BYTES) {
          req.destroy();
          finish({ kind: 'unknown', reason: 'the answer is too large' });
        } else chunks.push(b);
      });
      res.on('error', () => finish({ kind: 'unknown', reason: 'the connection broke while reading the answer' }));
      res.on('end', () => finish({ kind: 'answer', status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
    });
    const timer = setTimeout(() => {
      req.destroy();
      finish({ kind: 'unknown', reason: `no answer within ${c.timeoutMs} ms` });
    }, c.timeoutMs);
    req.on('error', (e: NodeJS.ErrnoException) => finish({ kind: 'unknown', reason: `connection error ${e.code ?? ''}`.trim() }));
    req.end(c.payload);
  });
}

/** A request to a live bank: a row of bank_requests, written queued in the domain's transaction. */
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

/** Mark a queued request as on its way (just before the bytes leave); false when it was not queued any more (another run sent it). */
export async function markSent(tx: Tx, id: number, now: number): Promise<boolean> {
  return (await tx.run(`UPDATE bank_requests SET state = 'sent', sent_at = ? WHERE id = ? AND state = 'queued'`, now, id)).changes === 1;
}

/** Record a request's answer (or why it is unknown), and the bank's id of the operation when it gave one. */
export async function markAnswered(tx: Tx, id: number, state: 'answered' | 'unknown', answer: string, bankPaymentId: string, now: number): Promise<void> {
  await tx.run(
    `UPDATE bank_requests SET state = ?, answer = ?, answered_at = ?, bank_payment_id = CASE WHEN ? <> '' THEN ? ELSE bank_payment_id END WHERE id = ?`,
    state, answer, now, bankPaymentId, bankPaymentId, id,
  );
}

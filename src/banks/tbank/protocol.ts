import { createHash } from 'node:crypto';
import { safeEqual } from '../../platform/util/ids';
import type { MoneyAnswer, PaymentAnswer } from '../../money/bank-port/port';

// T-Bank Internet Acquiring API v2 (its published OpenAPI document): JSON POSTs to {api_url}/<Method>, each signed with a
// Token; answers carry Success, ErrorCode ("0" = none), Status, PaymentId, OrderId and Amount (kopecks). No I/O here.

export const TBANK = 'tbank';

export const TBANK_API_URL = 'https://securepay.tinkoff.ru/v2';

/** The bank's test environment (test terminals, no money moves). */
export const TBANK_TEST_API_URL = 'https://rest-api-test.tinkoff.ru/v2';

/** The addresses the bank publishes: the only ones a merchant may choose in the cabinet. */
export const TBANK_KNOWN_API_URLS: readonly string[] = [TBANK_API_URL, TBANK_TEST_API_URL];

export type TBankMethod = 'Init' | 'GetState' | 'CheckOrder' | 'Cancel' | 'Charge' | 'GetQr';

/** The Token of a request or notification: SHA-256 (hex) of the root-level scalar values plus Password, in key order. */
export function tbankToken(body: Record<string, unknown>, password: string): string {
  const fields: Record<string, string> = { Password: password };
  for (const [k, v] of Object.entries(body)) {
    if (k === 'Token' || v === null || v === undefined) continue;
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') fields[k] = String(v);
  }
  const joined = Object.keys(fields).sort().map((k) => fields[k]).join('');
  return createHash('sha256').update(joined, 'utf8').digest('hex');
}

export function tokenMatches(body: Record<string, unknown>, password: string): boolean {
  const got = typeof body.Token === 'string' ? body.Token.toLowerCase() : '';
  return safeEqual(got, tbankToken(body, password));
}

export interface TBankAnswer {
  Success?: boolean;
  ErrorCode?: string;
  Message?: string;
  Details?: string;
  Status?: string;
  PaymentId?: string | number;
  OrderId?: string;
  /** Kopecks, a JSON integer; anything else is unreadable (amountOf). */
  Amount?: unknown;
  PaymentURL?: string;
  Data?: string;
  RebillId?: string | number;
  Pan?: string;
  RRN?: string;
  Payments?: Array<{ PaymentId?: string | number; Amount?: unknown; Status?: string; RRN?: string; Success?: boolean; ErrorCode?: string }>;
}

/** An Amount in the protocol's own form, an integer of kopecks; `bad` (the value as sent, shortened) for "300000.00", 3000.5, "300000". */
export function amountOf(a: { Amount?: unknown }): { kind: 'absent' } | { kind: 'kopecks'; value: number } | { kind: 'bad'; raw: string } {
  const v = a.Amount;
  if (v === undefined || v === null) return { kind: 'absent' };
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return { kind: 'kopecks', value: v };
  return { kind: 'bad', raw: JSON.stringify(v).slice(0, 40) };
}

export function accepted(a: TBankAnswer): boolean {
  return a.Success === true && String(a.ErrorCode ?? '0') === '0';
}

/** Statuses after which nothing more happens to a payment at the bank, and what they mean to kopek. */
const FINAL: Record<string, 'succeeded' | 'refused' | 'expired' | 'cancelled'> = {
  CONFIRMED: 'succeeded',
  REJECTED: 'refused',
  AUTH_FAIL: 'refused',
  DEADLINE_EXPIRED: 'expired',
  CANCELED: 'cancelled',
  REVERSED: 'cancelled',
};

/** The unified failure code of an ErrorCode: card refusals are 1000 + the ISO 8583 answer (1051: 51); 1502 and a few are the bank's own. */
export function failureCodeOf(errorCode: string): string {
  const iso: Record<string, string> = { '05': 'do_not_honor', '51': 'insufficient_funds', '54': 'card_expired', '33': 'card_expired', '14': 'invalid_card', '15': 'invalid_card', '61': 'limit_exceeded', '65': 'limit_exceeded', '96': 'processing_error' };
  if (errorCode === '1502') return 'insufficient_funds';
  if (errorCode === '1034' || errorCode === '1082') return 'three_ds_failed';
  const m = /^10(\d\d)$/.exec(errorCode);
  if (m && iso[m[1]]) return iso[m[1]];
  if (/^1\d{3}$/.test(errorCode)) return 'do_not_honor';
  return 'processing_error';
}

/** The masked card of an answer's Pan ("430000******0777"), never more than the bank showed. */
function cardOf(a: TBankAnswer): { brand: string; mask: string; holder: string } | undefined {
  if (typeof a.Pan !== 'string' || !/^[\d*]{12,19}$/.test(a.Pan) || /\d{11,}/.test(a.Pan)) return undefined;
  const brand = /^4/.test(a.Pan) ? 'visa' : /^5[1-5]/.test(a.Pan) ? 'mastercard' : /^220[0-4]/.test(a.Pan) ? 'mir' : 'card';
  return { brand, mask: a.Pan, holder: '' };
}

/** What a payment's Status (with its ErrorCode) means to kopek; statuses on the way (NEW, FORM_SHOWED, AUTHORIZED, ...) are unknown. */
export function paymentAnswerOf(a: TBankAnswer): PaymentAnswer {
  const status = String(a.Status ?? '');
  const final = FINAL[status];
  if (final === 'succeeded') {
    const rrn = typeof a.RRN === 'string' && a.RRN ? a.RRN : undefined;
    return { outcome: 'succeeded', rrn, card: cardOf(a) };
  }
  if (final === 'refused') {
    const code = String(a.ErrorCode ?? '') || '0';
    return { outcome: 'refused', failureCode: code === '0' ? 'do_not_honor' : failureCodeOf(code), bankCode: code, card: cardOf(a) };
  }
  if (final === 'expired' || final === 'cancelled') return { outcome: final };
  return { outcome: 'unknown', reason: `status ${status || '(none)'}` };
}

export function refusal(a: TBankAnswer): { outcome: 'refused'; failureCode: string; bankCode: string } {
  const code = String(a.ErrorCode ?? '') || '0';
  return { outcome: 'refused', failureCode: failureCodeOf(code), bankCode: code };
}

/** What the answer to a refund's Cancel means: REFUNDED / PARTIAL_REFUNDED settle it; a refusal fails it. */
export function refundAnswerOf(a: TBankAnswer): MoneyAnswer {
  const status = String(a.Status ?? '');
  if (accepted(a) && (status === 'REFUNDED' || status === 'PARTIAL_REFUNDED')) return { outcome: 'succeeded', bankRef: String(a.PaymentId ?? '') };
  if (a.Success === false && String(a.ErrorCode ?? '0') !== '0') return refusal(a);
  return { outcome: 'unknown', reason: `status ${status || '(none)'}` };
}

export function bankIdOf(a: { PaymentId?: string | number | null }): string {
  return a.PaymentId !== undefined && a.PaymentId !== null ? String(a.PaymentId) : '';
}

/** The answer of CheckOrder for one OrderId: the payment that tells the most (a confirmed one, else the latest). */
export function checkOrderPayment(a: TBankAnswer): TBankAnswer | undefined {
  const list = Array.isArray(a.Payments) ? a.Payments : [];
  if (list.length === 0) return undefined;
  const pick = list.find((p) => p.Status === 'CONFIRMED') ?? list[list.length - 1];
  return { ...pick, OrderId: a.OrderId };
}

/** RedirectDueDate as the bank reads it: ISO 8601 to the second, with its offset. */
export function dueDate(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, '+00:00');
}

/** A request or answer without the secrets it may carry (for the record and the logs). */
export function withoutSecrets(body: Record<string, unknown>): Record<string, unknown> {
  const { Password: _p, Token: _t, RebillId: _r, ...rest } = body;
  return rest;
}

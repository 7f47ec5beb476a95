import type { MoneyAnswer, PayoutRequest } from '../../money/bank-port/port';

// YooKassa Payouts API v3 as kopek uses it (docs/live-mode.md, "Payouts: YooKassa"): POST bodies, payout objects, codes.

const MAX_DESCRIPTION = 128;

export interface PayoutObject {
  id: string;
  status: string;
  /** The amount in kopecks; undefined when it cannot be read as one. */
  amount: number | undefined;
  /** kopek's payout id, as the request's metadata carried it. */
  payoutId: string;
  /** cancellation_details.reason of a canceled payout. */
  reason: string;
}

/** A payout's POST body without the card number (added from memory when sent): what every repeat sends with the same Idempotence-Key. */
export function payoutBody(req: PayoutRequest): Record<string, unknown> {
  const destination =
    req.method === 'payouts_card'
      ? { type: 'bank_card', card: {} }
      : { type: 'sbp', phone: (req.recipient.phone ?? '').replace(/\D/g, ''), bank_id: req.recipient.bankId ?? req.bankId ?? '' };
  return {
    amount: { value: rublesOf(req.amount), currency: 'RUB' },
    payout_destination_data: destination,
    description: (req.description || `Payout ${req.id}`).slice(0, MAX_DESCRIPTION),
    metadata: { payout_id: req.id },
  };
}

/** True when a recorded body is a card payout's (its number must come from memory). */
export function isCardBody(body: Record<string, unknown>): boolean {
  return (body.payout_destination_data as { type?: unknown } | undefined)?.type === 'bank_card';
}

/** The recorded body with the card number put in, for the one outgoing request. */
export function withCardNumber(body: Record<string, unknown>, number: string): Record<string, unknown> {
  return { ...body, payout_destination_data: { type: 'bank_card', card: { number } } };
}

export function payoutObjectOf(a: unknown): PayoutObject | undefined {
  if (!a || typeof a !== 'object' || Array.isArray(a)) return undefined;
  const o = a as Record<string, unknown>;
  if (typeof o.id !== 'string' || o.id === '' || typeof o.status !== 'string') return undefined;
  const amount = (o.amount as { value?: unknown } | undefined)?.value;
  const meta = o.metadata && typeof o.metadata === 'object' ? (o.metadata as Record<string, unknown>) : {};
  const details = o.cancellation_details && typeof o.cancellation_details === 'object' ? (o.cancellation_details as Record<string, unknown>) : {};
  return {
    id: o.id,
    status: o.status,
    amount: kopecksOf(amount),
    payoutId: typeof meta.payout_id === 'string' ? meta.payout_id : '',
    reason: typeof details.reason === 'string' ? details.reason : '',
  };
}

/** The unified failure code of a cancellation reason; any other reason is processing_error. */
const FAILURE_CODES: Record<string, string> = { insufficient_funds: 'insufficient_funds', recipient_not_found: 'recipient_not_in_sbp', general_decline: 'do_not_honor' };

export function failureCodeOf(reason: string): string {
  return Object.hasOwn(FAILURE_CODES, reason) ? FAILURE_CODES[reason] : 'processing_error';
}

/** What a payout object's status tells: final for succeeded and canceled, unknown while pending. */
export function answerOf(po: PayoutObject): MoneyAnswer {
  if (po.status === 'succeeded') return { outcome: 'succeeded', bankRef: po.id };
  if (po.status === 'canceled') return { outcome: 'refused', failureCode: failureCodeOf(po.reason), bankCode: po.reason || 'canceled' };
  return { outcome: 'unknown', reason: `the provider's payout is ${po.status.slice(0, 32)}` };
}

// Kopecks to and from the provider's decimal strings ("1234.56") in string arithmetic only: no floating point touches money.

/** Largest kopecks value written or read: 10^15 (a safe integer, far beyond any payout). */
const MAX_KOPECKS = 1_000_000_000_000_000;

/** Kopecks as the provider's "rubles.kk" string: 1 → "0.01", 100 → "1.00", 123456789 → "1234567.89". */
export function rublesOf(kopecks: number): string {
  if (!Number.isSafeInteger(kopecks) || kopecks < 0 || kopecks > MAX_KOPECKS) throw new Error(`cannot convert ${kopecks} kopecks: not a whole amount`);
  const digits = String(kopecks).padStart(3, '0');
  return `${digits.slice(0, -2)}.${digits.slice(-2)}`;
}

/** The provider's decimal string as kopecks ("1.5" → 150, "10" → 1000); undefined for anything else. */
export function kopecksOf(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const m = /^(0|[1-9][0-9]{0,13})(?:\.([0-9]{1,2}))?$/.exec(value);
  if (!m) return undefined;
  const n = Number(`${m[1]}${(m[2] ?? '').padEnd(2, '0')}`);
  return Number.isSafeInteger(n) && n <= MAX_KOPECKS ? n : undefined;
}

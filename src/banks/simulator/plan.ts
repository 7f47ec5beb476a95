// The test bank's plans by the amount's kopeck part (magic amounts), its test cards and the card checks of page and server.
// A card number lives only in the request that carries it: only brand, mask and holder go further.
import type { MoneyAnswer } from '../../money/bank-port/port';
import { bankCodeFor } from '../../money/payments/failures';

/** What the test bank will answer for a payment, decided at creation. */
export type SimOutcome = 'succeeded' | 'failed' | 'requires_action' | 'pending';

export interface SimPlan {
  outcome: SimOutcome;
  /** Unified failure code for `failed`; "" otherwise. */
  failureCode: string;
}

/** Magic amounts by the kopeck part: 01 fails do_not_honor, 02 insufficient_funds, 03 requires action, 04 stays pending; else succeeds. */
export function planForAmount(amount: number): SimPlan {
  const plans: Record<number, SimPlan> = {
    1: { outcome: 'failed', failureCode: 'do_not_honor' },
    2: { outcome: 'failed', failureCode: 'insufficient_funds' },
    3: { outcome: 'requires_action', failureCode: '' },
    4: { outcome: 'pending', failureCode: '' },
  };
  return plans[amount % 100] ?? { outcome: 'succeeded', failureCode: '' };
}

/** Payout plan by the kopeck part (decisions.md): 03 the router refuses (nothing created); 01, 02 fail after --sim-delay; else succeeds. */
export function payoutPlanForAmount(amount: number): { outcome: 'refused' | 'failed' | 'succeeded'; failureCode: string | null } {
  const plans = {
    1: { outcome: 'failed', failureCode: 'do_not_honor' },
    2: { outcome: 'failed', failureCode: 'recipient_not_in_sbp' },
    3: { outcome: 'refused', failureCode: 'router_error' },
  } as const;
  return plans[(amount % 100) as 1 | 2 | 3] ?? { outcome: 'succeeded', failureCode: null };
}

/** The test bank's answer for a refund or a payout's final outcome (a failure without a code: do_not_honor). */
export function answerOf(outcome: 'succeeded' | 'failed', failureCode: string): MoneyAnswer {
  if (outcome === 'succeeded') return { outcome };
  const code = failureCode || 'do_not_honor';
  return { outcome: 'refused', failureCode: code, bankCode: bankCodeFor(code) };
}

/** How the test bank settles a refund: a refund whose own amount ends in 01 fails do_not_honor. */
export function refundAnswer(amount: number): MoneyAnswer {
  return answerOf(amount % 100 === 1 ? 'failed' : 'succeeded', 'do_not_honor');
}

/** The plan recorded in a payment's metadata, if the payment is a test one. */
export function planFromMetadata(meta: Record<string, string>): SimPlan | null {
  const outcome = meta.simulator_outcome as SimOutcome | undefined;
  if (!outcome) return null;
  return { outcome, failureCode: meta.simulator_failure_code ?? '' };
}

export interface TestCard {
  number: string;
  brand: CardBrand;
  /** Bank answer after any 3-D Secure challenge. */
  outcome: 'succeeded' | 'failed';
  failureCode?: string;
  /** The bank asks for a 3-D Secure challenge whatever the amount. */
  threeDs: boolean;
}

export type CardBrand = 'mir' | 'visa' | 'mastercard' | 'amex' | 'unionpay' | 'jcb' | 'card';

/** The documented test cards (docs/testing.md lists the same table). */
export const TEST_CARDS: readonly TestCard[] = [
  { number: '2200000000000004', brand: 'mir', outcome: 'succeeded', threeDs: false },
  { number: '2200000000000012', brand: 'mir', outcome: 'failed', failureCode: 'do_not_honor', threeDs: false },
  { number: '2200000000000020', brand: 'mir', outcome: 'failed', failureCode: 'insufficient_funds', threeDs: false },
  { number: '2200000000000038', brand: 'mir', outcome: 'succeeded', threeDs: true },
  { number: '2200000000000046', brand: 'mir', outcome: 'failed', failureCode: 'limit_exceeded', threeDs: false },
  { number: '4111111111111111', brand: 'visa', outcome: 'succeeded', threeDs: false },
  { number: '4000000000000002', brand: 'visa', outcome: 'failed', failureCode: 'do_not_honor', threeDs: false },
  { number: '4000000000009995', brand: 'visa', outcome: 'failed', failureCode: 'insufficient_funds', threeDs: false },
  { number: '4000000000003220', brand: 'visa', outcome: 'succeeded', threeDs: true },
  { number: '4000000000000069', brand: 'visa', outcome: 'failed', failureCode: 'card_expired', threeDs: false },
  { number: '4000000000000119', brand: 'visa', outcome: 'failed', failureCode: 'processing_error', threeDs: false },
  { number: '5555555555554444', brand: 'mastercard', outcome: 'succeeded', threeDs: false },
  { number: '378282246310005', brand: 'amex', outcome: 'succeeded', threeDs: false },
];

/** The one 3-D Secure code the simulated bank accepts; any other code fails `three_ds_failed`. */
export const THREE_DS_CODE = '123456';

/** What the simulated bank does with a card: challenge first or not, then the final answer (`pending` = never answers). */
export interface CardDecision {
  threeDs: boolean;
  outcome: 'succeeded' | 'failed' | 'pending';
  failureCode?: string;
}

/** A documented test card decides; other cards follow the plan. A requires_action plan (03) adds 3-D Secure for every card. */
export function decideCard(digits: string, plan: SimPlan): CardDecision {
  const requiresAction = plan.outcome === 'requires_action';
  const known = TEST_CARDS.find((c) => c.number === digits);
  if (known) return { threeDs: known.threeDs || requiresAction, outcome: known.outcome, failureCode: known.failureCode };
  if (plan.outcome === 'failed') return { threeDs: false, outcome: 'failed', failureCode: plan.failureCode || 'do_not_honor' };
  if (plan.outcome === 'pending') return { threeDs: false, outcome: 'pending' };
  return { threeDs: requiresAction, outcome: 'succeeded' };
}

export function luhnValid(digits: string): boolean {
  if (!/^\d+$/.test(digits)) return false;
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    const d = (digits.charCodeAt(digits.length - 1 - i) - 48) * (i % 2 === 1 ? 2 : 1);
    sum += d > 9 ? d - 9 : d;
  }
  return sum % 10 === 0;
}

/** The card scheme by prefix (Mir 2200–2204, Mastercard 51–55 and 2221–2720, and so on). */
export function cardBrand(digits: string): CardBrand {
  const p2 = Number(digits.slice(0, 2));
  const p4 = Number(digits.slice(0, 4));
  if (p4 >= 2200 && p4 <= 2204) return 'mir';
  if (digits.startsWith('4')) return 'visa';
  if ((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) return 'mastercard';
  if (p2 === 34 || p2 === 37) return 'amex';
  if (p2 === 62) return 'unionpay';
  if (p4 >= 3528 && p4 <= 3589) return 'jcb';
  return 'card';
}

export function maskPan(digits: string): string {
  return digits.slice(0, 6) + '*'.repeat(Math.max(0, digits.length - 10)) + digits.slice(-4);
}

/** A card form field that failed its check, with the reason's message key. */
export type CardFieldError = { field: 'number' | 'exp' | 'cvc' | 'holder'; reason: string };

/** A card that passed every check: what may leave the request (never the number). */
export interface CheckedCard {
  brand: CardBrand;
  mask: string;
  holder: string;
  /** Digits, for the simulator's decision in this request only; never stored or logged. */
  digits: string;
}

export interface CardForm {
  number?: string;
  exp?: string;
  cvc?: string;
  holder?: string;
}

/** Checks a posted card form as the page's script does: Luhn and length, expiry month not over, CVC of 3 (4 for Amex), Latin holder. */
export function checkCard(form: CardForm, now_ms: number): { card: CheckedCard; errors: [] } | { card: null; errors: CardFieldError[] } {
  const errors: CardFieldError[] = [];
  const digits = String(form.number ?? '').replace(/[\s-]/g, '');
  const brand = cardBrand(digits);
  if (!/^\d{15,19}$/.test(digits)) errors.push({ field: 'number', reason: 'card_number_length' });
  else if (!luhnValid(digits)) errors.push({ field: 'number', reason: 'card_number_luhn' });
  const exp = /^\s*(\d{2})\s*\/\s*(\d{2}|\d{4})\s*$/.exec(String(form.exp ?? ''));
  if (!exp || Number(exp[1]) < 1 || Number(exp[1]) > 12) errors.push({ field: 'exp', reason: 'card_exp_format' });
  else {
    const year = exp[2].length === 2 ? 2000 + Number(exp[2]) : Number(exp[2]);
    // A card is valid through the last day of its expiry month.
    if (Date.UTC(year, Number(exp[1]), 1) <= now_ms) errors.push({ field: 'exp', reason: 'card_exp_past' });
  }
  const cvcLength = brand === 'amex' ? 4 : 3;
  if (!new RegExp(`^\\d{${cvcLength}}$`).test(String(form.cvc ?? '').trim())) {
    errors.push({ field: 'cvc', reason: cvcLength === 4 ? 'card_cvc_4' : 'card_cvc_3' });
  }
  const holder = String(form.holder ?? '').trim().replace(/\s+/g, ' ').toUpperCase();
  if (holder.length > 64 || !/^[A-Z .'-]*$/.test(holder)) errors.push({ field: 'holder', reason: 'card_holder_invalid' });
  if (errors.length > 0) return { card: null, errors };
  return { card: { brand, mask: maskPan(digits), holder, digits }, errors: [] };
}

import { ApiError, badRequest } from '../../platform/http/errors';
import { amountField, describe, strField } from '../../platform/http/body';
import { parseCreateBody } from '../../money/payments/create';
import { payoutFields } from '../../money/payouts/fields';
import { customerFields } from '../../money/tokens/handlers';
import { PLAN_NAME_MAX } from '../../money/subscriptions/handlers';
import type { WEBHOOK_EVENTS } from '../../money/webhooks/store';
import { payoutPlanForAmount, planForAmount } from './plan';

/** Every event POST /v1/test/trigger can make, with what it creates; `kopek trigger --list` prints these lines as they are. */
export const TRIGGER_EVENTS = {
  'payment.succeeded': 'a payment paid by SBP; the test bank confirms it',
  'payment.failed': 'a payment paid by SBP; the test bank refuses it (do_not_honor)',
  'payment.cancelled': 'a pending payment the merchant cancels',
  'payment.expired': 'a pending payment whose link expires',
  'payment.refunded': 'a succeeded payment refunded in full; the test bank settles the refund',
  'payout.succeeded': 'an SBP payout the test bank pays (a payment funds it first when the available balance is short)',
  'payout.failed': 'an SBP payout the test bank refuses (do_not_honor; funded the same way)',
  'subscription.activated': 'a monthly card subscription whose first payment succeeds (token.activated too)',
  'subscription.charge_succeeded': 'an active subscription charged now for its next period; the charge succeeds',
  'subscription.charge_failed': 'an active subscription charged now; the bank refuses (insufficient_funds): past_due',
  'subscription.past_due': 'the same refused charge: the subscription becomes past_due (charge_failed too)',
  'subscription.cancelled': 'an active subscription the merchant cancels',
  'token.activated': 'a card bound with its 1 RUB verification, which is returned at once',
  'token.cancelled': 'an active card token the merchant cancels',
} as const satisfies Record<(typeof WEBHOOK_EVENTS)[number], string>;

export type TriggerEvent = keyof typeof TRIGGER_EVENTS;

export const TRIGGER_EVENT_NAMES = Object.keys(TRIGGER_EVENTS) as TriggerEvent[];

export function isTriggerEvent(name: string): name is TriggerEvent {
  return Object.hasOwn(TRIGGER_EVENTS, name);
}

/** The key scopes each event needs, as the public routes that make those objects would. */
export function triggerScopes(event: TriggerEvent): readonly string[] {
  if (event.startsWith('payout.')) return ['api:payouts:sbp'];
  if (event.startsWith('subscription.')) return ['api:recurrent:bind', 'api:recurrent:charge'];
  if (event.startsWith('token.')) return ['api:recurrent:bind'];
  return [];
}

/** What an event's trigger makes and `set` changes: the object its name begins with. */
export type TriggerKind = 'payment' | 'payout' | 'subscription' | 'token';

export function triggerKind(event: TriggerEvent): TriggerKind {
  return event.slice(0, event.indexOf('.')) as TriggerKind;
}

// The fields `set` may give each kind's object, named and checked as its create takes them; left out are those that would
// change the path to the event (currency, method, trial, bank, the binding's 1 RUB). `metadata`: --set metadata.KEY=VALUE.
export const TRIGGER_SET_FIELDS: Record<TriggerKind, readonly string[]> = {
  payment: ['amount', 'order_id', 'description', 'metadata'],
  payout: ['amount', 'phone', 'full_name'],
  subscription: ['amount', 'plan_name', 'customer_ref', 'customer_email'],
  token: ['customer_ref', 'customer_email'],
};

/** The fields of TRIGGER_SET_FIELDS whose value is a JSON number (`kopek trigger --set` parses them from its string). */
export const TRIGGER_NUMERIC_FIELDS: readonly string[] = ['amount'];

/** What `set` gave, validated; only the fields of the event's kind (TRIGGER_SET_FIELDS) are ever present. */
export interface TriggerSet {
  amount?: number;
  orderId?: string;
  description?: string;
  metadata?: Record<string, string>;
  phone?: string;
  fullName?: string;
  planName?: string;
  customerRef?: string;
  customerEmail?: string;
}

/** The SBP recipient of the trigger's payouts: a known member bank, so the test bank pays as the amount plans. */
export const TRIGGER_RECIPIENT = { phone: '+79990000000', bank_id: '100000000004', full_name: 'Kopek Trigger' };

/** A stand-in for a required field `set` left out: the scenario uses its own default instead, so only the check runs on it. */
const STAND_IN = { amount: 1, customer_ref: 'kopek-trigger' };

/** The fields given a value: a null reads as not set, as the creates read a null. */
function given(obj: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined && v !== null));
}

/** Each kind's fields, read by its create's own checks; returns only those `set` gave. */
const READERS: Record<TriggerKind, (obj: Record<string, unknown>) => TriggerSet> = {
  payment: (obj) => {
    const p = parseCreateBody({ amount: STAND_IN.amount, ...obj }, { merchantId: '', shopId: '', mode: 'test' });
    return { amount: 'amount' in obj ? p.amount : undefined, orderId: p.orderId, description: p.description, metadata: 'metadata' in obj ? p.metadata : undefined };
  },
  payout: (obj) => {
    const p = payoutFields({ ...TRIGGER_RECIPIENT, amount: STAND_IN.amount, ...obj }, 'payouts_sbp', false);
    return { amount: 'amount' in obj ? p.amount : undefined, phone: 'phone' in obj ? p.recipient.phone : undefined, fullName: 'full_name' in obj ? p.recipient.full_name : undefined };
  },
  subscription: (obj) => ({
    amount: amountField(obj, 'amount', false), planName: strField(obj, 'plan_name', { max: PLAN_NAME_MAX }), ...customerOf(obj),
  }),
  token: customerOf,
};

/** The customer fields of a subscription or token, read as the binding's create reads them. */
function customerOf(obj: Record<string, unknown>): TriggerSet {
  const c = customerFields({ customer_ref: STAND_IN.customer_ref, ...obj }, 'test');
  return { customerRef: 'customer_ref' in obj ? c.customerRef : undefined, customerEmail: 'customer_email' in obj ? c.customerEmail : undefined };
}

/** The body's `set` for `event`: unknown fields, bad values (param under `set.`) and amounts whose plan leads elsewhere are 400s. */
export function parseTriggerSet(event: TriggerEvent, raw: unknown): TriggerSet {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw badRequest(`Field "set" must be an object of the fields to set, got ${describe(raw)}`, 'set');
  const kind = triggerKind(event);
  const allowed = TRIGGER_SET_FIELDS[kind];
  for (const k of Object.keys(raw)) {
    if (!allowed.includes(k)) {
      throw badRequest(`Cannot trigger ${event} with ${describe(k)} set: the ${kind} it makes takes ${allowed.join(', ')}`, `set.${k.slice(0, 64)}`);
    }
  }
  const set = underSet(() => READERS[kind](given(raw as Record<string, unknown>)));
  if (set.amount !== undefined) checkPlan(event, set.amount);
  return set;
}

/** Run a create's checks; their 400 keeps its code and message, its param gains the `set.` it has in this body. */
function underSet<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof ApiError && err.param !== undefined) throw new ApiError(err.status, err.code, err.message, `set.${err.param}`);
    throw err;
  }
}

/** What the test bank does with an amount planned so (a failure's words name its code, a success's are by kind). */
const PLAN_WORDS: Record<string, string> = {
  refused: 'the payout router refuses it',
  requires_action: 'the test bank asks the buyer to confirm it',
  pending: 'the test bank never answers it',
};

/** Refuse an amount the test bank would not take to `event` (a pending payment's events take any). */
function checkPlan(event: TriggerEvent, amount: number): void {
  if (event === 'payment.cancelled' || event === 'payment.expired') return;
  const kind = triggerKind(event);
  const want = event === 'payment.failed' || event === 'payout.failed' ? 'failed' : 'succeeded';
  const plan = kind === 'payout' ? payoutPlanForAmount(amount) : planForAmount(amount);
  if (plan.outcome === want) return;
  const words = plan.outcome === 'failed' ? `the test bank refuses it (${plan.failureCode})`
    : plan.outcome === 'succeeded' ? `the test bank ${kind === 'payout' ? 'pays' : 'confirms'} it` : PLAN_WORDS[plan.outcome];
  const cents = String(amount % 100).padStart(2, '0');
  const fits =
    want === 'failed'
      ? `01 (do_not_honor) or 02 (${kind === 'payout' ? 'recipient_not_in_sbp' : 'insufficient_funds'})`
      : kind === 'payout'
        ? '00 or 04 to 99'
        : '00 or 05 to 99';
  throw badRequest(`Cannot trigger ${event} with amount ${amount}: its kopeck part is ${cents} and ${words}; give an amount whose kopeck part is ${fits}`, 'set.amount');
}

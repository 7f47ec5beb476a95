import type { WEBHOOK_EVENTS } from '../../money/webhooks/store';

/**
 * Every webhook event `POST /v1/test/trigger` (and `kopek trigger`) can make happen, each with a line saying
 * what it creates and drives to get there; `kopek trigger --list` prints these lines as they are.
 */
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

/** One event the trigger knows. */
export type TriggerEvent = keyof typeof TRIGGER_EVENTS;

/** The events in the order the list shows them. */
export const TRIGGER_EVENT_NAMES = Object.keys(TRIGGER_EVENTS) as TriggerEvent[];

/** True when `name` is an event the trigger knows. */
export function isTriggerEvent(name: string): name is TriggerEvent {
  return Object.hasOwn(TRIGGER_EVENTS, name);
}

/**
 * The scopes each event needs on the key, the same as the public routes that would make those objects: payments
 * need none; an SBP payout needs its method's scope; tokens bind, and subscriptions bind and charge on their own.
 */
export function triggerScopes(event: TriggerEvent): readonly string[] {
  if (event.startsWith('payout.')) return ['api:payouts:sbp'];
  if (event.startsWith('subscription.')) return ['api:recurrent:bind', 'api:recurrent:charge'];
  if (event.startsWith('token.')) return ['api:recurrent:bind'];
  return [];
}

/** What an event's trigger makes and `set` changes: the object its name begins with. */
export type TriggerKind = 'payment' | 'payout' | 'subscription' | 'token';

/** The object an event's trigger makes (`payment.refunded`: the payment, refunded in full). */
export function triggerKind(event: TriggerEvent): TriggerKind {
  return event.slice(0, event.indexOf('.')) as TriggerKind;
}

/**
 * The fields `set` may give each kind's object, named as that object's create takes them (POST
 * /v1/public/payments, /payouts with method payouts_sbp, /subscriptions, /tokens) and checked the same way.
 * Left out are those that would change the path to the event: the currency, the method, a trial, the bank, a
 * card binding's fixed 1 RUB; `metadata` holds KEY: VALUE pairs (`--set metadata.KEY=VALUE`).
 */
export const TRIGGER_SET_FIELDS: Record<TriggerKind, readonly string[]> = {
  payment: ['amount', 'order_id', 'description', 'metadata'],
  payout: ['amount', 'phone', 'full_name'],
  subscription: ['amount', 'plan_name', 'customer_ref', 'customer_email'],
  token: ['customer_ref', 'customer_email'],
};

/** The fields of TRIGGER_SET_FIELDS whose value is a JSON number (`kopek trigger --set` parses them from its string). */
export const TRIGGER_NUMERIC_FIELDS: readonly string[] = ['amount'];

import type { Tx } from '../../platform/storage/store';
import type { Job } from '../../platform/queue/jobs';
import type { PaymentsCore } from '../../money/payments/core';
import type { PaymentRow } from '../../money/bank-port/payment';
import { openSessionTx, reload } from '../../money/payments/state';
import { getPayment, paymentView } from '../../money/payments/store';
import { tokenView, updateToken } from '../../money/tokens/store';
import { CARD_VERIFICATION_AMOUNT, cancelTokenTx, createBindingTx, reloadToken } from '../../money/tokens/tokens';
import { chargesOf, reloadSubscription, subscriptionView, type SubscriptionRow } from '../../money/subscriptions/store';
import { cancelSubscriptionTx, CANCEL_REASONS, CHARGE_JOB, createSubscriptionTx, runChargeJob } from '../../money/subscriptions/subscriptions';
import { answerNow, settleRefundsNow, TRIGGER_AMOUNT, TRIGGER_CARD, type TriggerObjects, type TriggerShop } from './trigger-payments';
import type { TriggerSet } from './trigger-set';

// How the trigger makes the events of subscriptions and tokens: through their domains' own creates, the payments
// that bind them paid on the test bank now, a periodic charge made by the charge job's own handler now instead of
// at its time, and a refused charge planned through the token's outcome queue (as POST /v1/test/tokens/{id}/outcomes
// plans one). The shop's test clock is only read: nothing here waits for a period, a retry or --sim-delay.

/** The customer reference of the tokens and subscriptions the trigger makes. */
const CUSTOMER_REF = 'kopek-trigger';

/**
 * A monthly card subscription without a trial, activated by its first payment, paid now with the test card;
 * `set` gives its amount, plan name or customer.
 */
async function activeSubscription(core: PaymentsCore, tx: Tx, shop: TriggerShop, event: string, set: TriggerSet): Promise<{ sub: SubscriptionRow; payment: PaymentRow }> {
  const { sub, payment } = await createSubscriptionTx(core, tx, {
    merchantId: shop.merchantId,
    shopId: shop.shopId,
    mode: 'test',
    amount: set.amount ?? TRIGGER_AMOUNT,
    customerRef: set.customerRef ?? CUSTOMER_REF,
    customerEmail: set.customerEmail ?? '',
    planName: set.planName ?? `kopek trigger ${event}`,
    method: 'cards',
    period: 'month',
    intervalCount: 1,
    trialDays: 0,
  });
  const paid = await answerNow(core, tx, await openSessionTx(core, tx, payment), TRIGGER_CARD);
  return { sub: await reloadSubscription(tx, sub.id), payment: paid };
}

/**
 * Charge a subscription's pending period now: its scheduled charge job is cancelled and the job's own handler
 * runs with what that job carries (the period and the attempt); the charge's payment, opened at once on the saved
 * method, is answered by the test bank as planned.
 */
async function chargeNow(core: PaymentsCore, tx: Tx, s: SubscriptionRow): Promise<PaymentRow> {
  const due = await core.scheduler.nextDue(tx, CHARGE_JOB, s.id);
  if (due === null) throw new Error(`cannot charge subscription "${s.id}" now: no charge of it is scheduled`);
  await core.scheduler.cancel(tx, CHARGE_JOB, s.id);
  const job: Job = { id: 0, kind: CHARGE_JOB, subject_id: s.id, shop_id: s.shop_id, mode: s.mode, due_at: due, attempt: 0, payload: { index: s.charge_index, attempt: s.failures + 1 } };
  await runChargeJob(core, tx, job);
  const [latest] = await chargesOf(tx, s.id, 1);
  const charge = latest && latest.kind === 'subscription_charge' ? await getPayment(tx, latest.payment_id) : undefined;
  if (!charge) throw new Error(`cannot charge subscription "${s.id}" now: its charge job made no payment`);
  return answerNow(core, tx, charge);
}

/** The objects of a subscription event: the subscription, its token, and the payment that moved it. */
async function subscriptionObjects(tx: Tx, s: SubscriptionRow, p: PaymentRow): Promise<TriggerObjects> {
  const sub = await reloadSubscription(tx, s.id);
  return { subscription: await subscriptionView(tx, sub), token: tokenView(await reloadToken(tx, sub.token_id)), payment: await paymentView(tx, await reload(tx, p.id)) };
}

/** subscription.activated, .charge_succeeded, .charge_failed, .past_due and .cancelled. */
export async function triggerSubscription(core: PaymentsCore, tx: Tx, shop: TriggerShop, event: string, set: TriggerSet): Promise<TriggerObjects> {
  const { sub, payment } = await activeSubscription(core, tx, shop, event, set);
  if (event === 'subscription.activated') return subscriptionObjects(tx, sub, payment);
  if (event === 'subscription.cancelled') {
    await cancelSubscriptionTx(core, tx, sub, CANCEL_REASONS.merchant);
    return subscriptionObjects(tx, sub, payment);
  }
  // A refused charge: the token's outcome queue plans it, before the magic amounts would (1 attempt of 3: past_due).
  if (event !== 'subscription.charge_succeeded') await updateToken(tx, sub.token_id, { outcomes: JSON.stringify(['fail:insufficient_funds']) });
  const charge = await chargeNow(core, tx, sub);
  return subscriptionObjects(tx, sub, charge);
}

/**
 * token.activated and token.cancelled: a card token bound through its 1 RUB verification payment, paid now with
 * the test card; the verification is returned as banks return it, and the test bank settles that refund now.
 * `set` gives the token's customer_ref or customer_email.
 */
export async function triggerToken(core: PaymentsCore, tx: Tx, shop: TriggerShop, event: string, set: TriggerSet): Promise<TriggerObjects> {
  const { token, payment } = await createBindingTx(core, tx, {
    merchantId: shop.merchantId,
    shopId: shop.shopId,
    mode: 'test',
    customerRef: set.customerRef ?? CUSTOMER_REF,
    customerEmail: set.customerEmail ?? '',
    method: 'cards',
    amount: CARD_VERIFICATION_AMOUNT,
    kind: 'token_binding',
    description: `kopek trigger ${event}`,
  });
  const paid = await answerNow(core, tx, await openSessionTx(core, tx, payment), TRIGGER_CARD);
  await settleRefundsNow(core, tx, paid.id);
  let t = await reloadToken(tx, token.id);
  if (event === 'token.cancelled') t = await cancelTokenTx(core, tx, t);
  return { token: tokenView(t), payment: await paymentView(tx, await reload(tx, paid.id)) };
}

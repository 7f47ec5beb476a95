import type { Tx } from '../../platform/storage/store';
import type { Job } from '../../platform/queue/jobs';
import type { PaymentsCore } from '../../money/payments/core';
import type { PaymentRow, PaymentView, RefundView } from '../../money/bank-port/payment';
import { createPaymentTx } from '../../money/payments/create';
import { cancelTx, chooseMethodTx, expireTx, openSessionTx, paymentAnswered, reload } from '../../money/payments/state';
import { getPayment, paymentView, refundView, refundsOf } from '../../money/payments/store';
import { createRefundTx } from '../../money/refunds/refunds';
import { shopAvailable } from '../../money/ledger/ledger';
import { createPayoutTx, payoutView } from '../../money/payouts/payouts';
import { getPayout } from '../../money/payouts/store';
import { tokenView, updateToken, type TokenView } from '../../money/tokens/store';
import { CARD_VERIFICATION_AMOUNT, cancelTokenTx, createBindingTx, reloadToken } from '../../money/tokens/tokens';
import { chargesOf, reloadSubscription, subscriptionView, type SubscriptionRow, type SubscriptionView } from '../../money/subscriptions/store';
import { cancelSubscriptionTx, CANCEL_REASONS, CHARGE_JOB, createSubscriptionTx, runChargeJob } from '../../money/subscriptions/subscriptions';
import { plannedAnswer, SIM_RESOLVE_JOB, answerRefund, REFUND_SETTLE_JOB, answerPlannedPayout, SETTLE_JOB } from './test-bank';
import { maskPan } from './plan';
import { TRIGGER_RECIPIENT, type TriggerEvent, type TriggerKind, type TriggerSet } from './trigger-events';

// Every object is made by its domain's own create and moved by the test bank's answers given now, so the state machine,
// ledger, webhooks and stream see ordinary objects. Nothing waits for a period, retry or --sim-delay; the clock is only read.

/** Whose objects the trigger makes: the key's merchant and shop (always test mode), and the key for the audit log. */
export interface TriggerShop {
  merchantId: string;
  shopId: string;
  keyId: string;
}

function testOwner(shop: TriggerShop): { merchantId: string; shopId: string; mode: 'test' } {
  return { merchantId: shop.merchantId, shopId: shop.shopId, mode: 'test' };
}

/** The objects a trigger made, as the API's GET routes show them. */
export interface TriggerObjects {
  payment?: PaymentView;
  refund?: RefundView;
  payout?: Record<string, unknown>;
  subscription?: SubscriptionView;
  token?: TokenView;
}

/** 100 RUB: the kopeck part 00 is the test bank's plan to succeed (magic amounts, docs/testing.md). */
const TRIGGER_AMOUNT = 10_000;
/** 100.01 RUB: the kopeck part 01 is the test bank's plan to refuse with do_not_honor. */
const REFUSED_AMOUNT = 10_001;

/** A card the test bank accepts, as the hosted page's card form would report it (brand, mask, holder only). */
const TRIGGER_CARD = { brand: 'mir', mask: maskPan('2200000000000004'), holder: 'KOPEK TRIGGER' };

/** A pending payment as POST /v1/public/payments creates one; `set` applies, metadata keeps kopek_trigger beside its keys. */
async function newPayment(core: PaymentsCore, tx: Tx, shop: TriggerShop, event: string, amount = TRIGGER_AMOUNT, set: TriggerSet = {}): Promise<PaymentRow> {
  return createPaymentTx(core, tx, {
    ...testOwner(shop),
    amount: set.amount ?? amount,
    currency: 'RUB',
    method: 'any',
    orderId: set.orderId,
    description: set.description ?? `kopek trigger ${event}`,
    metadata: { ...set.metadata, kopek_trigger: event },
  });
}

/** The test bank's planned answer given now (its resolve job is cancelled); `card` is what a card form reported. */
async function answerNow(core: PaymentsCore, tx: Tx, p: PaymentRow, card?: typeof TRIGGER_CARD): Promise<PaymentRow> {
  const answer = plannedAnswer(p);
  if (!answer) throw new Error(`cannot answer payment "${p.id}" now: the test bank planned no answer for it`);
  if (card && answer.outcome === 'succeeded') answer.card = card;
  await paymentAnswered(core, tx, p, answer);
  await core.scheduler.cancel(tx, SIM_RESOLVE_JOB, p.id);
  return reload(tx, p.id);
}

/** A payment paid by SBP: created, its bank session opened by the service, and answered by the test bank as planned. */
async function paidPayment(core: PaymentsCore, tx: Tx, shop: TriggerShop, event: string, amount: number, set: TriggerSet = {}): Promise<PaymentRow> {
  const created = await newPayment(core, tx, shop, event, amount, set);
  const chosen = await chooseMethodTx(core, tx, created, 'sbp');
  return answerNow(core, tx, await openSessionTx(core, tx, chosen));
}

/** payment.*: an SBP payment confirmed or refused (01); cancelled by the merchant; expired now (link_expired); refunded in full, settled now. */
async function triggerPayment(core: PaymentsCore, tx: Tx, shop: TriggerShop, event: TriggerEvent, set: TriggerSet): Promise<TriggerObjects> {
  if (event === 'payment.cancelled' || event === 'payment.expired') {
    const p = await newPayment(core, tx, shop, event, TRIGGER_AMOUNT, set);
    return { payment: await paymentView(tx, event === 'payment.cancelled' ? await cancelTx(core, tx, p) : await expireTx(core, tx, p)) };
  }
  const paid = await paidPayment(core, tx, shop, event, event === 'payment.failed' ? REFUSED_AMOUNT : TRIGGER_AMOUNT, set);
  if (event !== 'payment.refunded') return { payment: await paymentView(tx, paid) };
  const r = await createRefundTx(core, tx, paid, { amount: paid.amount, reason: `kopek trigger ${event}`, keyId: shop.keyId });
  await settleRefundsNow(core, tx, paid.id);
  const refund = (await refundsOf(tx, paid.id)).find((x) => x.id === r.id)!;
  return { payment: await paymentView(tx, await reload(tx, paid.id)), refund: refundView(refund) };
}

/** Settle now every pending refund of a payment, as the test bank's settle job would after --sim-delay. */
async function settleRefundsNow(core: PaymentsCore, tx: Tx, paymentId: string): Promise<void> {
  for (const r of await refundsOf(tx, paymentId)) {
    if (r.status !== 'pending') continue;
    await answerRefund(core, tx, r.id);
    await core.scheduler.cancel(tx, REFUND_SETTLE_JOB, r.id);
  }
}

/** payout.*: an SBP payout answered now as planned, after a paid payment of any shortfall (rounded up to whole roubles). */
async function triggerPayout(core: PaymentsCore, tx: Tx, shop: TriggerShop, event: TriggerEvent, set: TriggerSet): Promise<TriggerObjects> {
  const amount = set.amount ?? (event === 'payout.succeeded' ? TRIGGER_AMOUNT : REFUSED_AMOUNT);
  const out: TriggerObjects = {};
  const short = amount - (await shopAvailable(tx, shop.shopId, 'test'));
  if (short > 0) out.payment = await paymentView(tx, await paidPayment(core, tx, shop, event, Math.ceil(short / 100) * 100));
  const recipient = { ...TRIGGER_RECIPIENT, phone: set.phone ?? TRIGGER_RECIPIENT.phone, full_name: set.fullName ?? TRIGGER_RECIPIENT.full_name };
  const created = await createPayoutTx(core, tx, testOwner(shop), { method: 'payouts_sbp', amount, recipient });
  await answerPlannedPayout(core, tx, created.id);
  await core.scheduler.cancel(tx, SETTLE_JOB, created.id);
  out.payout = payoutView((await getPayout(tx, created.id))!);
  return out;
}

const CUSTOMER_REF = 'kopek-trigger';

/** A monthly card subscription without a trial, activated by its first payment, paid now with the test card. */
async function activeSubscription(core: PaymentsCore, tx: Tx, shop: TriggerShop, event: string, set: TriggerSet): Promise<{ sub: SubscriptionRow; payment: PaymentRow }> {
  const { sub, payment } = await createSubscriptionTx(core, tx, {
    ...testOwner(shop),
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

/** Charge a subscription's pending period now: its charge job is cancelled and the job's handler runs with its payload. */
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

async function subscriptionObjects(tx: Tx, s: SubscriptionRow, p: PaymentRow): Promise<TriggerObjects> {
  const sub = await reloadSubscription(tx, s.id);
  return { subscription: await subscriptionView(tx, sub), token: tokenView(await reloadToken(tx, sub.token_id)), payment: await paymentView(tx, await reload(tx, p.id)) };
}

async function triggerSubscription(core: PaymentsCore, tx: Tx, shop: TriggerShop, event: TriggerEvent, set: TriggerSet): Promise<TriggerObjects> {
  const { sub, payment } = await activeSubscription(core, tx, shop, event, set);
  if (event === 'subscription.cancelled') await cancelSubscriptionTx(core, tx, sub, CANCEL_REASONS.merchant);
  if (event === 'subscription.activated' || event === 'subscription.cancelled') return subscriptionObjects(tx, sub, payment);
  // A refused charge: the token's outcome queue plans it, before the magic amounts would (1 attempt of 3: past_due).
  if (event !== 'subscription.charge_succeeded') await updateToken(tx, sub.token_id, { outcomes: JSON.stringify(['fail:insufficient_funds']) });
  return subscriptionObjects(tx, sub, await chargeNow(core, tx, sub));
}

/** token.activated and .cancelled: a card bound through its 1 RUB verification, paid now; the verification's refund settles now. */
async function triggerToken(core: PaymentsCore, tx: Tx, shop: TriggerShop, event: TriggerEvent, set: TriggerSet): Promise<TriggerObjects> {
  const { token, payment } = await createBindingTx(core, tx, {
    ...testOwner(shop),
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

/** How each kind of event is made: the objects it creates and drives (with the fields `set` gave), all in the caller's transaction. */
export const SCENARIOS: Record<TriggerKind, (core: PaymentsCore, tx: Tx, shop: TriggerShop, event: TriggerEvent, set: TriggerSet) => Promise<TriggerObjects>> = {
  payment: triggerPayment,
  payout: triggerPayout,
  subscription: triggerSubscription,
  token: triggerToken,
};

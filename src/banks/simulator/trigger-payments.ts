import type { Tx } from '../../platform/storage/store';
import type { PaymentsCore } from '../../money/payments/core';
import type { TokenView } from '../../money/tokens/store';
import type { SubscriptionView } from '../../money/subscriptions/store';
import type { PaymentRow, PaymentView, RefundView } from '../../money/bank-port/payment';
import { createPaymentTx } from '../../money/payments/create';
import { cancelTx, chooseMethodTx, expireTx, openSessionTx, reload } from '../../money/payments/state';
import { paymentAnswered } from '../../money/payments/bank-answers';
import { paymentView, refundView, refundsOf } from '../../money/payments/store';
import { createRefundTx } from '../../money/refunds/refunds';
import { shopAvailable } from '../../money/ledger/store';
import { createPayoutTx, payoutView } from '../../money/payouts/payouts';
import { getPayout } from '../../money/payouts/store';
import { plannedAnswer, SIM_RESOLVE_JOB } from './payments';
import { answerRefund, REFUND_SETTLE_JOB } from './refunds';
import { answerPlannedPayout, SETTLE_JOB } from './payouts';
import { maskPan } from './cards';
import { TRIGGER_RECIPIENT, type TriggerSet } from './trigger-set';

// How the trigger makes the events of payments, refunds and payouts: each object is made by the domain's own
// create, and moved by the test bank's own answers given now (the entry points its jobs, the simulate helpers
// and the buyer's page use), so the state machine, the ledger, the webhooks and the stream see an ordinary
// object. Nothing waits for --sim-delay and the shop's test clock is only read.

/** Whose objects the trigger makes: the key's merchant and shop (always test mode), and the key for the audit log. */
export interface TriggerShop {
  merchantId: string;
  shopId: string;
  keyId: string;
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
export const TRIGGER_AMOUNT = 10_000;
/** 100.01 RUB: the kopeck part 01 is the test bank's plan to refuse with do_not_honor. */
const REFUSED_AMOUNT = 10_001;

/** A card the test bank accepts, as the hosted page's card form would report it (brand, mask, holder only). */
export const TRIGGER_CARD = { brand: 'mir', mask: maskPan('2200000000000004'), holder: 'KOPEK TRIGGER' };

/** Metadata on the payments the trigger makes, so a webhook handler can tell them from others. */
function metadataFor(event: string): Record<string, string> {
  return { kopek_trigger: event };
}

/**
 * A pending payment of the shop, created as POST /v1/public/payments creates one; `set` (checked by that route's
 * own checks) replaces its amount, order id, description, or adds metadata keys beside the trigger's own.
 */
export async function newPayment(core: PaymentsCore, tx: Tx, shop: TriggerShop, event: string, amount = TRIGGER_AMOUNT, set: TriggerSet = {}): Promise<PaymentRow> {
  return createPaymentTx(core, tx, {
    merchantId: shop.merchantId,
    shopId: shop.shopId,
    mode: 'test',
    amount: set.amount ?? amount,
    currency: 'RUB',
    method: 'any',
    orderId: set.orderId,
    description: set.description ?? `kopek trigger ${event}`,
    metadata: { ...set.metadata, ...metadataFor(event) },
  });
}

/**
 * The test bank gives now the answer it planned for a processing payment (what its resolve job would give after
 * --sim-delay); that job is cancelled, as it would find the payment closed. `card` is what a card form reported.
 */
export async function answerNow(core: PaymentsCore, tx: Tx, p: PaymentRow, card?: typeof TRIGGER_CARD): Promise<PaymentRow> {
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

/** payment.succeeded and payment.failed: an SBP payment the test bank confirms, or refuses (amount ending in 01). */
export async function triggerPaid(core: PaymentsCore, tx: Tx, shop: TriggerShop, event: 'payment.succeeded' | 'payment.failed', set: TriggerSet): Promise<TriggerObjects> {
  const p = await paidPayment(core, tx, shop, event, event === 'payment.succeeded' ? TRIGGER_AMOUNT : REFUSED_AMOUNT, set);
  return { payment: await paymentView(tx, p) };
}

/** payment.cancelled: the merchant's cancel of a pending payment. */
export async function triggerCancelled(core: PaymentsCore, tx: Tx, shop: TriggerShop, set: TriggerSet): Promise<TriggerObjects> {
  const p = await cancelTx(core, tx, await newPayment(core, tx, shop, 'payment.cancelled', TRIGGER_AMOUNT, set));
  return { payment: await paymentView(tx, p) };
}

/** payment.expired: a pending payment's link ends now, as the simulate helper's `expire` ends it (link_expired). */
export async function triggerExpired(core: PaymentsCore, tx: Tx, shop: TriggerShop, set: TriggerSet): Promise<TriggerObjects> {
  const p = await expireTx(core, tx, await newPayment(core, tx, shop, 'payment.expired', TRIGGER_AMOUNT, set));
  return { payment: await paymentView(tx, p) };
}

/** Settle now every pending refund of a payment, as the test bank's settle job would after --sim-delay. */
export async function settleRefundsNow(core: PaymentsCore, tx: Tx, paymentId: string): Promise<void> {
  for (const r of await refundsOf(tx, paymentId)) {
    if (r.status !== 'pending') continue;
    await answerRefund(core, tx, r.id);
    await core.scheduler.cancel(tx, REFUND_SETTLE_JOB, r.id);
  }
}

/** payment.refunded: a succeeded payment refunded in full through the refunds domain; the test bank settles it now. */
export async function triggerRefunded(core: PaymentsCore, tx: Tx, shop: TriggerShop, set: TriggerSet): Promise<TriggerObjects> {
  const event = 'payment.refunded';
  const paid = await paidPayment(core, tx, shop, event, TRIGGER_AMOUNT, set);
  const r = await createRefundTx(core, tx, paid, { amount: paid.amount, reason: `kopek trigger ${event}`, keyId: shop.keyId });
  await settleRefundsNow(core, tx, paid.id);
  const refund = (await refundsOf(tx, paid.id)).find((x) => x.id === r.id)!;
  return { payment: await paymentView(tx, await reload(tx, paid.id)), refund: refundView(refund) };
}

/**
 * payout.succeeded and payout.failed: an SBP payout created as POST /v1/public/payouts creates one, answered now
 * by the test bank as planned (amount ending in 01 refuses). When the shop's available test balance does not
 * cover it, a paid payment of the shortfall (rounded up to whole roubles: a kopeck part of 00, which the test bank confirms) comes first.
 * `set` gives the payout's amount, phone or full_name; the funding payment is the trigger's own.
 */
export async function triggerPayout(core: PaymentsCore, tx: Tx, shop: TriggerShop, event: 'payout.succeeded' | 'payout.failed', set: TriggerSet): Promise<TriggerObjects> {
  const amount = set.amount ?? (event === 'payout.succeeded' ? TRIGGER_AMOUNT : REFUSED_AMOUNT);
  const out: TriggerObjects = {};
  const short = amount - (await shopAvailable(tx, shop.shopId, 'test'));
  if (short > 0) out.payment = await paymentView(tx, await paidPayment(core, tx, shop, event, Math.ceil(short / 100) * 100));
  const payer = { merchantId: shop.merchantId, shopId: shop.shopId, mode: 'test' as const };
  const recipient = { ...TRIGGER_RECIPIENT, phone: set.phone ?? TRIGGER_RECIPIENT.phone, full_name: set.fullName ?? TRIGGER_RECIPIENT.full_name };
  const created = await createPayoutTx(core, tx, payer, { method: 'payouts_sbp', amount, recipient });
  await answerPlannedPayout(core, tx, created.id);
  await core.scheduler.cancel(tx, SETTLE_JOB, created.id);
  out.payout = payoutView((await getPayout(tx, created.id))!);
  return out;
}

import type { Core } from '../core/core';
import type { Tx } from '../../platform/storage/store';
import type { Job } from '../../platform/queue/jobs';
import { DAY_MS } from '../../platform/util/time';
import { uuid } from '../../platform/util/ids';
import { cancelTx } from '../payments/state';
import { getPayment, metadataOf } from '../payments/store';
import type { PaymentRow } from '../bank-port/payment';
import type { PaymentsCore } from '../payments/core';
import { chargeMade, getToken, type RecurrentPaymentRow } from '../tokens/store';
import { activateTokenTx, CARD_VERIFICATION_AMOUNT, cancelTokenTx, chargedTx, chargeTokenTx, createBindingTx, type BindingInput } from '../tokens/tokens';
import { chargeTime, firstIndexAfter, type Period } from './calendar';
import { chargeStateOf, getSubscription, insertSubscription, patchSubscription, reloadSubscription, subscriptionView, updateSubscription, type ChargeRow, type SubscriptionRow } from './store';

/** Payload: the period `index` and the `attempt`, 1 to 3. */
export const CHARGE_JOB = 'subscription.charge';
const MAX_FAILED_CHARGES = 3;
/** Retries 2 and 3, after the period's time T: T + 1 day, then T + 4 days. */
const RETRY_AFTER_MS = [DAY_MS, DAY_MS + 3 * DAY_MS] as const;
/** cancel_reason of the automatic cancellations. */
export const CANCEL_REASONS = { chargesFailed: 'charge_failed', tokenCancelled: 'token_cancelled', merchant: 'merchant_request' } as const;

type SubscriptionCore = Pick<Core, 'clocks' | 'events' | 'scheduler'>;

/** Its binding's shop, customer and method, the amount of each charge, and the plan. */
type SubscriptionInput = Omit<BindingInput, 'kind' | 'description' | 'subscriptionId'> & { planName: string; period: Period; intervalCount: number; trialDays: number };

/** `latest`: the subscription's newest payment, when the caller holds it. */
async function emit(core: Pick<Core, 'clocks' | 'events'>, tx: Tx, s: SubscriptionRow, kind: string, payload: Record<string, unknown>, webhook: string | null, latest?: ChargeRow): Promise<void> {
  const data = webhook ? await subscriptionView(tx, s, latest) : undefined;
  await core.events.append(tx, {
    merchantId: s.merchant_id, shopId: s.shop_id, mode: s.mode, kind, payload: { id: s.id, ...payload },
    at: await core.clocks.now(tx, s.shop_id, s.mode),
    webhook: webhook ? { event: webhook, data, url: null } : undefined,
  });
}

async function emitStatus(core: Pick<Core, 'clocks' | 'events'>, tx: Tx, s: SubscriptionRow, webhook: string | null, latest?: ChargeRow): Promise<void> {
  await emit(core, tx, s, 'subscription.status_changed', { status: s.status }, webhook, latest);
}

/** A pending subscription, its pending token and the initial payment (full amount, or 1 RUB in a trial). */
export async function createSubscriptionTx(core: PaymentsCore, tx: Tx, input: SubscriptionInput): Promise<{ sub: SubscriptionRow; payment: PaymentRow }> {
  const id = uuid();
  const amount = input.trialDays > 0 ? CARD_VERIFICATION_AMOUNT : input.amount;
  const binding = { kind: 'subscription_init' as const, description: input.planName, subscriptionId: id };
  const { token, payment } = await createBindingTx(core, tx, { ...input, amount, ...binding });
  await insertSubscription(tx, {
    id, merchant_id: input.merchantId, shop_id: input.shopId, mode: input.mode, customer_ref: input.customerRef,
    customer_email: input.customerEmail, plan_name: input.planName, amount: input.amount, currency: 'RUB',
    method: input.method, period: input.period, interval_count: input.intervalCount,
    trial_days: input.trialDays, token_id: token.id, initial_payment_id: payment.id,
    created_at: payment.created_at,
  });
  const sub = await reloadSubscription(tx, id);
  await emitStatus(core, tx, sub, null);
  return { sub, payment };
}

async function scheduleCharge(scheduler: Core['scheduler'], tx: Tx, s: SubscriptionRow, index: number, attempt: number, dueAt: number): Promise<void> {
  await scheduler.schedule(tx, { kind: CHARGE_JOB, subjectId: s.id, shopId: s.shop_id, mode: s.mode, dueAt, payload: { index, attempt } });
}

/** The calendar is anchored: with a trial the first charge is at its end; without, the initial payment paid period 0. */
export async function activateTx(core: SubscriptionCore, tx: Tx, s: SubscriptionRow, initial: PaymentRow, at: number): Promise<void> {
  if (s.status !== 'pending') return;
  const token = await getToken(tx, s.token_id);
  if (token) await activateTokenTx(core, tx, token, initial);
  const trial = s.trial_days > 0;
  const anchor = trial ? at + s.trial_days * DAY_MS : at;
  const index = trial ? 0 : 1;
  const next = chargeTime(anchor, s.period, s.interval_count, index);
  await updateSubscription(tx, s.id, {
    status: 'active', activated_at: at, anchor_at: anchor, charge_index: index, next_charge_at: next,
    trial_end: trial ? anchor : null,
  });
  const sub = await reloadSubscription(tx, s.id);
  await scheduleCharge(core.scheduler, tx, sub, index, 1, next);
  await emitStatus(core, tx, sub, 'subscription.activated');
}

/** Charges the period the job names, unless the subscription moved on meanwhile. */
export async function runChargeJob(core: PaymentsCore, tx: Tx, job: Job): Promise<void> {
  const s = await chargeStateOf(tx, job.subject_id);
  if (!s || (s.status !== 'active' && s.status !== 'past_due')) return;
  const index = Number(job.payload.index);
  const attempt = Number(job.payload.attempt);
  if (s.charge_index !== index || s.failures + 1 !== attempt) return;
  if (await chargeMade(tx, s.id, index, attempt)) return;
  const token = await getToken(tx, s.token_id);
  if (!token || token.status !== 'active') {
    await cancelSubscriptionTx(core, tx, await reloadSubscription(tx, s.id), CANCEL_REASONS.tokenCancelled);
    return;
  }
  await chargeTokenTx(core, tx, token, {
    amount: s.amount, kind: 'subscription_charge', subscriptionId: s.id, chargeIndex: index, attempt,
    orderId: `sub_${s.id.slice(0, 8)}_${index}`, description: s.plan_name,
  });
}

/** T, T + 1 day, T + 4 days (T on the anchor's calendar). */
function attemptTime(s: SubscriptionRow, attempt: number): number {
  const scheduled = chargeTime(s.anchor_at!, s.period, s.interval_count, s.charge_index);
  return attempt <= 1 ? scheduled : scheduled + RETRY_AFTER_MS[attempt - 2];
}

/**
 * Success: the next charge is the first calendar date after this attempt's own time (a retry a day late never charges
 * two periods). Failure or expiry: past_due with the next retry; the third in a row cancels.
 */
export async function chargeSettledTx(core: SubscriptionCore, tx: Tx, rp: RecurrentPaymentRow, p: PaymentRow, at: number): Promise<void> {
  const s = await getSubscription(tx, rp.subscription_id ?? '');
  if (!s || (s.status !== 'active' && s.status !== 'past_due') || s.anchor_at === null) return;
  if (rp.charge_index !== s.charge_index || rp.attempt !== s.failures + 1) return;
  const charge = { payment_id: p.id, amount: p.amount, attempt: rp.attempt };
  // Charges run in (period, attempt) order, so this is the subscription's newest payment.
  const latest: ChargeRow = { payment_id: p.id, kind: 'subscription_charge', charge_index: rp.charge_index, attempt: rp.attempt, amount: p.amount, status: p.status, metadata: p.metadata, created_at: p.created_at };
  if (p.status === 'succeeded') {
    await chargedTx(tx, s.token_id, at);
    const n = firstIndexAfter(s.anchor_at, s.period, s.interval_count, s.charge_index + 1, attemptTime(s, rp.attempt));
    const next = chargeTime(s.anchor_at, s.period, s.interval_count, n);
    const sub = await patchSubscription(tx, s, { status: 'active', failures: 0, charge_index: n, next_charge_at: next });
    await scheduleCharge(core.scheduler, tx, sub, n, 1, next);
    await emit(core, tx, sub, 'subscription.charge_succeeded', charge, 'subscription.charge_succeeded', latest);
    if (s.status === 'past_due') await emitStatus(core, tx, sub, null);
    return;
  }
  const failures = rp.attempt;
  const failure = { ...charge, failure_code: metadataOf(p).failure_code ?? '' };
  if (failures >= MAX_FAILED_CHARGES) {
    await updateSubscription(tx, s.id, { status: 'cancelled', failures, next_charge_at: null, cancel_reason: CANCEL_REASONS.chargesFailed, cancelled_at: at });
    await core.scheduler.cancel(tx, CHARGE_JOB, s.id);
    const sub = await reloadSubscription(tx, s.id);
    await emit(core, tx, sub, 'subscription.charge_failed', failure, 'subscription.charge_failed', latest);
    await emitStatus(core, tx, sub, 'subscription.cancelled', latest);
    return;
  }
  const retryAt = Math.max(attemptTime(s, failures + 1), at);
  const sub = await patchSubscription(tx, s, { status: 'past_due', failures, next_charge_at: retryAt });
  await scheduleCharge(core.scheduler, tx, sub, s.charge_index, failures + 1, retryAt);
  await emit(core, tx, sub, 'subscription.charge_failed', failure, 'subscription.charge_failed', latest);
  if (s.status === 'active') await emitStatus(core, tx, sub, 'subscription.past_due', latest);
}

/** A cancelled one is left as it is; a pending one cancels its pending initial payment and its unbound token. */
export async function cancelSubscriptionTx(core: PaymentsCore, tx: Tx, s: SubscriptionRow, reason: string): Promise<SubscriptionRow> {
  if (s.status === 'cancelled') return s;
  const now = await core.clocks.now(tx, s.shop_id, s.mode);
  await updateSubscription(tx, s.id, { status: 'cancelled', cancelled_at: now, cancel_reason: reason, next_charge_at: null });
  await core.scheduler.cancel(tx, CHARGE_JOB, s.id);
  if (s.status === 'pending') {
    const initial = await getPayment(tx, s.initial_payment_id);
    if (initial && initial.status === 'pending') await cancelTx(core, tx, initial);
    const token = await getToken(tx, s.token_id);
    if (token && token.status === 'pending') await cancelTokenTx(core, tx, token);
  }
  const sub = await reloadSubscription(tx, s.id);
  await emitStatus(core, tx, sub, 'subscription.cancelled');
  return sub;
}

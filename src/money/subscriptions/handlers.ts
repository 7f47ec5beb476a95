import type { Reader } from '../../platform/storage/store';
import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../core/core';
import type { PaymentsCore } from '../payments/core';
import { ApiError, badRequest, notFound } from '../../platform/http/errors';
import { amountField, bodyObject, currencyField, enumField, intField, strField } from '../../platform/http/body';
import { idempotentCreate } from '../idempotency/idempotency';
import { isUuid } from '../../platform/util/ids';
import { iso, isoOrNull } from '../../platform/util/time';
import { parseRegisterQuery, toPage } from '../registers/query';
import { registerRows, REGISTERS } from '../registers/plan';
import { customerFields, recurrentFilters, tokenOfShop } from '../tokens/handlers';
import { TOKEN_METHODS } from '../tokens/store';
import { cancelTokenTx } from '../tokens/tokens';
import { chargeTime, firstIndexAfter, PERIODS } from './calendar';
import { chargesOf, getSubscription, SUBSCRIPTION_STATUSES, subscriptionSummary, subscriptionView } from './store';
import type { SubscriptionRow, SubscriptionView } from './store';
import { cancelSubscriptionTx, CANCEL_REASONS, createSubscriptionTx } from './subscriptions';

const CHARGE_SCOPE = 'api:recurrent:charge';
export const INTERVAL_MAX = 365;
export const TRIAL_DAYS_MAX = 365;
/** How many future charge times the schedule lists. */
export const UPCOMING_COUNT = 12;
/** How many past payments the schedule lists (the latest ones; the payment register has them all). */
export const CHARGES_MAX = 1000;
export const PLAN_NAME_MAX = 200;

const CREATE_FIELDS = ['amount', 'customer_ref', 'method', 'period', 'interval_count', 'trial_days', 'customer_email', 'plan_name', 'return_url', 'currency'];

/** A subscription of the caller's shop and mode, or 404 (another shop's id looks the same as none). */
async function subscriptionOfShop(q: Reader, ctx: Ctx, id: string): Promise<SubscriptionRow> {
  const auth = ctx.auth!;
  const s = isUuid(id) ? await getSubscription(q, id) : undefined;
  if (!s || s.shop_id !== auth.shopId || s.mode !== auth.mode) throw notFound(`Cannot find subscription "${id.slice(0, 64)}"`);
  return s;
}

/** POST /v1/public/subscriptions: 201 {subscription, initial_payment, pay_url}. */
export async function createSubscription(ctx: Ctx<PaymentsCore>): Promise<Reply> {
  const auth = ctx.auth!;
  // The route needs api:recurrent:bind; the charges a subscription makes later, without a key, are
  // authorised now: decisions.md asks api:recurrent:charge for them, on the key and on the shop.
  if (!auth.scopes.has(CHARGE_SCOPE)) {
    throw new ApiError(403, 'scope_required', `Cannot create a subscription: it charges the saved method on its own, so the key needs scope "${CHARGE_SCOPE}"`);
  }
  const obj = bodyObject(ctx.body, CREATE_FIELDS);
  const amount = amountField(obj, 'amount', true)!;
  currencyField(obj);
  const method = enumField(obj, 'method', TOKEN_METHODS, 'cards')!;
  const period = enumField(obj, 'period', PERIODS, 'month')!;
  const intervalCount = intField(obj, 'interval_count', { min: 1, max: INTERVAL_MAX }) ?? 1;
  const trialDays = intField(obj, 'trial_days', { min: 0, max: TRIAL_DAYS_MAX }) ?? 0;
  if (trialDays > 0 && method === 'tpay') {
    throw badRequest(`Field "trial_days" must be 0 for method tpay (trials bind cards and sbp only), got ${trialDays}`, 'trial_days');
  }
  const planName = strField(obj, 'plan_name', { max: PLAN_NAME_MAX }) ?? '';
  const customer = customerFields(obj, auth.mode);
  const reply = await idempotentCreate(ctx, async (tx) => {
    const input = { merchantId: auth.merchantId, shopId: auth.shopId, mode: auth.mode, amount, ...customer, planName, method, period, intervalCount, trialDays };
    const { sub, payment } = await createSubscriptionTx(ctx.app, tx, input);
    return {
      status: 201,
      body: {
        subscription: subscriptionSummary(sub),
        initial_payment: { id: payment.id, status: payment.status, amount: payment.amount },
        pay_url: `${ctx.app.payPageUrl}/pay/${payment.id}`,
      },
    };
  });
  if ('body' in reply) ctx.logExtra = { subscription_id: ((reply.body as { subscription: { id: string } }).subscription).id };
  return reply;
}

export async function getSubscriptionHandler(ctx: Ctx<Pick<Core, 'store'>>): Promise<Reply> {
  return { body: await subscriptionView(ctx.app.store, await subscriptionOfShop(ctx.app.store, ctx, ctx.params.id)) };
}

/** GET /v1/public/subscriptions?customer_ref=: the key's shop and mode, newest first, register pagination. */
export async function listSubscriptions(ctx: Ctx<Pick<Core, 'store'>>): Promise<Reply> {
  const auth = ctx.auth!;
  const rq = parseRegisterQuery(ctx.query, { statuses: SUBSCRIPTION_STATUSES, extra: { customer_ref: [] } });
  const rows = await registerRows<SubscriptionRow>(ctx.app.store, REGISTERS.subscriptions, auth.shopId, [auth.mode], recurrentFilters(rq), rq);
  const page = toPage(rows, rq, (s) => s);
  // Each view reads the subscription's latest charge: one after another, in the page's order.
  const items: SubscriptionView[] = [];
  for (const s of page.items) items.push(await subscriptionView(ctx.app.store, s));
  return { body: { items, next_cursor: page.next_cursor } };
}

/** The next charge times: next_charge_at (a retry when past_due), then the anchor's calendar after it. */
function upcomingOf(s: SubscriptionRow): number[] {
  if ((s.status !== 'active' && s.status !== 'past_due') || s.anchor_at === null || s.next_charge_at === null) return [];
  const out = [s.next_charge_at];
  let n = firstIndexAfter(s.anchor_at, s.period, s.interval_count, s.charge_index + 1, s.next_charge_at);
  while (out.length < UPCOMING_COUNT) out.push(chargeTime(s.anchor_at, s.period, s.interval_count, n++));
  return out;
}

export async function getSchedule(ctx: Ctx<Pick<Core, 'store'>>): Promise<Reply> {
  const s = await subscriptionOfShop(ctx.app.store, ctx, ctx.params.id);
  const body = {
    subscription_id: s.id, status: s.status, amount: s.amount, currency: s.currency, period: s.period,
    interval_count: s.interval_count, next_charge_at: isoOrNull(s.next_charge_at),
    charges: await chargesOf(ctx.app.store, s.id, CHARGES_MAX), upcoming: upcomingOf(s).map(iso),
  };
  return { body };
}

/** POST /v1/public/subscriptions/{id}/cancel {reason?}: from any status; cancelling again changes nothing. */
export async function cancelSubscription(ctx: Ctx<PaymentsCore>): Promise<Reply> {
  const obj = bodyObject(ctx.body, ['reason']);
  const reason = strField(obj, 'reason', { max: 500 }) ?? CANCEL_REASONS.merchant;
  const id = ctx.params.id;
  const s = await ctx.app.store.write(async (tx) => cancelSubscriptionTx(ctx.app, tx, await subscriptionOfShop(tx, ctx, id), reason));
  return { body: { status: s.status } };
}

/** POST /v1/public/tokens/{id}/cancel: here, above both domains, because the subscription charging it is cancelled too. */
export async function cancelToken(ctx: Ctx<PaymentsCore>): Promise<Reply> {
  bodyObject(ctx.body, []);
  const id = ctx.params.id;
  const t = await ctx.app.store.write(async (tx) => {
    const next = await cancelTokenTx(ctx.app, tx, await tokenOfShop(tx, ctx, id));
    const sub = next.subscription_id ? await getSubscription(tx, next.subscription_id) : undefined;
    if (sub) await cancelSubscriptionTx(ctx.app, tx, sub, CANCEL_REASONS.tokenCancelled);
    return next;
  });
  return { body: { status: t.status } };
}

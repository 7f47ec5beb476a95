import type { Reader, Tx } from '../../platform/storage/store';
import { updateById } from '../../platform/storage/tx';
import type { Mode } from '../../platform/clock';
import { iso, isoOrNull } from '../../platform/util/time';
import type { TokenMethod } from '../tokens/store';
import type { Period } from './calendar';

/** Subscription statuses, in the specification's display order. */
export const SUBSCRIPTION_STATUSES = ['pending', 'active', 'past_due', 'cancelled'] as const;

export interface SubscriptionRow {
  seq: number; id: string; merchant_id: string; shop_id: string; mode: Mode; customer_ref: string;
  customer_email: string; plan_name: string; amount: number; currency: string; method: TokenMethod;
  period: Period; interval_count: number; trial_days: number; status: (typeof SUBSCRIPTION_STATUSES)[number];
  token_id: string; initial_payment_id: string; anchor_at: number | null; charge_index: number;
  failures: number; next_charge_at: number | null; trial_end: number | null; cancel_reason: string;
  created_at: number; activated_at: number | null; cancelled_at: number | null;
}

/** The Subscription object of GET /v1/public/subscriptions/{id} and of subscription webhooks. */
export type SubscriptionView = Awaited<ReturnType<typeof subscriptionView>>;

/** Of any shop: callers check the shop. */
export async function getSubscription(q: Reader, id: string): Promise<SubscriptionRow | undefined> {
  return q.get<SubscriptionRow>('SELECT * FROM subscriptions WHERE id = ?', id);
}

/** The columns a charge job needs of a subscription, or undefined: a narrow read, on every charge. */
export async function chargeStateOf(q: Reader, id: string) {
  return q.get<Pick<SubscriptionRow, 'id' | 'status' | 'charge_index' | 'failures' | 'token_id' | 'amount' | 'plan_name'>>('SELECT id, status, charge_index, failures, token_id, amount, plan_name FROM subscriptions WHERE id = ?', id);
}

export async function reloadSubscription(tx: Tx, id: string): Promise<SubscriptionRow> {
  const s = await getSubscription(tx, id);
  if (!s) throw new Error(`cannot reload subscription "${id}": it does not exist`);
  return s;
}

type NewSubscription = Omit<SubscriptionRow, 'seq' | 'status' | 'anchor_at' | 'charge_index' | 'failures' | 'next_charge_at' | 'trial_end' | 'cancel_reason' | 'activated_at' | 'cancelled_at'>;

export async function insertSubscription(tx: Tx, s: NewSubscription): Promise<void> {
  await tx.run(
    `INSERT INTO subscriptions (id, merchant_id, shop_id, mode, customer_ref, customer_email, plan_name, amount, currency, method,
         period, interval_count, trial_days, status, token_id, initial_payment_id, created_at)
       VALUES (@id, @merchant_id, @shop_id, @mode, @customer_ref, @customer_email, @plan_name, @amount, @currency, @method,
         @period, @interval_count, @trial_days, 'pending', @token_id, @initial_payment_id, @created_at)`,
    s,
  );
}

export async function updateSubscription(tx: Tx, id: string, patch: Partial<SubscriptionRow>): Promise<void> {
  await updateById(tx, 'subscriptions', id, patch);
}

/** Writes only the columns that change, so a charge that keeps the status leaves the status indexes untouched. */
export async function patchSubscription(tx: Tx, s: SubscriptionRow, patch: Partial<SubscriptionRow>): Promise<SubscriptionRow> {
  const changed = Object.entries(patch).filter(([k, v]) => s[k as keyof SubscriptionRow] !== v);
  await updateSubscription(tx, s.id, Object.fromEntries(changed));
  return { ...s, ...patch };
}

/** A payment of a subscription with what its charge view needs (CHARGES_SQL). */
export type ChargeRow = { payment_id: string; kind: 'subscription_init' | 'subscription_charge'; charge_index: number | null; attempt: number; amount: number; status: string; metadata: string; created_at: number };

const CHARGES_SQL = `SELECT r.payment_id, r.kind, r.charge_index, r.attempt, p.amount, p.status, p.metadata, p.created_at
  FROM recurrent_payments r JOIN payments p ON p.seq = r.payment_seq
  WHERE r.subscription_id = ?`;

// Payments are made in (charge_index, attempt) order, the initial one (NULL index) first, so the index orders them
// without a sort; PostgreSQL, which sorts NULL last, is told to place it as SQLite does.
const NEWEST_FIRST = { sqlite: 'ORDER BY r.charge_index DESC, r.attempt DESC', postgres: 'ORDER BY r.charge_index DESC NULLS LAST, r.attempt DESC' };

/** One payment of a subscription as the schedule and the Subscription object list it. */
function chargeView(r: ChargeRow) {
  const meta = JSON.parse(r.metadata) as Record<string, string>;
  return { payment_id: r.payment_id, kind: r.kind, amount: r.amount, status: r.status, failure_code: meta.failure_code ?? '', attempt: r.attempt, created_at: iso(r.created_at) };
}

/** The latest `limit` payments of a subscription (initial payment and charges), oldest first. */
export async function chargesOf(q: Reader, subscriptionId: string, limit: number): Promise<Array<ReturnType<typeof chargeView>>> {
  const oldest = q.engine === 'postgres' ? 'ORDER BY charge_index NULLS FIRST, attempt' : 'ORDER BY charge_index, attempt';
  const rows = await q.all<ChargeRow>(`SELECT * FROM (${CHARGES_SQL} ${NEWEST_FIRST[q.engine]} LIMIT ?) AS latest ${oldest}`, subscriptionId, limit);
  return rows.map(chargeView);
}

/** The Subscription object's first fields, which the creation answer carries alone. */
export function subscriptionSummary(s: SubscriptionRow) {
  return {
    id: s.id, status: s.status, amount: s.amount, currency: s.currency, method: s.method, period: s.period,
    interval_count: s.interval_count, trial_days: s.trial_days, next_charge_at: isoOrNull(s.next_charge_at),
  };
}

/** `latest`, when the caller holds it, is the subscription's newest payment (the charge that just settled): it spares the read. */
export async function subscriptionView(q: Reader, s: SubscriptionRow, latest?: ChargeRow) {
  latest ??= await q.get<ChargeRow>(`${CHARGES_SQL} ${NEWEST_FIRST[q.engine]} LIMIT 1`, s.id);
  return {
    ...subscriptionSummary(s),
    customer_ref: s.customer_ref, customer_email: s.customer_email, plan_name: s.plan_name,
    trial_end: isoOrNull(s.trial_end), token_id: s.token_id, initial_payment_id: s.initial_payment_id,
    failed_charges: s.failures, latest_charge: latest ? chargeView(latest) : null,
    cancel_reason: s.cancel_reason, created_at: iso(s.created_at), activated_at: isoOrNull(s.activated_at),
    cancelled_at: isoOrNull(s.cancelled_at),
  };
}

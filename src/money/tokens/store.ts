import type { Reader, Tx } from '../../platform/storage/store';
import { updateById } from '../../platform/storage/tx';
import type { Mode } from '../../platform/clock';
import { isoOrNull, iso } from '../../platform/util/time';

/** Methods a token (and a subscription) saves. */
export const TOKEN_METHODS = ['cards', 'sbp', 'tpay'] as const;
export type TokenMethod = (typeof TOKEN_METHODS)[number];
/** Token statuses, in display order. */
export const TOKEN_STATUSES = ['pending', 'active', 'cancelled'] as const;

export interface TokenRow {
  seq: number; id: string; merchant_id: string; shop_id: string; mode: Mode; customer_ref: string;
  customer_email: string; method: TokenMethod; status: (typeof TOKEN_STATUSES)[number]; card_brand: string;
  card_mask: string; binding_payment_id: string; subscription_id: string | null; outcomes: string;
  last_charged_at: number | null; created_at: number; activated_at: number | null; cancelled_at: number | null;
}

/** A row of recurrent_payments: which token or subscription made a payment, and why. */
export interface RecurrentPaymentRow {
  /** payments.seq of the payment: the row's key. */
  payment_seq: number;
  payment_id: string;
  /** payments.kind of the payments tokens and subscriptions make. */
  kind: 'token_binding' | 'subscription_init' | 'subscription_charge' | 'token_charge';
  token_id: string; subscription_id: string | null; shop_id: string; mode: Mode; charge_index: number | null;
  attempt: number; created_at: number;
}

/** The Token object of GET /v1/public/tokens/{id} and of token webhooks. */
export type TokenView = ReturnType<typeof tokenView>;

/** A token by id, any shop (callers check the shop). */
export async function getToken(q: Reader, id: string): Promise<TokenRow | undefined> {
  // A wide row read several times per subscription charge: the engine's get builds it in one literal.
  return q.get<TokenRow>('SELECT * FROM tokens WHERE id = ?', id);
}

/** A token as created: pending, nothing bound or charged yet. */
type NewToken = Omit<
  TokenRow,
  'seq' | 'outcomes' | 'last_charged_at' | 'activated_at' | 'cancelled_at' | 'card_brand' | 'card_mask'
>;

export async function insertToken(tx: Tx, t: NewToken): Promise<void> {
  await tx.run(
    `INSERT INTO tokens (id, merchant_id, shop_id, mode, customer_ref, customer_email, method, status, binding_payment_id, subscription_id, created_at)
       VALUES (@id, @merchant_id, @shop_id, @mode, @customer_ref, @customer_email, @method, @status, @binding_payment_id, @subscription_id, @created_at)`,
    t,
  );
}

export async function updateToken(tx: Tx, id: string, patch: Partial<TokenRow>): Promise<void> {
  await updateById(tx, 'tokens', id, patch);
}

type NewRecurrentPayment = Omit<RecurrentPaymentRow, 'charge_index' | 'attempt'> &
  { charge_index?: number; attempt?: number };

/** Remember which token (and subscription) made a payment, in the payment's transaction. */
export async function recordPayment(tx: Tx, r: NewRecurrentPayment): Promise<void> {
  if (!(r.payment_seq > 0)) throw new Error(`cannot record recurrent payment ${r.payment_id}: it has no seq yet`);
  await tx.run(
    `INSERT INTO recurrent_payments (payment_seq, payment_id, kind, token_id, subscription_id, shop_id, mode, charge_index, attempt, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    r.payment_seq, r.payment_id, r.kind, r.token_id, r.subscription_id, r.shop_id, r.mode, r.charge_index ?? null, r.attempt ?? 1, r.created_at,
  );
}

/** True when a subscription already made the charge payment of this index and attempt. */
export async function chargeMade(tx: Tx, subscriptionId: string, index: number, attempt: number): Promise<boolean> {
  return (await tx.get('SELECT 1 FROM recurrent_payments WHERE subscription_id = ? AND charge_index = ? AND attempt = ?', subscriptionId, index, attempt)) !== undefined;
}

/** The token or subscription behind a payment (by the payment's seq), if a token or subscription made it. */
export async function recurrentPayment(q: Reader, paymentSeq: number): Promise<RecurrentPaymentRow | undefined> {
  return q.get<RecurrentPaymentRow>('SELECT * FROM recurrent_payments WHERE payment_seq = ?', paymentSeq);
}

export function tokenView(t: TokenRow) {
  return {
    id: t.id, customer_ref: t.customer_ref, customer_email: t.customer_email, method: t.method, status: t.status,
    card_brand: t.card_brand,
    // Tokens bound before the mask became the bare last 4 digits stored "**** 1111".
    card_mask: t.card_mask.replace(/\D/g, '').slice(-4),
    last_charged_at: isoOrNull(t.last_charged_at), subscription_id: t.subscription_id,
    binding_payment_id: t.binding_payment_id, created_at: iso(t.created_at),
    activated_at: isoOrNull(t.activated_at), cancelled_at: isoOrNull(t.cancelled_at),
  };
}

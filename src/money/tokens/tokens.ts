import type { Core } from '../core/core';
import type { Reader, Tx } from '../../platform/storage/store';
import type { Mode } from '../../platform/clock';
import { invalidState } from '../../platform/http/errors';
import { uuid } from '../../platform/util/ids';
import { createPaymentTx, type PaymentInput } from '../payments/create';
import { cancelTx } from '../payments/state';
import { getPayment } from '../payments/store';
import type { PaymentRow } from '../bank-port/payment';
import type { PaymentsCore } from '../payments/core';
import { getToken, insertToken, recordPayment, tokenView, updateToken } from './store';
import type { RecurrentPaymentRow, TokenMethod, TokenRow } from './store';

/** 1 RUB, in kopecks. */
export const CARD_VERIFICATION_AMOUNT = 100;

/** A token's binding, or a subscription's first payment, after validation. */
export interface BindingInput {
  merchantId: string;
  shopId: string;
  mode: Mode;
  customerRef: string;
  customerEmail: string;
  method: TokenMethod;
  /** 1 RUB for a card verification or a trial, else the first charge. */
  amount: number;
  kind: 'token_binding' | 'subscription_init';
  returnUrl?: string;
  description?: string;
  subscriptionId?: string;
}

type TokenEvents = Pick<Core, 'clocks' | 'events'>;

export async function reloadToken(q: Reader, id: string): Promise<TokenRow> {
  const t = await getToken(q, id);
  if (!t) throw new Error(`cannot reload token "${id}": it does not exist`);
  return t;
}

/** With the webhook of the change, carrying the token as GET shows it. */
async function emitStatus(core: TokenEvents, tx: Tx, t: TokenRow, webhook: string | null): Promise<void> {
  await core.events.append(tx, {
    merchantId: t.merchant_id, shopId: t.shop_id, mode: t.mode, kind: 'token.status_changed',
    payload: { id: t.id, status: t.status },
    at: await core.clocks.now(tx, t.shop_id, t.mode),
    webhook: webhook ? { event: webhook, data: tokenView(t), url: null } : undefined,
  });
}

/** What a token's payment is for: its kind, and the subscription (and period and attempt) it pays, if any. */
interface Purpose {
  kind: RecurrentPaymentRow['kind'];
  subscriptionId?: string;
  chargeIndex?: number;
  attempt?: number;
}

/** A payment for token `tokenId`, remembered as the token's (recurrent_payments); its metadata names the token. */
async function tokenPaymentTx(
  core: PaymentsCore, tx: Tx, tokenId: string, why: Purpose, input: Omit<PaymentInput, 'metadata' | 'kind'>,
): Promise<PaymentRow> {
  const metadata: Record<string, string> = { kind: why.kind, token_id: tokenId };
  if (why.subscriptionId) metadata.subscription_id = why.subscriptionId;
  const payment = await createPaymentTx(core, tx, { ...input, metadata, kind: why.kind });
  await recordPayment(tx, {
    payment_seq: payment.seq, payment_id: payment.id, kind: why.kind, token_id: tokenId,
    subscription_id: why.subscriptionId ?? null, shop_id: input.shopId, mode: input.mode,
    charge_index: why.chargeIndex, attempt: why.attempt, created_at: payment.created_at,
  });
  return payment;
}

/** A pending token and its binding payment (method fixed, so the page opens that screen). */
export async function createBindingTx(core: PaymentsCore, tx: Tx, input: BindingInput): Promise<{ token: TokenRow; payment: PaymentRow }> {
  const { merchantId, shopId, mode, customerRef, method } = input;
  const tokenId = uuid();
  const payment = await tokenPaymentTx(core, tx, tokenId, input, {
    merchantId, shopId, mode, amount: input.amount, currency: 'RUB', method, customerId: customerRef.slice(0, 128),
    returnUrl: input.returnUrl, description: input.description,
  });
  await insertToken(tx, {
    id: tokenId, merchant_id: merchantId, shop_id: shopId, mode, customer_ref: customerRef,
    customer_email: input.customerEmail, method, status: 'pending', binding_payment_id: payment.id,
    subscription_id: input.subscriptionId ?? null, created_at: payment.created_at,
  });
  const token = await reloadToken(tx, tokenId);
  await emitStatus(core, tx, token, null);
  return { token, payment };
}

/** Once its binding payment succeeded; brand and mask come from that payment. */
export async function activateTokenTx(core: TokenEvents, tx: Tx, t: TokenRow, binding: PaymentRow): Promise<TokenRow> {
  if (t.status !== 'pending') return t;
  await updateToken(tx, t.id, {
    status: 'active',
    activated_at: await core.clocks.now(tx, t.shop_id, t.mode),
    card_brand: t.method === 'cards' ? binding.card_brand : '',
    card_mask: t.method === 'cards' ? lastFour(binding.card_mask) : '',
  });
  const next = await reloadToken(tx, t.id);
  await emitStatus(core, tx, next, 'token.activated');
  return next;
}

/** `1111` from any kept form (`411111******1111`): the API's one card mask format, as recipient_card_mask. */
function lastFour(mask: string): string {
  const digits = mask.replace(/\D/g, '');
  return digits.length >= 4 ? digits.slice(-4) : '';
}

/** A pending binding payment is cancelled with it; one already at the bank finishes, and its success changes nothing. */
export async function cancelTokenTx(core: PaymentsCore, tx: Tx, t: TokenRow): Promise<TokenRow> {
  if (t.status === 'cancelled') throw invalidState(`Cannot cancel token "${t.id}": its status is cancelled`);
  const now = await core.clocks.now(tx, t.shop_id, t.mode);
  await updateToken(tx, t.id, { status: 'cancelled', cancelled_at: now, outcomes: '[]' });
  const binding = await getPayment(tx, t.binding_payment_id);
  if (binding && binding.status === 'pending') await cancelTx(core, tx, binding);
  const next = await reloadToken(tx, t.id);
  await emitStatus(core, tx, next, 'token.cancelled');
  return next;
}

/** A charge of a saved method: by the merchant (token_charge) or by a subscription for one of its periods. */
interface ChargeInput extends Purpose, Pick<PaymentInput, 'amount' | 'orderId' | 'description'> {
  kind: 'token_charge' | 'subscription_charge';
}

/** A payment of method `recurrent` whose session opens at once (test mode: outcome queue, then magic amounts). */
export async function chargeTokenTx(core: PaymentsCore, tx: Tx, t: TokenRow, input: ChargeInput): Promise<PaymentRow> {
  if (t.status !== 'active') throw invalidState(`Cannot charge token "${t.id}": its status is ${t.status}; only active tokens can be charged`);
  return tokenPaymentTx(core, tx, t.id, input, {
    merchantId: t.merchant_id, shopId: t.shop_id, mode: t.mode, amount: input.amount, currency: 'RUB',
    method: 'recurrent', orderId: input.orderId, customerId: t.customer_ref.slice(0, 128),
    description: input.description, tokenId: t.id,
  });
}

/** Kept as last_charged_at, unless a later charge is kept already. */
export async function chargedTx(tx: Tx, tokenId: string, at_ms: number): Promise<void> {
  await tx.run('UPDATE tokens SET last_charged_at = ? WHERE id = ? AND (last_charged_at IS NULL OR last_charged_at <= ?)', at_ms, tokenId, at_ms);
}

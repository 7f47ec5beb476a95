import type { Reader } from '../../platform/storage/store';
import { badRequest, notFound } from '../../platform/http/errors';
import { isUuid } from '../../platform/util/ids';
import type { PaymentsCore } from './core';
import { cancelTx, chooseMethodTx, openSessionTx } from './state';
import { getPayment, paymentView, readPaymentView } from './store';
import { PAYMENT_METHODS, type ConcreteMethod, type PaymentRow, type PaymentView } from '../bank-port/payment';

// What the hosted page may do to a payment, by payment id alone (the page is public): each call is one
// group-committed transaction and throws ApiError 409 invalid_state when the payment is in the wrong state.

async function load(q: Reader, id: string): Promise<PaymentRow> {
  const p = isUuid(id) ? await getPayment(q, id) : undefined;
  if (!p) throw notFound(`Cannot find payment "${id}"`);
  return p;
}

/** The payment as GET shows it, or undefined when no payment has this id; read through `q` (the store, or a tx). */
export async function findPaymentForPage(q: Reader, id: string): Promise<PaymentView | undefined> {
  return isUuid(id) ? (await readPaymentView(q, id))?.view : undefined;
}

/**
 * The buyer pays with `method`: a payment created with `any` takes it, and the bank session opens
 * (pending → processing). Only this POST opens a session: opening the page changes nothing. Paying again
 * with the method already open changes nothing.
 */
export async function payWithMethod(core: PaymentsCore, id: string, method: string): Promise<PaymentView> {
  if (method === 'any' || method === 'recurrent' || !(PAYMENT_METHODS as readonly string[]).includes(method)) {
    throw badRequest(`Cannot choose method "${method}": it is not a payment method`, 'method');
  }
  return core.store.write(async (tx) => {
    const p = await load(tx, id);
    if (p.status === 'processing' && p.method === method) return paymentView(tx, p);
    // One look at the clock, and the method written with the session's status.
    const at = await core.clocks.now(tx, p.shop_id, p.mode);
    const chosen = await chooseMethodTx(core, tx, p, method as ConcreteMethod, at, false);
    const patch = chosen.method === p.method ? undefined : { method: chosen.method };
    return paymentView(tx, await openSessionTx(core, tx, chosen, { by: 'buyer', at, patch }), true);
  });
}

/** The buyer gave up on the page: pending → cancelled. */
export async function buyerCancel(core: PaymentsCore, id: string): Promise<PaymentView> {
  return core.store.write(async (tx) => paymentView(tx, await cancelTx(core, tx, await load(tx, id))));
}

const REDIRECT_STATUSES = new Set(['succeeded', 'failed', 'cancelled', 'refunded', 'expired']);

/**
 * Where the buyer goes after a final status: return_url with `payment_id` and `status` added (its own
 * query kept), or null without return_url or before a final status.
 */
export function buyerRedirectUrl(payment: { id: string; status: string; return_url: string }): string | null {
  if (!payment.return_url || !REDIRECT_STATUSES.has(payment.status)) return null;
  const u = new URL(payment.return_url);
  u.searchParams.set('payment_id', payment.id);
  u.searchParams.set('status', payment.status);
  return u.toString();
}

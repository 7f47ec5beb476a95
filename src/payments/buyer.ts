import type { App } from '../app-types';
import { ApiError, badRequest, notFound } from '../http/errors';
import { isUuid } from '../util/ids';
import { planFromMetadata } from '../simulator/plan';
import { simulatedResolution } from '../simulator/payments';
import { cancelTx, chooseMethodTx, openSessionTx, resolveTx, type Resolution, type SessionOptions } from './state';
import { getPayment, metadataOf, paymentView } from './store';
import { PAYMENT_METHODS, type ConcreteMethod, type PaymentRow, type PaymentView } from './types';

// What the hosted page may do to a payment, by payment id alone (the page is public): each call is one
// group-committed transaction and throws ApiError 409 invalid_state when the payment is in the wrong state.

function load(app: App, id: string): PaymentRow {
  const p = isUuid(id) ? getPayment(app, id) : undefined;
  if (!p) throw notFound(`Cannot find payment "${id}"`);
  return p;
}

/** The payment as GET shows it, or undefined when no payment has this id. */
export async function findPaymentForPage(app: App, id: string): Promise<PaymentView | undefined> {
  if (!isUuid(id)) return undefined;
  const p = getPayment(app, id);
  return p ? paymentView(app, p) : undefined;
}

/** The buyer picks a method: pending `any` → pending with `method`. */
export async function chooseMethod(app: App, id: string, method: string): Promise<PaymentView> {
  if (method === 'any' || !(PAYMENT_METHODS as readonly string[]).includes(method)) {
    throw badRequest(`Cannot choose method "${method}": it is not a payment method`, 'method');
  }
  return app.store.write((tx) => paymentView(app, chooseMethodTx(app, tx, load(app, id), method as ConcreteMethod)));
}

/** The buyer opened a method screen: pending (method chosen) → processing; a second call changes nothing. */
export async function openSession(app: App, id: string, opts: SessionOptions = {}): Promise<PaymentView> {
  return app.store.write((tx) => paymentView(app, openSessionTx(app, tx, load(app, id), opts)));
}

/** What the buyer's action on the page ended with. */
export interface BuyerOutcome {
  outcome: 'succeeded' | 'failed';
  /** Unified failure code; defaults to the simulator's planned code, else do_not_honor. */
  failureCode?: string;
  /** From a card form: never the full number, only brand, mask and holder. */
  card?: { brand: string; mask: string; holder: string };
}

/** The buyer approved, declined or passed/failed a challenge: processing → succeeded or failed. */
export async function buyerResolve(app: App, id: string, o: BuyerOutcome): Promise<PaymentView> {
  if (o.card && /\d{9,}/.test(o.card.mask.replace(/\s/g, ''))) {
    throw new ApiError(400, 'bad_request', 'Cannot store the card: the mask must not hold a full card number', 'card');
  }
  return app.store.write((tx) => {
    const p = load(app, id);
    const planned = planFromMetadata(metadataOf(p))?.failureCode;
    const r: Resolution =
      p.mode === 'test'
        ? simulatedResolution(o.outcome, o.failureCode || planned || 'do_not_honor')
        : { outcome: o.outcome, failureCode: o.failureCode || (o.outcome === 'failed' ? 'do_not_honor' : undefined) };
    if (o.card) r.card = o.card;
    return paymentView(app, resolveTx(app, tx, p, r));
  });
}

/** The buyer gave up on the page: pending → cancelled. */
export async function buyerCancel(app: App, id: string): Promise<PaymentView> {
  return app.store.write((tx) => paymentView(app, cancelTx(app, tx, load(app, id))));
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

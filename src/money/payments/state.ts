import type { Core } from '../core/core';
import type { Reader, Tx } from '../../platform/storage/store';
import { invalidState } from '../../platform/http/errors';
import { post } from '../ledger/ledger';
import type { BankPort, Opener } from '../bank-port/port';
import type { PaymentsCore } from './core';
import { ensureSessionSweep } from './expiry';
import { getPayment, insertPayment, metadataOf, paymentView, updatePayment, updatePaymentFrom, type InsertParams } from './store';
import { SESSION_TTL_MS, type ConcreteMethod, type PaymentRow, type PaymentStatus } from '../bank-port/payment';

/** Every status change the state machine allows; anything else is 409 invalid_state. */
const ALLOWED: Record<PaymentStatus, readonly PaymentStatus[]> = {
  pending: ['processing', 'cancelled', 'expired'],
  // processing → cancelled only on the bank's word (it voided the session); the merchant cancels pending payments.
  processing: ['succeeded', 'failed', 'expired', 'cancelled'],
  succeeded: ['refunded'],
  failed: [],
  cancelled: [],
  refunded: [],
  expired: [],
};

/** The webhook each status change sends; `refunded` sends none here because each refund sends its own. */
const WEBHOOK: Partial<Record<PaymentStatus, string>> = {
  succeeded: 'payment.succeeded',
  failed: 'payment.failed',
  cancelled: 'payment.cancelled',
  expired: 'payment.expired',
};

/** How a bank session ended with a bank answer. */
export interface Resolution {
  outcome: 'succeeded' | 'failed';
  failureCode?: string;
  bankFailureCode?: string;
  rrn?: string;
  bankName?: string;
  card?: { brand: string; mask: string; holder: string };
  phoneMask?: string;
  payerBank?: string;
}

/** Re-read a payment inside a transaction, through its tx (the state machine always acts on the committed row). */
export async function reload(q: Reader, id: string): Promise<PaymentRow> {
  const p = await getPayment(q, id);
  if (!p) throw new Error(`cannot reload payment "${id}": it does not exist`);
  return p;
}

function refuse(p: PaymentRow, action: string, extra = ''): never {
  throw invalidState(`Cannot ${action} payment "${p.id}": its status is ${p.status}${extra}`);
}

/**
 * The one place a payment's status changes: checks the transition, writes the patch, and appends
 * payment.status_changed (with the webhook of the new status) in the same transaction. The write names the status
 * it moves from, so a payment moves out of a status once: a transaction that read the row before another moved it
 * writes nothing and is refused (409), and no transition sends its webhook twice.
 */
async function move(core: PaymentsCore, tx: Tx, p: PaymentRow, to: PaymentStatus, action: string, at: number, patch: Partial<PaymentRow> = {}, unwritten?: InsertParams): Promise<PaymentRow> {
  if (!ALLOWED[p.status].includes(to)) refuse(p, action);
  let next: PaymentRow;
  if (unwritten) {
    // A payment created in this transaction and not written yet (its session opens at once): one INSERT of
    // the row as the move leaves it instead of an INSERT and an UPDATE.
    if (to !== 'processing' || patch.processing_until == null) throw new Error(`cannot write payment "${p.id}" as ${to} at its creation`);
    next = await insertPayment(tx, unwritten, undefined, { status: to, processing_until: patch.processing_until });
  } else {
    if (!(await updatePaymentFrom(tx, p.id, p.status, { ...patch, status: to }))) refuse((await getPayment(tx, p.id)) ?? p, action);
    // The row as it now stands: `p` is the row as read (its status was just checked against it, and the write
    // found it unchanged) plus the columns written, so no read is needed.
    next = { ...p, ...patch, status: to };
  }
  const event = WEBHOOK[to];
  // The money moves with the status, in the same transaction and before anything reacts to the change (a
  // card binding's verification refund needs the credit): the books never depend on an event's payload.
  if (to === 'succeeded') await post(tx, { merchantId: next.merchant_id, shopId: next.shop_id, mode: next.mode }, 'payment_succeeded', next.id, next.amount, at, next.seq);
  await core.events.append(tx, {
    merchantId: next.merchant_id,
    shopId: next.shop_id,
    mode: next.mode,
    kind: 'payment.status_changed',
    payload: { id: next.id, status: to },
    at,
    paymentId: next.id,
    // A payment leaving pending or processing never succeeded before, so it has no refunds to read.
    webhook: event ? { event, data: await paymentView(tx, next, p.status === 'pending' || p.status === 'processing'), url: next.webhook_url || null } : undefined,
  });
  // Tokens and subscriptions react to their payments here (their own hooks, typed; payments knows none of them).
  await core.paymentHooks.fireMoved(tx, next, p.status, at);
  // Expiry is swept (expiry.ts): leaving pending or processing cancels nothing. The per-payment expiry jobs an
  // older database may still hold run at their time, find the payment closed and do nothing.
  return next;
}

/** pending → pending with a concrete method; re-choosing is allowed while the payment was created as `any`. */
export async function chooseMethodTx(core: Pick<Core, 'clocks' | 'events'>, tx: Tx, p: PaymentRow, method: ConcreteMethod): Promise<PaymentRow> {
  if (p.status !== 'pending') refuse(p, `choose method ${method} for`);
  if (p.method === method) return p;
  if (p.method_fixed) refuse(p, `choose method ${method} for`, ` and its method ${p.method} was fixed at creation`);
  await updatePayment(tx, p.id, { method });
  // `p` was read in this transaction: the row now is it with the method written.
  const next: PaymentRow = { ...p, method };
  // Not a status change, so no webhook and no payment.status_changed; the stream still learns of it.
  await core.events.append(tx, {
    merchantId: next.merchant_id,
    shopId: next.shop_id,
    mode: next.mode,
    kind: 'payment.method_chosen',
    payload: { id: next.id, method },
    at: await core.clocks.now(tx, next.shop_id, next.mode),
    paymentId: next.id,
  });
  return next;
}

/** How a session opens: who opened it, and the saved method a merchant-initiated charge uses. */
export interface SessionOptions {
  /** The buyer on the hosted page, or the service (a saved method, a test helper); default the service. */
  by?: Opener;
  /** The token a charge of a saved method uses. */
  tokenId?: string;
  /**
   * The payment was created in this transaction and is not written yet (createPaymentTx, for a saved method):
   * what it is inserted with. `p` is then the pending row it would have been.
   */
  unwritten?: InsertParams;
  /** The shop's bank, when the caller has it already (a create looked it up for its draft). */
  bank?: BankPort;
}

/**
 * pending (method chosen) → processing: the bank session opens for the method's lifetime, and the shop's
 * bank is told in the same transaction. Idempotent when already processing.
 */
export async function openSessionTx(core: PaymentsCore, tx: Tx, p: PaymentRow, opts: SessionOptions = {}): Promise<PaymentRow> {
  if (p.status === 'processing') return p;
  if (p.status !== 'pending') refuse(p, 'open a bank session for');
  if (p.method === 'any') refuse(p, 'open a bank session for', ' and no method is chosen yet');
  const now = await core.clocks.now(tx, p.shop_id, p.mode);
  const until = now + SESSION_TTL_MS[p.method];
  const next = await move(core, tx, p, 'processing', 'open a bank session for', now, { processing_until: until }, opts.unwritten);
  await ensureSessionSweep(core.scheduler, tx, next, until);
  const bank = opts.bank ?? (await core.banks.for(tx, p.shop_id, p.mode));
  const req = { payment: next, by: opts.by ?? 'service' };
  if (opts.tokenId) await bank.chargeSaved(tx, { ...req, tokenId: opts.tokenId });
  else await bank.openSession(tx, req);
  return next;
}

/** processing → succeeded or failed, with what the bank told. */
export async function resolveTx(core: PaymentsCore, tx: Tx, p: PaymentRow, r: Resolution): Promise<PaymentRow> {
  const action = r.outcome === 'succeeded' ? 'confirm' : 'fail';
  if (p.status !== 'processing') refuse(p, action);
  const now = await core.clocks.now(tx, p.shop_id, p.mode);
  const patch: Partial<PaymentRow> = { finalized_at: now };
  if (r.rrn) patch.rrn = r.rrn;
  if (r.bankName) patch.bank_name = r.bankName;
  if (r.card) {
    patch.card_brand = r.card.brand.slice(0, 32);
    patch.card_mask = r.card.mask.slice(0, 32);
    patch.card_holder = r.card.holder.slice(0, 128);
  }
  if (r.phoneMask) patch.phone_mask = r.phoneMask;
  if (r.payerBank) patch.payer_bank = r.payerBank;
  if (r.outcome === 'succeeded') {
    patch.captured_at = now;
  } else {
    const meta = metadataOf(p);
    meta.failure_code = r.failureCode || 'do_not_honor';
    if (r.bankFailureCode) meta.bank_failure_code = r.bankFailureCode;
    patch.metadata = JSON.stringify(meta);
  }
  return move(core, tx, p, r.outcome, action, now, patch);
}

/** pending → cancelled (the merchant's cancel, or the buyer's); the bank voids whatever it holds for the payment. */
export async function cancelTx(core: PaymentsCore, tx: Tx, p: PaymentRow): Promise<PaymentRow> {
  if (p.status !== 'pending') refuse(p, 'cancel', '; only pending payments can be cancelled');
  const now = await core.clocks.now(tx, p.shop_id, p.mode);
  const next = await move(core, tx, p, 'cancelled', 'cancel', now, { finalized_at: now });
  await (await core.banks.for(tx, p.shop_id, p.mode)).cancel(tx, next);
  return next;
}

/** processing → cancelled: the bank voided the session (its own cancel or reversal). */
export async function bankCancelTx(core: PaymentsCore, tx: Tx, p: PaymentRow): Promise<PaymentRow> {
  if (p.status !== 'processing') refuse(p, 'cancel at the bank');
  const now = await core.clocks.now(tx, p.shop_id, p.mode);
  return move(core, tx, p, 'cancelled', 'cancel at the bank', now, { finalized_at: now });
}

/** pending → expired (link_expired) or processing → expired (session_expired). */
export async function expireTx(core: PaymentsCore, tx: Tx, p: PaymentRow): Promise<PaymentRow> {
  const code = p.status === 'pending' ? 'link_expired' : p.status === 'processing' ? 'session_expired' : null;
  if (!code) refuse(p, 'expire');
  const meta = metadataOf(p);
  meta.failure_code = code;
  const now = await core.clocks.now(tx, p.shop_id, p.mode);
  return move(core, tx, p, 'expired', 'expire', now, { finalized_at: now, metadata: JSON.stringify(meta) });
}

/** Add a succeeded refund to amount_refunded; succeeded → refunded when refunds reach the amount. */
export async function applyRefundTx(core: PaymentsCore, tx: Tx, p: PaymentRow, amount: number): Promise<PaymentRow> {
  const total = p.amount_refunded + amount;
  if (total > p.amount) throw new Error(`cannot apply refund of ${amount} to payment "${p.id}": ${total} exceeds amount ${p.amount}`);
  await updatePayment(tx, p.id, { amount_refunded: total });
  // `p` was read in this transaction: the row now is it with the total written.
  const next: PaymentRow = { ...p, amount_refunded: total };
  if (total !== p.amount || p.status !== 'succeeded') return next;
  return move(core, tx, next, 'refunded', 'refund', await core.clocks.now(tx, p.shop_id, p.mode));
}

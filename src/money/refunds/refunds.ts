import type { Core } from '../core/core';
import type { Reader, Tx } from '../../platform/storage/store';
import { ApiError, invalidState } from '../../platform/http/errors';
import { uuid } from '../../platform/util/ids';
import { finishRefundRow, getRefund, heldByRefunds, insertRefund } from './store';
import { post, postedAmount, type Book } from '../ledger/ledger';
import { applyRefundTx, reload } from '../payments/state';
import { getPayment, lockPayment, paymentView } from '../payments/store';
import type { RefundRow } from '../bank-port/refund';
import type { PaymentRow } from '../bank-port/payment';
import type { PaymentsCore } from '../payments/core';

export interface RefundInput {
  /** 0 or undefined: the whole refundable remainder. */
  amount?: number;
  reason: string;
  /** The API key that asked, for the audit log. */
  keyId: string;
}

/** amount minus succeeded and pending refunds: what may still be refunded. */
export async function refundableOf(q: Reader, p: PaymentRow): Promise<number> {
  return p.amount - (await heldByRefunds(q, p.id));
}

/** The remainder is computed under the payment's lock, so concurrent refunds never together exceed its amount. */
export async function createRefundTx(core: Pick<Core, 'clocks' | 'events' | 'banks'>, tx: Tx, read: PaymentRow, input: RefundInput): Promise<RefundRow> {
  const p = (await lockPayment(tx, read.id)) ?? read;
  if (p.status !== 'succeeded') {
    throw invalidState(`Cannot refund payment "${p.id}": its status is ${p.status}; only succeeded payments can be refunded`);
  }
  const refundable = await refundableOf(tx, p);
  if (refundable <= 0) {
    // Pending refunds may already hold the whole amount while the payment is still `succeeded`.
    const held = `nothing is left to refund, succeeded and pending refunds already hold its amount ${p.amount}`;
    throw new ApiError(422, 'amount_exceeds_refundable', `Cannot refund payment "${p.id}": ${held}`, 'amount');
  }
  const amount = input.amount ? input.amount : refundable;
  if (amount > refundable) {
    throw new ApiError(422, 'amount_exceeds_refundable', `Cannot refund payment "${p.id}": amount ${amount} exceeds refundable ${refundable}`, 'amount');
  }
  const now = await core.clocks.now(tx, p.shop_id, p.mode);
  const id = uuid();
  await insertRefund(tx, { id, payment_id: p.id, merchant_id: p.merchant_id, shop_id: p.shop_id, mode: p.mode, amount, reason: input.reason, created_at: now }, input.keyId);
  // The amount leaves `available` for `reserved` now (422 insufficient_funds when it is not there).
  await post(tx, bookOf(p), 'refund_reserved', id, amount, now);
  await core.events.append(tx, {
    merchantId: p.merchant_id, shopId: p.shop_id, mode: p.mode, kind: 'refund.created',
    payload: { id, payment_id: p.id, amount, status: 'pending' },
    at: now, paymentId: p.id,
  });
  const refund = (await getRefund(tx, id))!;
  await (await core.banks.for(tx, p.shop_id, p.mode)).refund(tx, refund, p);
  return refund;
}

/** Success grows amount_refunded and sends payment.refunded; a failure makes the amount refundable again. */
export async function settleRefundTx(core: PaymentsCore, tx: Tx, r: RefundRow, status: 'succeeded' | 'failed', failureCode = ''): Promise<RefundRow> {
  if (r.status !== 'pending') return r;
  const p = (await getPayment(tx, r.payment_id))!;
  const now = await core.clocks.now(tx, r.shop_id, r.mode);
  // A refund settles once: a transaction that read it pending before another settled it writes nothing.
  if (!(await finishRefundRow(tx, r.id, status, failureCode, now))) return (await getRefund(tx, r.id))!;
  // A settled refund leaves the books; a failed one gives its reserve back.
  const reserved = await postedAmount(tx, 'refund_reserved', r.id);
  if (status === 'succeeded') {
    if (reserved === undefined) await post(tx, bookOf(r), 'refund_reserved', r.id, r.amount, now);
    await post(tx, bookOf(r), 'refund_settled', r.id, reserved ?? r.amount, now);
  } else if (reserved !== undefined) {
    await post(tx, bookOf(r), 'refund_released', r.id, reserved, now);
  }
  const after = status === 'succeeded' ? await applyRefundTx(core, tx, p, r.amount) : await reload(tx, p.id);
  await core.events.append(tx, {
    merchantId: r.merchant_id, shopId: r.shop_id, mode: r.mode, kind: 'refund.status_changed',
    payload: { id: r.id, payment_id: r.payment_id, amount: r.amount, status },
    at: now, paymentId: r.payment_id,
    webhook: status === 'succeeded' ? { event: 'payment.refunded', data: await paymentView(tx, after), url: after.webhook_url || null } : undefined,
  });
  return (await getRefund(tx, r.id))!;
}

function bookOf(o: { merchant_id: string; shop_id: string; mode: 'test' | 'live' }): Book {
  return { merchantId: o.merchant_id, shopId: o.shop_id, mode: o.mode };
}

/**
 * The cabinet's one door to payments, refunds, the test clock and test data: it calls exactly what the API
 * handlers call (src/money/payments/handlers.ts, src/money/refunds/handlers.ts, src/banks/simulator/clock.ts), so a refund from
 * the cabinet obeys the same rules as one from the API. Keeping these calls in this one file means a change
 * of those domains is adapted here alone.
 */
import type { Reader, Store } from '../../platform/storage/store';
import type { Clocks } from '../../platform/clock';
import type { Core } from '../../money/core/core';
import type { PaymentsCore } from '../../money/payments/core';
import type { PaymentRow } from '../../money/bank-port/payment';
import type { RefundRow } from '../../money/bank-port/refund';
import { getPayment } from '../../money/payments/store';
import { cancelTx } from '../../money/payments/state';
import { createRefundTx, refundableOf } from '../../money/refunds/refunds';
import { advanceShopClock, resetTestData } from '../../banks/simulator/clock';
import { insertAudit, type Actor } from './audit';

/** The payment with this id, whatever its shop (the caller checks it belongs to the user's merchant). */
export async function findPayment(q: Reader, id: string): Promise<PaymentRow | undefined> {
  return getPayment(q, id);
}

/** What may still be refunded of a payment. */
export async function refundable(q: Reader, p: PaymentRow): Promise<number> {
  return refundableOf(q, p);
}

/** Refund a payment (amount 0: the whole remainder), as POST /v1/public/payments/{id}/refund does; audited in the same commit. */
export function refundPayment(core: Pick<Core, 'store' | 'clocks' | 'events' | 'banks'>, p: PaymentRow, input: { amount: number; reason: string }, actor: Actor & { userId: string }): Promise<RefundRow> {
  return core.store.write(async (tx) => {
    const fresh = (await getPayment(tx, p.id))!;
    const r = await createRefundTx(core, tx, fresh, { amount: input.amount, reason: input.reason, keyId: `cabinet:${actor.userId}` });
    await insertAudit(tx, actor, 'payment.refund', p.id, `refund ${r.id}: ${r.amount} ${p.currency}${input.reason ? ` (${input.reason})` : ''}`, core.clocks.real());
    return r;
  });
}

/** Cancel a pending payment, as POST /v1/public/payments/{id}/cancel does; audited in the same commit. */
export function cancelPayment(core: PaymentsCore, p: PaymentRow, actor: Actor): Promise<PaymentRow> {
  return core.store.write(async (tx) => {
    const after = await cancelTx(core, tx, (await getPayment(tx, p.id))!);
    await insertAudit(tx, actor, 'payment.cancel', p.id, '', core.clocks.real());
    return after;
  });
}

/** A shop's test clock: now on it and its offset from real time (one read of the shop's offset). */
export async function testClock(store: Store, clocks: Clocks, shopId: string): Promise<{ now: number; offset_ms: number }> {
  const offset_ms = await clocks.offset(store, shopId);
  return { now: clocks.real() + offset_ms, offset_ms };
}

/** Move a shop's test clock forward and run what became due, as POST /v1/test/clock/advance does; returns jobs run. */
export function advanceTestClock(core: Pick<Core, 'store' | 'scheduler' | 'clocks'>, shopId: string, seconds: number): Promise<number> {
  return advanceShopClock(core, shopId, seconds);
}

/** Delete a shop's test data and set its test clock back, as POST /v1/test/reset does; rows deleted per table. */
export async function resetTest(store: Store, shopId: string): Promise<Record<string, number>> {
  return resetTestData(store, shopId);
}

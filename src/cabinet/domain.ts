/**
 * The cabinet's one door to payments, refunds, the test clock and test data: it calls exactly what the API
 * handlers call (src/payments/handlers.ts, src/refunds/handlers.ts, src/simulator/clock.ts), so a refund from
 * the cabinet obeys the same rules as one from the API. Keeping these calls in this one file means a change
 * of those domains is adapted here alone.
 */
import type { App } from '../app-types';
import type { PaymentRow } from '../model/payment';
import type { RefundRow } from '../model/refund';
import { getPayment } from '../payments/store';
import { cancelTx } from '../payments/state';
import { createRefundTx, refundableOf } from '../refunds/refunds';
import { resetTestData } from '../simulator/reset';
import { advanceShopClock } from '../simulator/clock';
import { insertAudit, type Actor } from './audit';

/** The payment with this id, whatever its shop (the caller checks it belongs to the user's merchant). */
export async function findPayment(app: App, id: string): Promise<PaymentRow | undefined> {
  return getPayment(app.store, id);
}

/** What may still be refunded of a payment. */
export async function refundable(app: App, p: PaymentRow): Promise<number> {
  return refundableOf(app.store, p);
}

/** Refund a payment (amount 0: the whole remainder), as POST /v1/public/payments/{id}/refund does; audited in the same commit. */
export function refundPayment(app: App, p: PaymentRow, input: { amount: number; reason: string }, actor: Actor & { userId: string }): Promise<RefundRow> {
  return app.store.write(async (tx) => {
    const fresh = (await getPayment(tx, p.id))!;
    const r = await createRefundTx(app, tx, fresh, { amount: input.amount, reason: input.reason, keyId: `cabinet:${actor.userId}` });
    await insertAudit(tx, actor, 'payment.refund', p.id, `refund ${r.id}: ${r.amount} ${p.currency}${input.reason ? ` (${input.reason})` : ''}`, app.clocks.real());
    return r;
  });
}

/** Cancel a pending payment, as POST /v1/public/payments/{id}/cancel does; audited in the same commit. */
export function cancelPayment(app: App, p: PaymentRow, actor: Actor): Promise<PaymentRow> {
  return app.store.write(async (tx) => {
    const after = await cancelTx(app, tx, (await getPayment(tx, p.id))!);
    await insertAudit(tx, actor, 'payment.cancel', p.id, '', app.clocks.real());
    return after;
  });
}

/** A shop's test clock: now on it and its offset from real time (one read of the shop's offset). */
export async function testClock(app: App, shopId: string): Promise<{ now: number; offset_ms: number }> {
  const offset_ms = await app.clocks.offset(app.store, shopId);
  return { now: app.clocks.real() + offset_ms, offset_ms };
}

/** Move a shop's test clock forward and run what became due, as POST /v1/test/clock/advance does; returns jobs run. */
export function advanceTestClock(app: App, shopId: string, seconds: number): Promise<number> {
  return advanceShopClock(app, shopId, seconds);
}

/** Delete a shop's test data and set its test clock back, as POST /v1/test/reset does; rows deleted per table. */
export async function resetTest(app: App, shopId: string): Promise<Record<string, number>> {
  return resetTestData(app, shopId);
}

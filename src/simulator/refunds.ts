import type { App } from '../app-types';
import type { Tx } from '../db/store';
import { bankCodeFor } from '../payments/failures';
import type { RefundRow } from '../model/refund';
import { getRefund } from '../refunds/refunds';
import { refundAnswered } from '../bank-port/answers';
import { refundOutcome } from './plan';

/** Job kind: the test bank settles a pending refund after --sim-delay (its name predates the bank port; databases hold it). */
export const REFUND_SETTLE_JOB = 'refund.settle';

/** A refund reached the test bank: it answers after --sim-delay on the shop's clock. */
export async function startRefund(app: App, tx: Tx, r: RefundRow): Promise<void> {
  const dueAt = r.created_at + Math.round(app.config.simDelaySeconds * 1000);
  await app.scheduler.schedule(tx, { kind: REFUND_SETTLE_JOB, subjectId: r.id, shopId: r.shop_id, mode: r.mode, dueAt });
}

/** The test bank's answer for a pending refund: by its own amount (magic 01 fails). */
export async function answerRefund(app: App, tx: Tx, refundId: string): Promise<void> {
  const r = await getRefund(tx, refundId);
  if (!r || r.status !== 'pending' || r.mode !== 'test') return;
  const o = refundOutcome(r.amount);
  await refundAnswered(
    app,
    tx,
    r.id,
    o.status === 'succeeded' ? { outcome: 'succeeded' } : { outcome: 'refused', failureCode: o.failureCode, bankCode: bankCodeFor(o.failureCode) },
  );
}

/** Register the test bank's refund settlement; a refund no longer pending is left alone. */
export function registerRefundSimulator(app: App): void {
  app.scheduler.register(REFUND_SETTLE_JOB, (tx, job) => answerRefund(app, tx, job.subject_id));
}

import type { Tx } from '../../platform/storage/store';
import type { Core } from '../../money/core/core';
import type { ModuleJob } from '../../money/core/module';
import type { PaymentsCore } from '../../money/payments/core';
import { bankCodeFor } from '../../money/payments/failures';
import type { RefundRow } from '../../money/bank-port/refund';
import { getRefund } from '../../money/refunds/refunds';
import { refundAnswered } from '../../money/refunds/bank-answers';
import { refundOutcome } from './plan';

/** Job kind: the test bank settles a pending refund after --sim-delay (its name predates the bank port; databases hold it). */
export const REFUND_SETTLE_JOB = 'refund.settle';

/** A refund reached the test bank: it answers after --sim-delay on the shop's clock. */
export async function startRefund(core: Pick<Core, 'config' | 'scheduler'>, tx: Tx, r: RefundRow): Promise<void> {
  const dueAt = r.created_at + Math.round(core.config.simDelaySeconds * 1000);
  await core.scheduler.schedule(tx, { kind: REFUND_SETTLE_JOB, subjectId: r.id, shopId: r.shop_id, mode: r.mode, dueAt });
}

/** The test bank's answer for a pending refund: by its own amount (magic 01 fails). */
export async function answerRefund(core: PaymentsCore, tx: Tx, refundId: string): Promise<void> {
  const r = await getRefund(tx, refundId);
  if (!r || r.status !== 'pending' || r.mode !== 'test') return;
  const o = refundOutcome(r.amount);
  await refundAnswered(
    core,
    tx,
    r.id,
    o.status === 'succeeded' ? { outcome: 'succeeded' } : { outcome: 'refused', failureCode: o.failureCode, bankCode: bankCodeFor(o.failureCode) },
  );
}

/** The test bank's refund settlement job; a refund no longer pending is left alone. */
export function refundSettleJob(core: PaymentsCore): ModuleJob {
  return { kind: REFUND_SETTLE_JOB, run: (tx, job) => answerRefund(core, tx, job.subject_id) };
}

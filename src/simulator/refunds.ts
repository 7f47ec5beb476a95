import type { Tx } from '../db/store';
import type { Core } from '../core/core';
import type { ModuleJob } from '../core/module';
import type { PaymentsCore } from '../payments/core';
import { bankCodeFor } from '../payments/failures';
import type { RefundRow } from '../model/refund';
import { getRefund } from '../refunds/refunds';
import { refundAnswered } from '../refunds/bank-answers';
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

import type { Tx } from '../../platform/storage/store';
import type { Job } from '../../platform/queue/jobs-table';
import type { Core } from '../core/core';
import type { MoneyAnswer } from '../bank-port/port';
import { CHECK_JOBS, scheduleCheck, type Applied } from '../bank-port/checks';
import type { PaymentsCore } from '../payments/core';
import { checkTiming } from '../payments/state';
import { getRefund } from './store';
import { settleRefundTx } from './refunds';

export async function refundAnswered(core: PaymentsCore, tx: Tx, refundId: string, a: MoneyAnswer): Promise<Applied> {
  const r = await getRefund(tx, refundId);
  if (!r || r.status !== 'pending') return 'ignored';
  if (a.outcome === 'unknown') {
    await scheduleCheck(checkTiming(core), tx, 'refund', { id: r.id, shopId: r.shop_id, mode: r.mode, since: r.created_at });
    return 'checking';
  }
  await settleRefundTx(core, tx, r, a.outcome === 'succeeded' ? 'succeeded' : 'failed', a.outcome === 'refused' ? a.failureCode : '');
  await core.scheduler.cancel(tx, CHECK_JOBS.refund, r.id);
  return 'applied';
}

/** A bank's notification reaches only the shop's own live refunds; any other id is ignored. */
export async function notifiedRefundAnswered(core: PaymentsCore, tx: Tx, shopId: string, refundId: string, a: MoneyAnswer): Promise<Applied> {
  const r = await getRefund(tx, refundId);
  if (!r || r.shop_id !== shopId || r.mode !== 'live') return 'ignored';
  return refundAnswered(core, tx, r.id, a);
}

export async function runRefundCheck(core: Pick<Core, 'banks'>, tx: Tx, job: Job): Promise<void> {
  const r = await getRefund(tx, job.subject_id);
  if (r && r.status === 'pending') await (await core.banks.for(tx, r.shop_id, r.mode)).checkStatus(tx, { kind: 'refund', refund: r });
}

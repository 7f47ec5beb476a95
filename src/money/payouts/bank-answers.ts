import type { Tx } from '../../platform/storage/store';
import type { Job } from '../../platform/queue/jobs-table';
import type { Core } from '../core/core';
import type { MoneyAnswer } from '../bank-port/port';
import { CHECK_JOBS, scheduleCheck, type Applied } from '../bank-port/checks';
import { checkTiming } from '../payments/state';
import { finishPayoutTx } from './payouts';
import { getPayout } from './store';

export type PayoutAnswerCore = Pick<Core, 'clocks' | 'events' | 'scheduler' | 'config'>;

export async function payoutAnswered(core: PayoutAnswerCore, tx: Tx, payoutId: string, a: MoneyAnswer): Promise<Applied> {
  const p = await getPayout(tx, payoutId);
  if (!p || p.status !== 'pending') return 'ignored';
  if (a.outcome === 'unknown') {
    await scheduleCheck(checkTiming(core), tx, 'payout', { id: p.id, shopId: p.shop_id, mode: p.mode, since: p.created_at });
    return 'checking';
  }
  await finishPayoutTx(core, tx, p, a.outcome === 'succeeded' ? 'succeeded' : 'failed', a.outcome === 'refused' ? a.failureCode : '');
  await core.scheduler.cancel(tx, CHECK_JOBS.payout, p.id);
  return 'applied';
}

export async function runPayoutCheck(core: Pick<Core, 'banks'>, tx: Tx, job: Job): Promise<void> {
  const p = await getPayout(tx, job.subject_id);
  if (p && p.status === 'pending') await (await core.banks.forPayout(tx, p.shop_id, p.mode)).checkStatus(tx, { kind: 'payout', payoutId: p.id });
}

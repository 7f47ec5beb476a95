import type { Module, ModuleJob } from '../core/module';
import { CHECK_JOBS } from '../bank-port/checks';
import type { PaymentsCore } from './core';
import { expireTx, LINK_SWEEP_JOB, runPaymentCheck, SESSION_SWEEP_JOB, SWEEP_BATCH } from './state';
import { LINK_END, SESSION_END, type Deadline } from './store';
import type { PaymentRow } from '../bank-port/payment';

/** The shops' link and session sweeps and the payment status check, which mountModules registers in this order. Builds only. */
export function paymentsModule(core: PaymentsCore): Module {
  return {
    name: 'payments',
    jobs: [sweepJob(core, LINK_SWEEP_JOB, LINK_END), sweepJob(core, SESSION_SWEEP_JOB, SESSION_END), { kind: CHECK_JOBS.payment, run: (tx, job) => runPaymentCheck(core, tx, job) }],
  };
}

/** A sweep's job: it runs with the shop's clock at its due time and expires what is due by then. */
function sweepJob(core: PaymentsCore, kind: string, ends: Deadline): ModuleJob {
  return {
    kind,
    run: async (tx, job) => {
      const shopId = job.shop_id!;
      const now = await core.clocks.now(tx, shopId, job.mode);
      for (const p of await tx.all<PaymentRow>(ends.due, shopId, job.mode, now, SWEEP_BATCH)) await expireTx(core, tx, p);
      const next = (await tx.get<{ at: number | null }>(ends.next, shopId, job.mode))!.at;
      if (next !== null) await core.scheduler.schedule(tx, { kind, subjectId: job.subject_id, shopId, mode: job.mode, dueAt: Math.max(next, now) });
    },
  };
}

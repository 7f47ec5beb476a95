import type { ModuleJob } from '../core/module';
import type { PaymentsCore } from './core';
import { LINKS, SESSIONS, SWEEP_BATCH, type Sweep } from './expiry';
import { expireTx } from './state';
import { endedBy, nextEnd } from './store';

/** A sweep's job: it runs with the shop's clock at its due time and expires what is due by then. */
function sweepJob(core: PaymentsCore, sweep: Sweep): ModuleJob {
  return {
    kind: sweep.kind,
    run: async (tx, job) => {
      const shopId = job.shop_id!;
      const now = await core.clocks.now(tx, shopId, job.mode);
      for (const p of await endedBy(tx, sweep.ends, shopId, job.mode, now, SWEEP_BATCH)) await expireTx(core, tx, p);
      const next = await nextEnd(tx, sweep.ends, shopId, job.mode);
      if (next !== null) {
        await core.scheduler.schedule(tx, { kind: sweep.kind, subjectId: job.subject_id, shopId, mode: job.mode, dueAt: Math.max(next, now) });
      }
    },
  };
}

/** The jobs of the link and session sweeps. */
export function sweepJobs(core: PaymentsCore): ModuleJob[] {
  return [sweepJob(core, LINKS), sweepJob(core, SESSIONS)];
}

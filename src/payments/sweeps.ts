import type { App } from '../app-types';
import { LINKS, SESSIONS, SWEEP_BATCH, type Sweep } from './expiry';
import { expireTx } from './state';
import { endedBy, nextEnd } from './store';

/** Register a sweep: it runs with the shop's clock at its due time and expires what is due by then. */
function registerSweep(app: App, sweep: Sweep): void {
  app.scheduler.register(sweep.kind, async (tx, job) => {
    const shopId = job.shop_id!;
    const now = await app.clocks.now(tx, shopId, job.mode);
    for (const p of await endedBy(tx, sweep.ends, shopId, job.mode, now, SWEEP_BATCH)) await expireTx(app, tx, p);
    const next = await nextEnd(tx, sweep.ends, shopId, job.mode);
    if (next !== null) {
      await app.scheduler.schedule(tx, { kind: sweep.kind, subjectId: job.subject_id, shopId, mode: job.mode, dueAt: Math.max(next, now) });
    }
  });
}

/** Register the link and session sweeps. */
export function registerSweeps(app: App): void {
  registerSweep(app, LINKS);
  registerSweep(app, SESSIONS);
}

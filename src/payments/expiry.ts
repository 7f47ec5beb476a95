import type { App } from '../app-types';
import type { Tx } from '../db/store';
import type { Mode } from '../scheduler/clock';
import { expireTx } from './state';
import { nextLinkEnd, pendingExpiredBy } from './store';
import type { PaymentRow } from './types';

/**
 * Job kind: expire the pending payments of one shop and mode whose links have run out. One such job waits per
 * shop and mode, due at the earliest expires_at among its pending payments; each run expires every payment due
 * by then and schedules the next. A create therefore writes no job of its own (it only moves the sweep earlier
 * when its link ends first), and a payment that leaves `pending` simply drops out of the partial index
 * `payments_pending_expiry` instead of cancelling anything.
 */
export const LINK_SWEEP_JOB = 'payment.link_sweep';

/** Most payments one sweep run expires; the next run, due at once, takes the rest. */
const SWEEP_BATCH = 200;

function sweepSubject(shopId: string, mode: Mode): string {
  return `${shopId}/${mode}`;
}

/** In the create's transaction: make sure a sweep is due no later than this payment's expires_at. */
export function ensureLinkSweep(app: App, tx: Tx, p: PaymentRow): void {
  const subject = sweepSubject(p.shop_id, p.mode);
  const due = app.scheduler.nextDue(tx, LINK_SWEEP_JOB, subject);
  if (due !== null && due <= p.expires_at) return;
  if (due !== null) app.scheduler.cancel(tx, LINK_SWEEP_JOB, subject);
  app.scheduler.schedule(tx, { kind: LINK_SWEEP_JOB, subjectId: subject, shopId: p.shop_id, mode: p.mode, dueAt: p.expires_at });
}

/** Register the sweep: it runs with the shop's clock at its due time and expires what is due by then. */
export function registerLinkSweep(app: App): void {
  app.scheduler.register(LINK_SWEEP_JOB, (tx, job) => {
    const shopId = job.shop_id!;
    const now = app.clocks.now(shopId, job.mode);
    for (const p of pendingExpiredBy(tx, shopId, job.mode, now, SWEEP_BATCH)) expireTx(app, tx, p);
    const next = nextLinkEnd(tx, shopId, job.mode);
    if (next !== null) {
      app.scheduler.schedule(tx, { kind: LINK_SWEEP_JOB, subjectId: job.subject_id, shopId, mode: job.mode, dueAt: Math.max(next, now) });
    }
  });
}

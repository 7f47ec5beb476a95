import type { Tx } from '../../platform/storage/store';
import type { Mode } from '../../platform/clock';
import type { Scheduler } from '../../platform/queue/jobs';

/**
 * Expire a shop and mode's pending payments whose links ran out: one job per shop and mode, due at the earliest
 * expires_at, expiring all due and scheduling the next. A create writes no job (it may move the sweep earlier), and
 * a payment leaving `pending` just drops out of the partial index `payments_pending_expiry`.
 */
export const LINK_SWEEP_JOB = 'payment.link_sweep';

/** The same for processing payments whose bank session ended (processing_until, index `payments_session_end`). */
export const SESSION_SWEEP_JOB = 'payment.session_sweep';

/** The next run, due at once, takes the rest. */
export const SWEEP_BATCH = 200;

/**
 * Make sure the shop's sweep of `kind` (LINK_SWEEP_JOB in a create's transaction, SESSION_SWEEP_JOB in the one
 * that opens a session) is due no later than `at`.
 */
export async function ensureSweep(scheduler: Scheduler, tx: Tx, kind: string, shopId: string, mode: Mode, at: number): Promise<void> {
  const subject = `${shopId}/${mode}`;
  const due = await scheduler.nextDue(tx, kind, subject);
  if (due !== null && due <= at) return;
  if (due !== null) await scheduler.cancel(tx, kind, subject);
  await scheduler.schedule(tx, { kind, subjectId: subject, shopId, mode, dueAt: at });
}

import type { Tx } from '../../platform/storage/store';
import type { Mode } from '../../platform/clock';
import type { Scheduler } from '../../platform/queue/jobs';
import { LINK_END, nextEnd, SESSION_END, type Deadline } from './store';
import type { PaymentRow } from '../bank-port/payment';

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

export interface Sweep {
  kind: string;
  ends: Deadline;
}

export const LINKS: Sweep = { kind: LINK_SWEEP_JOB, ends: LINK_END };
export const SESSIONS: Sweep = { kind: SESSION_SWEEP_JOB, ends: SESSION_END };

function sweepSubject(shopId: string, mode: Mode): string {
  return `${shopId}/${mode}`;
}

/** Make sure the shop's sweep of this kind is due no later than `at`. */
async function ensureSweep(scheduler: Scheduler, tx: Tx, sweep: Sweep, p: Pick<PaymentRow, 'shop_id' | 'mode'>, at: number): Promise<void> {
  const subject = sweepSubject(p.shop_id, p.mode);
  const due = await scheduler.nextDue(tx, sweep.kind, subject);
  if (due !== null && due <= at) return;
  if (due !== null) await scheduler.cancel(tx, sweep.kind, subject);
  await scheduler.schedule(tx, { kind: sweep.kind, subjectId: subject, shopId: p.shop_id, mode: p.mode, dueAt: at });
}

/** In the create's transaction. */
export async function ensureLinkSweep(scheduler: Scheduler, tx: Tx, p: Pick<PaymentRow, 'shop_id' | 'mode' | 'expires_at'>): Promise<void> {
  await ensureSweep(scheduler, tx, LINKS, p, p.expires_at);
}

/** In the transaction that opens the session. */
export async function ensureSessionSweep(scheduler: Scheduler, tx: Tx, p: PaymentRow, until: number): Promise<void> {
  await ensureSweep(scheduler, tx, SESSIONS, p, until);
}

import type { Tx } from '../../platform/storage/store';
import type { Mode } from '../../platform/clock';
import type { Scheduler } from '../../platform/queue/jobs';
import { LINK_END, nextEnd, SESSION_END, type Deadline } from './store';
import type { PaymentRow } from '../bank-port/payment';

/**
 * Job kind: expire the pending payments of one shop and mode whose links have run out. One such job waits per
 * shop and mode, due at the earliest expires_at among its pending payments; each run expires every payment due
 * by then and schedules the next. A create therefore writes no job of its own (it only moves the sweep earlier
 * when its link ends first), and a payment that leaves `pending` simply drops out of the partial index
 * `payments_pending_expiry` instead of cancelling anything.
 */
export const LINK_SWEEP_JOB = 'payment.link_sweep';

/**
 * Job kind: expire the processing payments of one shop and mode whose bank session has ended, the same way:
 * one job per shop and mode, due at the earliest processing_until (partial index `payments_session_end`). A
 * session that opens writes no job unless it ends before the sweep's time, and an answer that closes it
 * cancels nothing.
 */
export const SESSION_SWEEP_JOB = 'payment.session_sweep';

/** Most payments one sweep run expires; the next run, due at once, takes the rest. */
export const SWEEP_BATCH = 200;

/** One sweep: its job kind and the deadline it watches. */
export interface Sweep {
  kind: string;
  ends: Deadline;
}

/** The sweep of pending payments whose links ran out. */
export const LINKS: Sweep = { kind: LINK_SWEEP_JOB, ends: LINK_END };
/** The sweep of processing payments whose bank sessions ended. */
export const SESSIONS: Sweep = { kind: SESSION_SWEEP_JOB, ends: SESSION_END };

function sweepSubject(shopId: string, mode: Mode): string {
  return `${shopId}/${mode}`;
}

/** In the caller's transaction: make sure the shop's sweep of this kind is due no later than `at`. */
async function ensureSweep(scheduler: Scheduler, tx: Tx, sweep: Sweep, p: Pick<PaymentRow, 'shop_id' | 'mode'>, at: number): Promise<void> {
  const subject = sweepSubject(p.shop_id, p.mode);
  const due = await scheduler.nextDue(tx, sweep.kind, subject);
  if (due !== null && due <= at) return;
  if (due !== null) await scheduler.cancel(tx, sweep.kind, subject);
  await scheduler.schedule(tx, { kind: sweep.kind, subjectId: subject, shopId: p.shop_id, mode: p.mode, dueAt: at });
}

/** In the create's transaction: make sure a link sweep is due no later than this payment's expires_at. */
export async function ensureLinkSweep(scheduler: Scheduler, tx: Tx, p: Pick<PaymentRow, 'shop_id' | 'mode' | 'expires_at'>): Promise<void> {
  await ensureSweep(scheduler, tx, LINKS, p, p.expires_at);
}

/** In the transaction that opens a bank session: make sure a session sweep is due no later than its end. */
export async function ensureSessionSweep(scheduler: Scheduler, tx: Tx, p: PaymentRow, until: number): Promise<void> {
  await ensureSweep(scheduler, tx, SESSIONS, p, until);
}

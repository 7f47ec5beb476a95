import type { Tx } from '../../platform/storage/store';
import type { Clocks, Mode } from '../../platform/clock';
import type { Scheduler } from '../../platform/queue/jobs';

// What every domain's bank answers share. Each domain applies the answers about its own operations at its own
// entry point (payments/bank-answers.ts, refunds/bank-answers.ts, payouts/bank-answers.ts), whoever gives
// them: a bank's own job after its request, its HTTP notification, the simulator's scheduled answer, or a
// status check. Final answers move the operation once (a late or repeated one finds it moved on and changes
// nothing: nothing goes backwards); `unknown` changes nothing and schedules a status check, later and later
// until the answer is final.

/** Job kinds of status checks, one per kind of operation; the subject is the operation's id. */
export const CHECK_JOBS = { payment: 'bank.check_payment', refund: 'bank.check_refund', payout: 'bank.check_payout' } as const;

/** A kind of operation a status check asks about. */
export type CheckKind = keyof typeof CHECK_JOBS;

/** What applying an answer did. */
export type Applied = 'applied' | 'ignored' | 'checking' | 'amount_mismatch';

/** What scheduling a status check reads: the clocks, the jobs table and how long a bank may stay silent at first. */
export interface CheckTiming {
  readonly clocks: Clocks;
  readonly scheduler: Scheduler;
  /** The configured acquirerSyncAfterSeconds, read when the check is scheduled. */
  readonly syncAfterSeconds: number;
}

/** The operation a status check is about, and when it began at the bank. */
export interface CheckedOperation {
  id: string;
  shopId: string;
  mode: Mode;
  since: number;
}

/**
 * The next status check: `syncAfter` after the operation began at first, then as long again as it has
 * already waited, so the gaps double while the bank stays silent.
 */
export async function scheduleCheck(t: CheckTiming, tx: Tx, kind: CheckKind, op: CheckedOperation): Promise<void> {
  const now = await t.clocks.now(tx, op.shopId, op.mode);
  const syncAfter_ms = Math.round(t.syncAfterSeconds * 1000);
  const waited_ms = Math.max(0, now - op.since);
  await t.scheduler.cancel(tx, CHECK_JOBS[kind], op.id);
  await t.scheduler.schedule(tx, { kind: CHECK_JOBS[kind], subjectId: op.id, shopId: op.shopId, mode: op.mode, dueAt: now + Math.max(syncAfter_ms, waited_ms) });
}

/** An answer that was not applied, as the operator sees it. */
export interface Mismatch {
  shopId: string;
  subjectId: string;
  expected: number;
  told: number;
  outcome: string;
}

/**
 * Keep an answer that was not applied (the bank's amount differs from the operation's, or the bank took a
 * payment kopek had closed), for the operator (kopek doctor names it): money may have moved at the bank
 * that kopek does not show. Stamped with real time, whatever the shop's test clock says.
 */
export async function recordMismatch(clocks: Pick<Clocks, 'real'>, tx: Tx, m: Mismatch): Promise<void> {
  await tx.run(
    'INSERT INTO bank_mismatches (shop_id, subject_id, expected_amount, bank_amount, answer, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    m.shopId,
    m.subjectId,
    m.expected,
    m.told,
    m.outcome,
    clocks.real(),
  );
}

import type { Tx } from '../../platform/storage/store';
import type { Clocks, Mode } from '../../platform/clock';
import type { Scheduler } from '../../platform/queue/jobs';

// What every domain's bank answers share. Each domain applies answers at its own entry point (*/bank-answers.ts),
// whoever gives them. A final answer moves the operation once (a late or repeated one changes nothing); `unknown`
// schedules a status check, later and later until the answer is final.

/** One per kind of operation; the subject is the operation's id. */
export const CHECK_JOBS = { payment: 'bank.check_payment', refund: 'bank.check_refund', payout: 'bank.check_payout' } as const;

export type CheckKind = keyof typeof CHECK_JOBS;

export type Applied = 'applied' | 'ignored' | 'checking' | 'amount_mismatch';

export interface CheckTiming {
  readonly clocks: Clocks;
  readonly scheduler: Scheduler;
  /** Read when the check is scheduled. */
  readonly syncAfterSeconds: number;
}

/** `syncAfter` after the operation began (`since`), then as long again as it waited: the gaps double while the bank is silent. */
export async function scheduleCheck(t: CheckTiming, tx: Tx, kind: CheckKind, op: { id: string; shopId: string; mode: Mode; since: number }): Promise<void> {
  const now = await t.clocks.now(tx, op.shopId, op.mode);
  const syncAfter_ms = Math.round(t.syncAfterSeconds * 1000);
  const waited_ms = Math.max(0, now - op.since);
  await t.scheduler.cancel(tx, CHECK_JOBS[kind], op.id);
  await t.scheduler.schedule(tx, { kind: CHECK_JOBS[kind], subjectId: op.id, shopId: op.shopId, mode: op.mode, dueAt: now + Math.max(syncAfter_ms, waited_ms) });
}

/** For kopek doctor: the bank's amount differs, or it took a payment kopek had closed. Stamped with real time. */
export async function recordMismatch(clocks: Pick<Clocks, 'real'>, tx: Tx, m: { shopId: string; subjectId: string; expected: number; told: number; outcome: string }): Promise<void> {
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

import type { App } from '../app-types';
import type { Tx } from '../db/store';
import type { Job } from '../scheduler/jobs-table';
import { getPayment } from '../payments/store';
import { SESSION_TTL_MS, type ConcreteMethod, type PaymentRow } from '../model/payment';
import { bankCancelTx, expireTx, resolveTx } from '../payments/state';
import { getRefund, settleRefundTx } from '../refunds/refunds';
import { finishPayoutTx } from '../payouts/payouts';
import { getPayout } from '../payouts/store';
import type { MoneyAnswer, PaymentAnswer } from './port';

// Where every bank answer enters the domain, whoever gives it: a bank's own job after its request, its
// HTTP notification, the simulator's scheduled answer, or a status check. Final answers move the
// operation once (a late or repeated one finds it moved on and changes nothing: nothing goes backwards);
// `unknown` changes nothing and schedules a status check, later and later until the answer is final.

/** Job kinds of status checks, one per kind of operation; the subject is the operation's id. */
export const CHECK_JOBS = { payment: 'bank.check_payment', refund: 'bank.check_refund', payout: 'bank.check_payout' } as const;

/** What applying an answer did. */
export type Applied = 'applied' | 'ignored' | 'checking' | 'amount_mismatch';

/**
 * The next status check: `syncAfter` after the operation began at first, then as long again as it has
 * already waited, so the gaps double while the bank stays silent.
 */
async function scheduleCheck(app: App, tx: Tx, kind: keyof typeof CHECK_JOBS, id: string, shopId: string, mode: 'test' | 'live', since: number): Promise<void> {
  const now = await app.clocks.now(tx, shopId, mode);
  const syncAfter_ms = Math.round(app.config.acquirerSyncAfterSeconds * 1000);
  const waited_ms = Math.max(0, now - since);
  await app.scheduler.cancel(tx, CHECK_JOBS[kind], id);
  await app.scheduler.schedule(tx, { kind: CHECK_JOBS[kind], subjectId: id, shopId, mode, dueAt: now + Math.max(syncAfter_ms, waited_ms) });
}

/**
 * Keep an answer that was not applied (the bank's amount differs from the operation's, or the bank took a
 * payment kopek had closed), for the operator (kopek doctor names it): money may have moved at the bank
 * that kopek does not show.
 */
async function recordMismatch(app: App, tx: Tx, shopId: string, subjectId: string, expected: number, told: number, outcome: string): Promise<void> {
  await tx.run(
    'INSERT INTO bank_mismatches (shop_id, subject_id, expected_amount, bank_amount, answer, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    shopId,
    subjectId,
    expected,
    told,
    outcome,
    app.clocks.real(),
  );
}

/**
 * When a processing payment's bank session opened (its end less the method's session lifetime): the bank
 * has known of the payment since then, not since the payment was created, which may be a day earlier.
 */
function sessionStart(p: PaymentRow): number {
  const ttl = SESSION_TTL_MS[p.method as ConcreteMethod];
  return p.processing_until !== null && ttl !== undefined ? Math.max(p.created_at, p.processing_until - ttl) : p.created_at;
}

/**
 * Apply a bank's answer about a payment (its id, or its row as just read in this transaction); `amount`, when
 * the bank states it, must match the payment's.
 */
export async function paymentAnswered(app: App, tx: Tx, payment: string | PaymentRow, a: PaymentAnswer, amount?: number): Promise<Applied> {
  const p = typeof payment === 'string' ? await getPayment(tx, payment) : payment;
  if (!p) return 'ignored';
  if (p.status !== 'processing') {
    // The bank took the money of a payment kopek already closed without it (expired, failed, cancelled):
    // it never moves back, but the operator must see it and settle it at the bank.
    if (a.outcome === 'succeeded' && (p.status === 'expired' || p.status === 'failed' || p.status === 'cancelled')) {
      await recordMismatch(app, tx, p.shop_id, p.id, p.amount, amount ?? p.amount, `succeeded after ${p.status}`);
    }
    return 'ignored';
  }
  if (amount !== undefined && amount !== p.amount) {
    await recordMismatch(app, tx, p.shop_id, p.id, p.amount, amount, a.outcome);
    return 'amount_mismatch';
  }
  switch (a.outcome) {
    case 'unknown':
      await scheduleCheck(app, tx, 'payment', p.id, p.shop_id, p.mode, sessionStart(p));
      return 'checking';
    case 'succeeded':
      await resolveTx(app, tx, p, { outcome: 'succeeded', rrn: a.rrn, bankName: a.bankName, card: a.card, phoneMask: a.phoneMask, payerBank: a.payerBank });
      break;
    case 'refused':
      await resolveTx(app, tx, p, { outcome: 'failed', failureCode: a.failureCode, bankFailureCode: a.bankCode, bankName: a.bankName, card: a.card });
      break;
    case 'expired':
      await expireTx(app, tx, p);
      break;
    case 'cancelled':
      await bankCancelTx(app, tx, p);
      break;
  }
  await app.scheduler.cancel(tx, CHECK_JOBS.payment, p.id);
  return 'applied';
}

/** Apply a bank's answer about a pending refund. */
export async function refundAnswered(app: App, tx: Tx, refundId: string, a: MoneyAnswer): Promise<Applied> {
  const r = await getRefund(tx, refundId);
  if (!r || r.status !== 'pending') return 'ignored';
  if (a.outcome === 'unknown') {
    await scheduleCheck(app, tx, 'refund', r.id, r.shop_id, r.mode, r.created_at);
    return 'checking';
  }
  await settleRefundTx(app, tx, r, a.outcome === 'succeeded' ? 'succeeded' : 'failed', a.outcome === 'refused' ? a.failureCode : '');
  await app.scheduler.cancel(tx, CHECK_JOBS.refund, r.id);
  return 'applied';
}

/** Apply a bank's answer about a pending payout. */
export async function payoutAnswered(app: App, tx: Tx, payoutId: string, a: MoneyAnswer): Promise<Applied> {
  const p = await getPayout(tx, payoutId);
  if (!p || p.status !== 'pending') return 'ignored';
  if (a.outcome === 'unknown') {
    await scheduleCheck(app, tx, 'payout', p.id, p.shop_id, p.mode, p.created_at);
    return 'checking';
  }
  await finishPayoutTx(app, tx, p, a.outcome === 'succeeded' ? 'succeeded' : 'failed', a.outcome === 'refused' ? a.failureCode : '');
  await app.scheduler.cancel(tx, CHECK_JOBS.payout, p.id);
  return 'applied';
}

/** Run a status check: ask the operation's bank again, unless the operation is final by now. */
async function runCheck(app: App, tx: Tx, kind: keyof typeof CHECK_JOBS, job: Job): Promise<void> {
  if (kind === 'payment') {
    const p = await getPayment(tx, job.subject_id);
    if (p && p.status === 'processing') await (await app.banks.for(tx, p.shop_id, p.mode)).checkStatus(tx, { kind, payment: p });
  } else if (kind === 'refund') {
    const r = await getRefund(tx, job.subject_id);
    if (r && r.status === 'pending') await (await app.banks.for(tx, r.shop_id, r.mode)).checkStatus(tx, { kind, refund: r });
  } else {
    const p = await getPayout(tx, job.subject_id);
    if (p && p.status === 'pending') await (await app.banks.for(tx, p.shop_id, p.mode)).checkStatus(tx, { kind, payoutId: p.id });
  }
}

/** Register the status-check jobs (one call from registerDomains). */
export function registerBankChecks(app: App): void {
  for (const kind of Object.keys(CHECK_JOBS) as Array<keyof typeof CHECK_JOBS>) {
    app.scheduler.register(CHECK_JOBS[kind], (tx, job) => runCheck(app, tx, kind, job));
  }
}

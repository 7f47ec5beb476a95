import type { Tx } from '../../platform/storage/store';
import type { Job } from '../../platform/queue/jobs-table';
import type { Core } from '../core/core';
import type { PaymentAnswer } from '../bank-port/port';
import { CHECK_JOBS, recordMismatch, scheduleCheck, type Applied, type CheckTiming } from '../bank-port/checks';
import { SESSION_TTL_MS, type ConcreteMethod, type PaymentRow } from '../bank-port/payment';
import type { PaymentsCore } from './core';
import { bankCancelTx, expireTx, resolveTx } from './state';
import { getPayment } from './store';

// Where every bank answer about a payment enters the domain, whoever gives it (see bank-port/checks.ts).

/** The configured wait, read at the time of scheduling. */
export function checkTiming(core: Pick<Core, 'clocks' | 'scheduler' | 'config'>): CheckTiming {
  return { clocks: core.clocks, scheduler: core.scheduler, syncAfterSeconds: core.config.acquirerSyncAfterSeconds };
}

/** Its end less the method's session lifetime: the bank knows the payment since then, not since its creation. */
function sessionStart(p: PaymentRow): number {
  const ttl = SESSION_TTL_MS[p.method as ConcreteMethod];
  return p.processing_until !== null && ttl !== undefined ? Math.max(p.created_at, p.processing_until - ttl) : p.created_at;
}

/** `payment`: its id, or its row as just read in this transaction; `amount`, when the bank states it, must match. */
export async function paymentAnswered(core: PaymentsCore, tx: Tx, payment: string | PaymentRow, a: PaymentAnswer, amount?: number): Promise<Applied> {
  const p = typeof payment === 'string' ? await getPayment(tx, payment) : payment;
  if (!p) return 'ignored';
  if (p.status !== 'processing') {
  // Money taken for a payment kopek closed without it never moves it back, but the operator must see it.
    if (a.outcome === 'succeeded' && (p.status === 'expired' || p.status === 'failed' || p.status === 'cancelled')) {
      await recordMismatch(core.clocks, tx, { shopId: p.shop_id, subjectId: p.id, expected: p.amount, told: amount ?? p.amount, outcome: `succeeded after ${p.status}` });
    }
    return 'ignored';
  }
  if (amount !== undefined && amount !== p.amount) {
    await recordMismatch(core.clocks, tx, { shopId: p.shop_id, subjectId: p.id, expected: p.amount, told: amount, outcome: a.outcome });
    return 'amount_mismatch';
  }
  switch (a.outcome) {
    case 'unknown':
      await scheduleCheck(checkTiming(core), tx, 'payment', { id: p.id, shopId: p.shop_id, mode: p.mode, since: sessionStart(p) });
      return 'checking';
    case 'succeeded':
      await resolveTx(core, tx, p, { outcome: 'succeeded', rrn: a.rrn, bankName: a.bankName, card: a.card, phoneMask: a.phoneMask, payerBank: a.payerBank });
      break;
    case 'refused':
      await resolveTx(core, tx, p, { outcome: 'failed', failureCode: a.failureCode, bankFailureCode: a.bankCode, bankName: a.bankName, card: a.card });
      break;
    case 'expired':
      await expireTx(core, tx, p);
      break;
    case 'cancelled':
      await bankCancelTx(core, tx, p);
      break;
  }
  await core.scheduler.cancel(tx, CHECK_JOBS.payment, p.id);
  return 'applied';
}

/** Only the shop's own live payments (a notification never reaches another shop's data, nor test mode). */
export async function notifiedPaymentAnswered(core: PaymentsCore, tx: Tx, shopId: string, paymentId: string, a: PaymentAnswer, amount?: number): Promise<Applied> {
  const p = await getPayment(tx, paymentId);
  if (!p || p.shop_id !== shopId || p.mode !== 'live') return 'ignored';
  return paymentAnswered(core, tx, p, a, amount);
}

/** Ask the bank again, unless the payment is final by now. */
export async function runPaymentCheck(core: Pick<Core, 'banks'>, tx: Tx, job: Job): Promise<void> {
  const p = await getPayment(tx, job.subject_id);
  if (p && p.status === 'processing') await (await core.banks.for(tx, p.shop_id, p.mode)).checkStatus(tx, { kind: 'payment', payment: p });
}

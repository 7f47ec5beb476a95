import type { PaymentsCore } from '../../src/money/payments/core';
import type { Module } from '../../src/money/core/module';
import type { Tx } from '../../src/platform/storage/store';
import type { BankPort, CallbackRequest, CallbackResult, MoneyAnswer, NewPayment, OperationRef, PaymentAnswer, PayoutRequest, PayoutStart, SessionRequest } from '../../src/money/bank-port/port';
import { paymentAnswered } from '../../src/money/payments/state';
import { refundAnswered } from '../../src/money/refunds/bank-answers';
import { payoutAnswered } from '../../src/money/payouts/bank-answers';
import { getPayment } from '../../src/money/payments/store';
import type { RefundRow } from '../../src/money/bank-port/refund';
import type { PaymentRow } from '../../src/money/bank-port/payment';

/** The provider name shops set to reach the unsure bank. */
export const UNSURE = 'unsure';

/** The shared secret a notification of the unsure bank must carry. */
export const UNSURE_SECRET = 'unsure-secret';

/** Its job: the reply to a request, which never says how the operation ended. */
const REPLY_JOB = 'unsure.reply';

/**
 * A second bank behind the port, mounted as any bank is (a module of StartOptions.modules, a shop acquirer naming
 * it): every request is answered `unknown` (as a timeout would leave it), and only a status check or a
 * notification tells the final outcome. Status checks answer `unknown` `silentChecks` more times first.
 * Payments and refunds whose amount ends in 01 are refused (do_not_honor, bank code 05).
 */
export class UnsureBank implements BankPort {
  readonly provider = UNSURE;
  readonly sendsPayouts = true;
  /** Every request the domain made, in order: `<op> <id>`. */
  readonly calls: string[] = [];
  /** How many status checks still answer unknown before the final answer. */
  silentChecks = 0;

  constructor(private readonly app: PaymentsCore) {}

  /** The bank as a module: itself behind the port, and its reply job. */
  module(): Module {
    return { name: UNSURE, banks: [this], jobs: [{ kind: REPLY_JOB, run: (tx, job) => this.replyUnknown(tx, String(job.payload.op), job.subject_id) }] };
  }

  private async send(tx: Tx, op: 'payment' | 'refund' | 'payout', id: string, shopId: string, at: number): Promise<void> {
    this.calls.push(`${op} ${id}`);
    await this.app.scheduler.schedule(tx, { kind: REPLY_JOB, subjectId: id, shopId, mode: 'live', dueAt: at, payload: { op } });
  }

  private async replyUnknown(tx: Tx, op: string, id: string): Promise<void> {
    const unknown = { outcome: 'unknown' as const, reason: 'timeout' };
    if (op === 'payment') await paymentAnswered(this.app, tx, id, unknown);
    else if (op === 'refund') await refundAnswered(this.app, tx, id, unknown);
    else await payoutAnswered(this.app, tx, id, unknown);
  }

  async describePayment(_tx: Tx, _p: NewPayment): Promise<Record<string, string>> {
    return {};
  }

  async openSession(tx: Tx, req: SessionRequest): Promise<void> {
    await this.send(tx, 'payment', req.payment.id, req.payment.shop_id, await this.app.clocks.now(tx, req.payment.shop_id, 'live'));
  }

  async chargeSaved(tx: Tx, req: SessionRequest & { tokenId: string }): Promise<void> {
    this.calls.push(`charge ${req.tokenId}`);
    await this.openSession(tx, req);
  }

  async cancel(_tx: Tx, payment: PaymentRow): Promise<void> {
    this.calls.push(`cancel ${payment.id}`);
  }

  async refund(tx: Tx, refund: RefundRow): Promise<void> {
    await this.send(tx, 'refund', refund.id, refund.shop_id, refund.created_at);
  }

  async payout(tx: Tx, req: PayoutRequest): Promise<PayoutStart> {
    await this.send(tx, 'payout', req.id, req.shopId, req.at);
    return { accepted: true, bankRef: `unsure-${req.id.slice(0, 8)}` };
  }

  async checkStatus(tx: Tx, op: OperationRef): Promise<void> {
    const id = op.kind === 'payment' ? op.payment.id : op.kind === 'refund' ? op.refund.id : op.payoutId;
    this.calls.push(`check ${op.kind} ${id}`);
    if (this.silentChecks > 0) {
      this.silentChecks--;
      await this.replyUnknown(tx, op.kind, id);
      return;
    }
    if (op.kind === 'payment') await paymentAnswered(this.app, tx, id, paymentAnswerFor(op.payment.amount));
    else if (op.kind === 'refund') await refundAnswered(this.app, tx, id, moneyAnswerFor(op.refund.amount));
    else await payoutAnswered(this.app, tx, id, { outcome: 'succeeded' });
  }

  async callback(req: CallbackRequest): Promise<CallbackResult> {
    const b = (req.body ?? {}) as Record<string, unknown>;
    const none: CallbackResult = { valid: false, payments: [], refunds: [], reply: '' };
    if (b.secret !== UNSURE_SECRET || typeof b.payment_id !== 'string') return none;
    const p = await getPayment(this.app.store, b.payment_id);
    const answer: PaymentAnswer =
      b.status === 'paid' ? { outcome: 'succeeded', rrn: '111122223333', bankName: 'Unsure Bank' } : b.status === 'declined' ? { outcome: 'refused', failureCode: 'do_not_honor', bankCode: '05' } : { outcome: 'unknown', reason: String(b.status) };
    return { valid: true, payments: [{ paymentId: p?.id ?? b.payment_id, amount: typeof b.amount === 'number' ? b.amount : undefined, answer }], refunds: [], reply: 'ACK' };
  }

  creationExtras(): undefined {
    return undefined;
  }

  async pageSession(): Promise<undefined> {
    return undefined;
  }
}

function paymentAnswerFor(amount: number): PaymentAnswer {
  return amount % 100 === 1 ? { outcome: 'refused', failureCode: 'do_not_honor', bankCode: '05', bankName: 'Unsure Bank' } : { outcome: 'succeeded', rrn: '123456789012', bankName: 'Unsure Bank' };
}

function moneyAnswerFor(amount: number): MoneyAnswer {
  return amount % 100 === 1 ? { outcome: 'refused', failureCode: 'do_not_honor', bankCode: '05' } : { outcome: 'succeeded' };
}

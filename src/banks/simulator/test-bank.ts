import type { Tx } from '../../platform/storage/store';
import type { PaymentsCore } from '../../money/payments/core';
import type { PaymentRow } from '../../money/bank-port/payment';
import type { RefundRow } from '../../money/bank-port/refund';
import { paymentAnswered } from '../../money/payments/bank-answers';
import type { BankPort, CallbackResult, NewPayment, OperationRef, PayoutRequest, PayoutStart, SessionRequest } from '../../money/bank-port/port';
import { TEST_PROVIDER } from '../../money/bank-port/directory';
import { planForAmount } from './plan';
import { takePlan } from './token-outcomes';
import { plannedAnswer, scheduleSimulatedResolution } from './payments';
import { answerRefund, startRefund } from './refunds';
import { answerPlannedPayout, startPayout } from './payouts';

/**
 * The test-mode bank: every sk_test_ operation reaches it. It plans each payment's answer at creation
 * (magic amounts, a token's queued outcomes), answers after --sim-delay on the shop's test clock through
 * its own jobs (simulatorModule lists them; the constructor registers nothing), lets the buyer decide on the
 * hosted page's card form, 3-D Secure and bank screens, and never leaves an answer unknown.
 */
export class SimulatorBank implements BankPort {
  readonly provider = TEST_PROVIDER;
  readonly sendsPayouts = true;

  constructor(private readonly core: PaymentsCore) {}

  async describePayment(tx: Tx, p: NewPayment): Promise<Record<string, string>> {
    const plan = (p.tokenId && (await takePlan(tx, p.tokenId))) || planForAmount(p.amount);
    return { simulator_outcome: plan.outcome, simulator_failure_code: plan.failureCode };
  }

  async openSession(tx: Tx, req: SessionRequest): Promise<void> {
    // With SBP the buyer pays in the bank's app, so the test bank answers by itself; on the card form and
    // the bank confirmation screens the buyer's own input on the page decides.
    if (req.by === 'buyer' && req.payment.method !== 'sbp') return;
    await scheduleSimulatedResolution(this.core, tx, req.payment);
  }

  async chargeSaved(tx: Tx, req: SessionRequest): Promise<void> {
    await scheduleSimulatedResolution(this.core, tx, req.payment);
  }

  async cancel(): Promise<void> {
    // A pending test payment holds nothing open at the test bank.
  }

  async refund(tx: Tx, refund: RefundRow): Promise<void> {
    await startRefund(this.core, tx, refund);
  }

  async checkStatus(tx: Tx, op: OperationRef): Promise<void> {
    if (op.kind === 'payment') {
      const answer = plannedAnswer(op.payment);
      if (answer) await paymentAnswered(this.core, tx, op.payment.id, answer);
    } else if (op.kind === 'refund') {
      await answerRefund(this.core, tx, op.refund.id);
    } else {
      await answerPlannedPayout(this.core, tx, op.payoutId);
    }
  }

  async payout(tx: Tx, req: PayoutRequest): Promise<PayoutStart> {
    return startPayout(this.core, tx, req);
  }

  async callback(): Promise<CallbackResult> {
    // The test bank answers through its own jobs and the hosted page, never over HTTP.
    return { valid: false, payments: [], refunds: [], reply: '' };
  }

  async pageSession(): Promise<undefined> {
    // The test bank's screens are the hosted page's own (card form, 3-D Secure, bank app).
    return undefined;
  }

  creationExtras(row: PaymentRow): Record<string, unknown> {
    const meta = JSON.parse(row.metadata) as Record<string, string>;
    const base = this.core.baseUrl();
    const page = `${this.core.payPageUrl()}/pay/${row.id}`;
    return {
      simulator: {
        outcome: meta.simulator_outcome,
        failure_code: meta.simulator_failure_code,
        actions: { pay_page: page, simulate: `${base}/v1/test/payments/${row.id}/simulate`, clock_advance: `${base}/v1/test/clock/advance` },
      },
    };
  }
}

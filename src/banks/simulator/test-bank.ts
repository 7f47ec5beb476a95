import type { Tx } from '../../platform/storage/store';
import type { Module } from '../../money/core/module';
import type { PaymentsCore } from '../../money/payments/core';
import { getRefund } from '../../money/refunds/refunds';
import { refundAnswered } from '../../money/refunds/bank-answers';
import type { PaymentRow } from '../../money/bank-port/payment';
import type { RefundRow } from '../../money/bank-port/refund';
import { paymentAnswered } from '../../money/payments/bank-answers';
import type { BankPort, CallbackResult, NewPayment, OperationRef, PayoutRequest, PayoutStart, SessionRequest } from '../../money/bank-port/port';
import { TEST_PROVIDER } from '../../money/bank-port/directory';
import { planForAmount, refundAnswer, type SimPlan } from './plan';
import { takePlan } from './token-outcomes';
import { paymentResolveJob, plannedAnswer, scheduleSimulatedResolution } from './payments';
import { answerPlannedPayout, payoutSettleJob, startPayout } from './payouts';

// The test-mode bank: plans each payment's answer at creation (magic amounts, a token's queued outcomes) and answers after
// --sim-delay on the shop's test clock through its own jobs, or by the buyer's input on the hosted page; never unknown.
export class SimulatorBank implements BankPort {
  readonly provider = TEST_PROVIDER;
  readonly sendsPayouts = true;

  constructor(private readonly core: PaymentsCore) {}

  describePayment(tx: Tx, p: NewPayment): Promise<Record<string, string>> {
    const described = (plan: SimPlan) => ({ simulator_outcome: plan.outcome, simulator_failure_code: plan.failureCode });
    if (p.tokenId) return takePlan(tx, p.tokenId).then((plan) => described(plan || planForAmount(p.amount)));
    const plan = planForAmount(p.amount);
    return Promise.resolve({ simulator_outcome: plan.outcome, simulator_failure_code: plan.failureCode });
  }

  openSession(tx: Tx, req: SessionRequest): Promise<void> {
    // With SBP the buyer pays in the bank's app, so the test bank answers by itself; on the page's screens the buyer decides.
    if (req.by === 'buyer' && req.payment.method !== 'sbp') return Promise.resolve();
    return scheduleSimulatedResolution(this.core, tx, req.payment);
  }

  chargeSaved(tx: Tx, req: SessionRequest): Promise<void> {
    return scheduleSimulatedResolution(this.core, tx, req.payment);
  }

  async cancel(): Promise<void> {
    // A pending test payment holds nothing open at the test bank.
  }

  async refund(tx: Tx, r: RefundRow): Promise<void> {
    const dueAt = r.created_at + Math.round(this.core.config.simDelaySeconds * 1000);
    await this.core.scheduler.schedule(tx, { kind: REFUND_SETTLE_JOB, subjectId: r.id, shopId: r.shop_id, mode: r.mode, dueAt });
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

/** Job kind: the test bank settles a pending refund after --sim-delay (its name predates the bank port; databases hold it). */
export const REFUND_SETTLE_JOB = 'refund.settle';

/** The test bank's answer for a pending refund: by its own amount (magic 01 fails). */
export async function answerRefund(core: PaymentsCore, tx: Tx, refundId: string): Promise<void> {
  const r = await getRefund(tx, refundId);
  if (!r || r.status !== 'pending' || r.mode !== 'test') return;
  await refundAnswered(core, tx, r.id, refundAnswer(r.amount));
}

/** The test bank as the wiring mounts it: the port for every test-mode operation and the jobs it answers through. */
export function simulatorModule(core: PaymentsCore): Module {
  return {
    name: 'simulator',
    banks: [new SimulatorBank(core)],
    jobs: [paymentResolveJob(core), { kind: REFUND_SETTLE_JOB, run: (tx, job) => answerRefund(core, tx, job.subject_id) }, payoutSettleJob(core)],
  };
}

import type { Tx } from '../../platform/storage/store';
import type { Module, ModuleJob } from '../../money/core/module';
import type { PaymentsCore } from '../../money/payments/core';
import { getRefund } from '../../money/refunds/store';
import { refundAnswered } from '../../money/refunds/bank-answers';
import type { PaymentRow, ConcreteMethod, PaymentView } from '../../money/bank-port/payment';
import type { RefundRow } from '../../money/bank-port/refund';
import type { BankPort, NewPayment, OperationRef, PayoutRequest, PayoutStart, SessionRequest, PaymentAnswer } from '../../money/bank-port/port';
import { TEST_PROVIDER } from '../../money/bank-port/directory';
import { forged, nothing } from '../none';
import { planForAmount, refundAnswer, planFromMetadata, answerOf, payoutPlanForAmount } from './plan';
import { takePlan } from './token-outcomes';
import { randomInt, randomBytes } from 'node:crypto';
import type { Core } from '../../money/core/core';
import type { Ctx, Reply } from '../../platform/http/types';
import { ApiError, badRequest, invalidState, notFound } from '../../platform/http/errors';
import { bodyObject, enumField, strField } from '../../platform/http/body';
import { isUuid } from '../../platform/util/ids';
import { bankCodeFor, PAYMENT_FAILURE_CODES } from '../../money/payments/failures';
import { chooseMethodTx, expireTx, openSessionTx, paymentAnswered, reload } from '../../money/payments/state';
import { getPayment, metadataOf, paymentView } from '../../money/payments/store';
import { asObject } from '../../money/payouts/fields';
import { sbpBank } from '../../money/sbp/directory';
import { PAYOUT_FAILURE_CODES, payoutView } from '../../money/payouts/payouts';
import { getPayout } from '../../money/payouts/store';
import { ownPayout } from '../../money/payouts/handlers';
import { payoutAnswered, type PayoutAnswerCore } from '../../money/payouts/bank-answers';

// The test-mode bank: plans each payment's answer at creation (magic amounts, a token's queued outcomes) and answers after
// --sim-delay on the shop's test clock through its own jobs, or by the buyer's input on the hosted page; never unknown.
export class SimulatorBank implements BankPort {
  readonly provider = TEST_PROVIDER;
  readonly sendsPayouts = true;

  constructor(private readonly core: PaymentsCore) {}

  async describePayment(tx: Tx, p: NewPayment): Promise<Record<string, string>> {
    const plan = (p.tokenId && (await takePlan(tx, p.tokenId))) || planForAmount(p.amount);
    return { simulator_outcome: plan.outcome, simulator_failure_code: plan.failureCode };
  }

  openSession(tx: Tx, req: SessionRequest): Promise<void> {
    // With SBP the buyer pays in the bank's app, so the test bank answers by itself; on the page's screens the buyer decides.
    if (req.by === 'buyer' && req.payment.method !== 'sbp') return Promise.resolve();
    return scheduleSimulatedResolution(this.core, tx, req.payment);
  }

  chargeSaved(tx: Tx, req: SessionRequest): Promise<void> {
    return scheduleSimulatedResolution(this.core, tx, req.payment);
  }

  /** A pending test payment holds nothing open at the test bank. */
  readonly cancel = nothing;

  async refund(tx: Tx, r: RefundRow): Promise<void> {
    const dueAt = r.created_at + Math.round(this.core.config.simDelaySeconds * 1000);
    await this.core.scheduler.schedule(tx, { kind: REFUND_SETTLE_JOB, subjectId: r.id, shopId: r.shop_id, mode: r.mode, dueAt });
  }

  async checkStatus(tx: Tx, op: OperationRef): Promise<void> {
    if (op.kind === 'refund') return answerRefund(this.core, tx, op.refund.id);
    if (op.kind === 'payout') return answerPlannedPayout(this.core, tx, op.payoutId);
    const answer = plannedAnswer(op.payment);
    if (answer) await paymentAnswered(this.core, tx, op.payment.id, answer);
  }

  /** Plans from the request alone (decisions.md): 03 → the router refuses (502, nothing created); unknown SBP bank → bank_unknown; 01, 02 fail after --sim-delay. */
  async payout(tx: Tx, req: PayoutRequest): Promise<PayoutStart> {
    const payoutPlan = payoutPlanForAmount(req.amount);
    if (payoutPlan.outcome === 'refused') return { accepted: false, code: 'router_error' };
    const bankRef = `sim-${randomBytes(8).toString('hex')}`;
    if (req.method === 'payouts_sbp' && !sbpBank(req.bankId ?? '')) {
      return { accepted: true, bankRef, answer: answerOf('failed', 'bank_unknown'), plan: { outcome: 'failed', failureCode: 'bank_unknown' } };
    }
    const plan = { outcome: payoutPlan.outcome, failureCode: payoutPlan.failureCode };
    const dueAt = req.at + Math.round(this.core.config.simDelaySeconds * 1000);
    await this.core.scheduler.schedule(tx, { kind: SETTLE_JOB, subjectId: req.id, shopId: req.shopId, mode: req.mode, dueAt });
    return { accepted: true, bankRef, plan };
  }

  /** The test bank answers through its own jobs and the hosted page, never over HTTP. */
  readonly callback = forged;

  /** The test bank's screens are the hosted page's own (card form, 3-D Secure, bank app). */
  readonly pageSession = nothing;

  creationExtras(row: PaymentRow): Record<string, unknown> {
    const meta = JSON.parse(row.metadata) as Record<string, string>;
    const base = this.core.baseUrl;
    const page = `${this.core.payPageUrl}/pay/${row.id}`;
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

export function simulatorModule(core: PaymentsCore): Module {
  return {
    name: 'simulator',
    banks: [new SimulatorBank(core)],
    jobs: [
      paymentResolveJob(core),
      { kind: REFUND_SETTLE_JOB, run: (tx, job) => answerRefund(core, tx, job.subject_id) },
      { kind: SETTLE_JOB, run: (tx, job) => answerPlannedPayout(core, tx, job.subject_id) },
    ],
  };
}

/** Job kind: the test bank answers a session after --sim-delay. */
export const SIM_RESOLVE_JOB = 'simulator.payment_resolve';

export const TEST_BANK_NAME = 'kopek test bank';

/** What the test bank answers for an outcome: a 12-digit retrieval reference and its name on success, the bank's raw code on failure. */
function simulatedAnswer(outcome: 'succeeded' | 'failed', failureCode = ''): PaymentAnswer {
  if (outcome === 'succeeded') return { outcome, rrn: String(randomInt(100_000, 999_999)) + String(randomInt(100_000, 999_999)), bankName: TEST_BANK_NAME };
  const code = failureCode || 'do_not_honor';
  return { outcome: 'refused', failureCode: code, bankCode: bankCodeFor(code), bankName: TEST_BANK_NAME };
}

/** The test bank's planned answer for a processing payment, or undefined when the plan is to stay silent. */
export function plannedAnswer(p: PaymentRow): PaymentAnswer | undefined {
  const meta = JSON.parse(p.metadata) as Record<string, string>;
  const outcome = meta.simulator_outcome;
  return outcome === 'succeeded' || outcome === 'failed' ? simulatedAnswer(outcome, meta.simulator_failure_code ?? '') : undefined;
}

/** Schedules the planned answer after --sim-delay on the shop's clock; `pending` never resolves, `requires_action` waits for the buyer. */
export async function scheduleSimulatedResolution(core: Pick<Core, 'config' | 'clocks' | 'scheduler'>, tx: Tx, p: PaymentRow): Promise<void> {
  const outcome = (JSON.parse(p.metadata) as Record<string, string>).simulator_outcome;
  if (outcome !== 'succeeded' && outcome !== 'failed') return;
  const dueAt = (await core.clocks.now(tx, p.shop_id, p.mode)) + Math.round(core.config.simDelaySeconds * 1000);
  await core.scheduler.schedule(tx, { kind: SIM_RESOLVE_JOB, subjectId: p.id, shopId: p.shop_id, mode: p.mode, dueAt });
}

export function paymentResolveJob(core: PaymentsCore): ModuleJob {
  return {
    kind: SIM_RESOLVE_JOB,
    run: async (tx, job) => {
      const p = await getPayment(tx, job.subject_id);
      if (!p || p.status !== 'processing' || p.mode !== 'test') return;
      const answer = plannedAnswer(p);
      if (answer) await paymentAnswered(core, tx, p, answer);
    },
  };
}

/** Give the test bank's answer now; a payment not at the bank is refused with 409 as the state machine words it. */
async function answerOrRefuse(core: PaymentsCore, tx: Tx, p: PaymentRow, action: string, answer: PaymentAnswer): Promise<void> {
  if (p.status !== 'processing') throw invalidState(`Cannot ${action} payment "${p.id}": its status is ${p.status}`);
  await paymentAnswered(core, tx, p.id, answer);
}

export const SIMULATE_ACTIONS = ['choose_method', 'open_session', 'succeed', 'fail', 'expire'] as const;
export const SIMULATE_METHODS: readonly ConcreteMethod[] = ['sbp', 'cards', 'tpay', 'bankpay', 'recurrent'];

/** POST /v1/test/payments/{id}/simulate: open_session with `method` chooses it first; fail without failure_code uses the planned code. */
export async function simulatePayment(ctx: Ctx<PaymentsCore>): Promise<Reply> {
  const auth = ctx.auth!;
  const body = bodyObject(ctx.body, ['action', 'method', 'failure_code']);
  if (body.action === undefined) throw badRequest('Field "action" is required', 'action');
  const action = enumField(body, 'action', SIMULATE_ACTIONS)!;
  const method = enumField(body, 'method', SIMULATE_METHODS);
  const failureCode = strField(body, 'failure_code', { max: 64 });
  // Expiry and payout codes are not bank refusals of a payment: `expire` is the action for the former.
  if (failureCode !== undefined && !(PAYMENT_FAILURE_CODES as readonly string[]).includes(failureCode)) {
    throw badRequest(`Field "failure_code" must be one of ${PAYMENT_FAILURE_CODES.join(', ')}, got "${failureCode}"`, 'failure_code');
  }
  if (action === 'choose_method' && !method) throw badRequest('Field "method" is required for action choose_method', 'method');
  const id = ctx.params.id;
  const view = await ctx.app.store.write(async (tx) => {
    const p = isUuid(id) ? await getPayment(tx, id) : undefined;
    if (!p || p.shop_id !== auth.shopId || p.mode !== 'test') throw notFound(`Cannot find payment "${id}"`);
    if (action === 'choose_method') await chooseMethodTx(ctx.app, tx, p, method!);
    else if (action === 'open_session') await openSessionTx(ctx.app, tx, method ? await chooseMethodTx(ctx.app, tx, p, method) : p);
    else if (action === 'succeed') await answerOrRefuse(ctx.app, tx, p, 'confirm', simulatedAnswer('succeeded'));
    else if (action === 'expire') await expireTx(ctx.app, tx, p);
    else await answerOrRefuse(ctx.app, tx, p, 'fail', simulatedAnswer('failed', failureCode || planFromMetadata(metadataOf(p))?.failureCode));
    return paymentView(tx, await reload(tx, p.id));
  });
  return { body: view };
}

// The buyer's input on the test bank's screens of the hosted page (the forms are the page's); a live payment never gets here.

export interface BuyerOutcome {
  outcome: 'succeeded' | 'failed';
  /** Unified failure code; defaults to the planned code, else do_not_honor. */
  failureCode?: string;
  /** From a card form: never the full number, only brand, mask and holder. */
  card?: { brand: string; mask: string; holder: string };
}

/** The test bank answers with what the buyer did: processing → succeeded or failed (409 when it moved on). */
export async function buyerResolve(core: PaymentsCore, id: string, o: BuyerOutcome): Promise<PaymentView> {
  if (o.card && /\d{9,}/.test(o.card.mask.replace(/\s/g, ''))) {
    throw new ApiError(400, 'bad_request', 'Cannot store the card: the mask must not hold a full card number', 'card');
  }
  return core.store.write(async (tx) => {
    const p = isUuid(id) ? await getPayment(tx, id) : undefined;
    if (!p) throw notFound(`Cannot find payment "${id}"`);
    const answer = simulatedAnswer(o.outcome, o.failureCode || planFromMetadata(metadataOf(p))?.failureCode);
    if (o.card && (answer.outcome === 'succeeded' || answer.outcome === 'refused')) answer.card = o.card;
    await answerOrRefuse(core, tx, p, o.outcome === 'succeeded' ? 'confirm' : 'fail', answer);
    return paymentView(tx, (await getPayment(tx, p.id))!);
  });
}

/** The scheduler job that settles a test payout after --sim-delay (its name predates the bank port; databases hold it). */
export const SETTLE_JOB = 'payout.settle';

export async function answerPlannedPayout(core: PayoutAnswerCore, tx: Tx, payoutId: string): Promise<void> {
  const p = await getPayout(tx, payoutId);
  if (!p || p.status !== 'pending' || !p.sim_outcome) return;
  await payoutAnswered(core, tx, p.id, answerOf(p.sim_outcome, p.sim_failure_code ?? ''));
}

/** POST /v1/test/payouts/{id}/simulate {action: succeed|fail, failure_code?}: the test bank answers now. */
export async function simulatePayout(ctx: Ctx<PayoutAnswerCore & Pick<Core, 'store'>>): Promise<Reply> {
  const obj = bodyObject(asObject(ctx.body), ['action', 'failure_code']);
  const action = enumField(obj, 'action', ['succeed', 'fail'] as const);
  if (!action) throw badRequest('Field "action" is required', 'action');
  const code = enumField(obj, 'failure_code', PAYOUT_FAILURE_CODES);
  if (code && action !== 'fail') throw badRequest('Field "failure_code" is allowed only with action "fail"', 'failure_code');
  const id = ctx.params.id;
  await ownPayout(ctx, id);
  const p = await ctx.app.store.write(async (tx) => {
    const cur = (await getPayout(tx, id))!;
    if (cur.status !== 'pending') throw invalidState(`Cannot ${action} payout "${id}": its status is ${cur.status}`);
    await payoutAnswered(ctx.app, tx, id, answerOf(action === 'succeed' ? 'succeeded' : 'failed', code ?? 'do_not_honor'));
    await ctx.app.scheduler.cancel(tx, SETTLE_JOB, id);
    return (await getPayout(tx, id))!;
  });
  return { body: payoutView(p) };
}

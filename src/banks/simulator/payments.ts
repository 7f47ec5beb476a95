import { randomInt } from 'node:crypto';
import type { Tx } from '../../platform/storage/store';
import type { Core } from '../../money/core/core';
import type { ModuleJob } from '../../money/core/module';
import type { PaymentsCore } from '../../money/payments/core';
import type { Ctx, Reply } from '../../platform/http/types';
import { ApiError, badRequest, invalidState, notFound } from '../../platform/http/errors';
import { bodyObject, enumField, strField } from '../../platform/http/validate';
import { isUuid } from '../../platform/util/ids';
import { bankCodeFor, PAYMENT_FAILURE_CODES } from '../../money/payments/failures';
import { chooseMethodTx, expireTx, openSessionTx, reload } from '../../money/payments/state';
import { paymentAnswered } from '../../money/payments/bank-answers';
import type { PaymentAnswer } from '../../money/bank-port/port';
import { getPayment, metadataOf, paymentView } from '../../money/payments/store';
import type { ConcreteMethod, PaymentRow, PaymentView } from '../../money/bank-port/payment';
import { planFromMetadata } from './plan';

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

/** The test bank's resolution job: it answers as planned; a payment no longer processing is left alone. */
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
/** Methods the simulate helper may choose: every concrete one. */
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
    let next: PaymentRow = p;
    switch (action) {
      case 'choose_method':
        next = await chooseMethodTx(ctx.app, tx, p, method!);
        break;
      case 'open_session':
        if (method) next = await chooseMethodTx(ctx.app, tx, p, method);
        next = await openSessionTx(ctx.app, tx, next);
        break;
      case 'succeed':
        await answerOrRefuse(ctx.app, tx, p, 'confirm', simulatedAnswer('succeeded'));
        break;
      case 'fail':
        await answerOrRefuse(ctx.app, tx, p, 'fail', simulatedAnswer('failed', failureCode || planFromMetadata(metadataOf(p))?.failureCode));
        break;
      case 'expire':
        next = await expireTx(ctx.app, tx, p);
        break;
    }
    return paymentView(tx, await reload(tx, next.id));
  });
  return { body: view };
}

// The test bank's answer to what the buyer did on its screens of the hosted page, through the same entry point as any bank's
// answer; the forms are the page's (it sits above the bank it shows). A live payment never gets here.

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

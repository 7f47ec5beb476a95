import { randomBytes } from 'node:crypto';
import type { Tx } from '../../platform/storage/store';
import type { Core } from '../../money/core/core';
import type { ModuleJob } from '../../money/core/module';
import type { Ctx, Reply } from '../../platform/http/types';
import { badRequest, invalidState } from '../../platform/http/errors';
import { bodyObject, enumField } from '../../platform/http/validate';
import { asObject } from '../../money/payouts/fields';
import { sbpBank } from '../../money/sbp/directory';
import { PAYOUT_FAILURE_CODES, payoutView } from '../../money/payouts/payouts';
import { getPayout } from '../../money/payouts/store';
import { ownPayout } from '../../money/payouts/handlers';
import { payoutAnswered, type PayoutAnswerCore } from '../../money/payouts/bank-answers';
import type { PayoutRequest, PayoutStart } from '../../money/bank-port/port';
import { answerOf, payoutPlanForAmount } from './plan';

/** The scheduler job that settles a test payout after --sim-delay (its name predates the bank port; databases hold it). */
export const SETTLE_JOB = 'payout.settle';

/** Plans from the request alone (decisions.md): 03 → the router refuses (502, nothing created); unknown SBP bank → bank_unknown; 01, 02 fail after --sim-delay. */
export async function startPayout(core: Pick<Core, 'config' | 'scheduler'>, tx: Tx, req: PayoutRequest): Promise<PayoutStart> {
  const payoutPlan = payoutPlanForAmount(req.amount);
  if (payoutPlan.outcome === 'refused') return { accepted: false, code: 'router_error' };
  const bankRef = `sim-${randomBytes(8).toString('hex')}`;
  if (req.method === 'payouts_sbp' && !sbpBank(req.bankId ?? '')) {
    return { accepted: true, bankRef, answer: answerOf('failed', 'bank_unknown'), plan: { outcome: 'failed', failureCode: 'bank_unknown' } };
  }
  const plan = { outcome: payoutPlan.outcome, failureCode: payoutPlan.failureCode };
  const dueAt = req.at + Math.round(core.config.simDelaySeconds * 1000);
  await core.scheduler.schedule(tx, { kind: SETTLE_JOB, subjectId: req.id, shopId: req.shopId, mode: req.mode, dueAt });
  return { accepted: true, bankRef, plan };
}

/** The answer the test bank planned for a payout at its creation, if it is still pending. */
export async function answerPlannedPayout(core: PayoutAnswerCore, tx: Tx, payoutId: string): Promise<void> {
  const p = await getPayout(tx, payoutId);
  if (!p || p.status !== 'pending' || !p.sim_outcome) return;
  await payoutAnswered(core, tx, p.id, answerOf(p.sim_outcome, p.sim_failure_code ?? ''));
}

/** The settlement job: the test bank answers as planned, unless the payout was settled meanwhile. */
export function payoutSettleJob(core: PayoutAnswerCore): ModuleJob {
  return { kind: SETTLE_JOB, run: (tx, job) => answerPlannedPayout(core, tx, job.subject_id) };
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

import type { Tx } from '../../platform/storage/store';
import type { Core } from '../../money/core/core';
import type { Ctx, Reply } from '../../platform/http/types';
import { badRequest, invalidState } from '../../platform/http/errors';
import { bodyObject, describe } from '../../platform/http/body';
import { PAYMENT_FAILURE_CODES } from '../../money/payments/failures';
import { tokenView, updateToken, type TokenRow } from '../../money/tokens/store';
import { tokenOfShop } from '../../money/tokens/handlers';
import { reloadToken } from '../../money/tokens/tokens';
import type { SimPlan } from './plan';

export const OUTCOMES_MAX = 100;

/** The outcome words a queue accepts (besides `fail:<code>`). */
export const OUTCOME_WORDS = ['succeed', 'fail', 'pending'] as const;

export function planOf(outcome: string): SimPlan {
  if (outcome === 'succeed') return { outcome: 'succeeded', failureCode: '' };
  if (outcome === 'pending') return { outcome: 'pending', failureCode: '' };
  return { outcome: 'failed', failureCode: outcome.startsWith('fail:') ? outcome.slice(5) : 'do_not_honor' };
}

/** Validates `outcomes`: at most OUTCOMES_MAX of "succeed", "fail", "fail:<failure code>", "pending" (never answered). */
export function parseOutcomes(v: unknown): string[] {
  if (v === undefined || v === null) throw badRequest('Field "outcomes" is required', 'outcomes');
  if (!Array.isArray(v)) throw badRequest(`Field "outcomes" must be an array of strings, got ${describe(v)}`, 'outcomes');
  if (v.length > OUTCOMES_MAX) throw badRequest(`Field "outcomes" must hold at most ${OUTCOMES_MAX} items, got ${v.length}`, 'outcomes');
  return v.map((o, i) => {
    const ok =
      typeof o === 'string' &&
      ((OUTCOME_WORDS as readonly string[]).includes(o) || (o.startsWith('fail:') && (PAYMENT_FAILURE_CODES as readonly string[]).includes(o.slice(5))));
    if (!ok) {
      throw badRequest(
        `Field "outcomes[${i}]" must be succeed, pending, fail or fail:<code> with a code of ${PAYMENT_FAILURE_CODES.join(', ')}, got ${describe(o)}`,
        'outcomes',
      );
    }
    return o as string;
  });
}

export function queueOf(t: Pick<TokenRow, 'outcomes'>): string[] {
  return JSON.parse(t.outcomes) as string[];
}

/** Take the next queued outcome of a test token as a simulator plan; undefined lets the magic amounts decide. */
export async function takePlan(tx: Tx, tokenId: string): Promise<SimPlan | undefined> {
  // Only the queue is needed, on every charge of a saved method: not the whole row.
  const t = await tx.get<Pick<TokenRow, 'mode' | 'outcomes'>>('SELECT mode, outcomes FROM tokens WHERE id = ?', tokenId);
  if (!t || t.mode !== 'test' || t.outcomes === '[]') return undefined;
  const queue = queueOf(t);
  const next = queue.shift();
  if (next === undefined) return undefined;
  await updateToken(tx, tokenId, { outcomes: JSON.stringify(queue) });
  return planOf(next);
}

/** POST /v1/test/tokens/{id}/outcomes {outcomes: [...]}: the queue the token's next charges follow (replaces the old one). */
export async function setOutcomes(ctx: Ctx<Pick<Core, 'store'>>): Promise<Reply> {
  const outcomes = parseOutcomes(bodyObject(ctx.body, ['outcomes']).outcomes);
  const id = ctx.params.id;
  const t = await ctx.app.store.write(async (tx) => {
    const token = await tokenOfShop(tx, ctx, id);
    // A cancelled token is never charged again, so a queue for it would only mislead.
    if (token.status === 'cancelled') throw invalidState(`Cannot set outcomes of token "${token.id}": it is cancelled`);
    await updateToken(tx, token.id, { outcomes: JSON.stringify(outcomes) });
    return reloadToken(tx, token.id);
  });
  return { body: { ...tokenView(t), outcomes: queueOf(t) } };
}

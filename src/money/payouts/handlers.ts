import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../core/core';
import { ApiError, notFound } from '../../platform/http/errors';
import { bodyObject } from '../../platform/http/body';
import { idempotentCreate } from '../idempotency/idempotency';
import { parseRegisterQuery, toPage } from '../registers/query';
import { isUuid } from '../../platform/util/ids';
import { iso } from '../../platform/util/time';
import { asObject, checkBankIdFirst, methodField, payoutFields, requirePayoutScope, PAYOUT_METHODS, PAYOUT_SCOPES } from './fields';
import { createPayoutTx, creationBody, payoutView, type Payer } from './payouts';
import { createBatchTx, parseBatch } from './batch';
import { registerRows, REGISTERS } from '../registers/plan';
import { getPayout, type PayoutRow } from './store';

function payer(ctx: Ctx): Payer {
  const a = ctx.auth!;
  return { merchantId: a.merchantId, shopId: a.shopId, mode: a.mode };
}

/**
 * POST /v1/public/payouts. Order of checks: a malformed bank_id first (the spec's rule), then the method,
 * its scope (403), and the method's fields; funds and the router are checked where the reserve is taken.
 */
export async function createPayout(ctx: Ctx<Core>): Promise<Reply> {
  const obj = asObject(ctx.body);
  checkBankIdFirst(obj);
  const method = methodField(obj);
  requirePayoutScope(ctx.auth!.scopes, method);
  const input = payoutFields(obj, method, true);
  return idempotentCreate(ctx, async (tx) => {
    const p = await createPayoutTx(ctx.app, tx, payer(ctx), input);
    ctx.logExtra = { payout_id: p.id };
    const provider = p.mode === 'live' ? (await ctx.app.banks.forPayout(tx, p.shop_id, p.mode)).provider : undefined;
    return { status: 201, body: creationBody(ctx.app.baseUrl, p, provider) };
  });
}

/** POST /v1/public/payouts/batch: whole-batch rules are 400; each item is created, failed or duplicate on its own. */
export async function createPayoutBatch(ctx: Ctx<Core>): Promise<Reply> {
  const obj = bodyObject(asObject(ctx.body), ['method', 'items']);
  const method = methodField(obj);
  requirePayoutScope(ctx.auth!.scopes, method);
  const batch = parseBatch(obj, method);
  return idempotentCreate(ctx, async (tx) => ({ status: 201, body: await createBatchTx(ctx.app, tx, payer(ctx), batch) }));
}

/** Scopes that may read one payout: any payout scope, or the registers' reports scope. */
const READ_SCOPES = [...Object.values(PAYOUT_SCOPES), 'api:reports:read'];

/** The payout of the key's shop and mode, else 404 (another shop's payout is never revealed). */
export async function ownPayout(ctx: Ctx<Pick<Core, 'store'>>, id: string): Promise<PayoutRow> {
  const p = isUuid(id) ? await getPayout(ctx.app.store, id) : undefined;
  const a = ctx.auth!;
  if (!p || p.shop_id !== a.shopId || p.mode !== a.mode) throw notFound(`Cannot find payout "${id.slice(0, 64)}"`);
  return p;
}

export async function getPayoutHandler(ctx: Ctx<Pick<Core, 'store'>>): Promise<Reply> {
  const scopes = ctx.auth!.scopes;
  if (!READ_SCOPES.some((s) => scopes.has(s))) {
    throw new ApiError(403, 'scope_required', `Cannot read a payout: the key needs one of the scopes "${READ_SCOPES.join('", "')}"`);
  }
  return { body: payoutView(await ownPayout(ctx, ctx.params.id)) };
}

/** GET /v1/public/payouts: the payout register, newest first. */
export async function listPayoutsHandler(ctx: Ctx<Pick<Core, 'store'>>): Promise<Reply> {
  const rq = parseRegisterQuery(ctx.query, { statuses: ['pending', 'succeeded', 'failed'], extra: { method: PAYOUT_METHODS } });
  const a = ctx.auth!;
  const method = rq.extra.method === undefined ? undefined : [rq.extra.method];
  const rows = await registerRows<PayoutRow>(ctx.app.store, REGISTERS.payouts, a.shopId, [a.mode], { status: rq.statuses ?? undefined, method }, rq);
  return {
    body: toPage(rows, rq, (p) => ({
      id: p.id, shop_id: p.shop_id, amount: p.amount, currency: p.currency, method: p.method, status: p.status, bank_ref: p.bank_ref,
      created_at: iso(p.created_at),
    })),
  };
}

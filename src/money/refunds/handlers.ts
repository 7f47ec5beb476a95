import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../core/core';
import { badRequest } from '../../platform/http/errors';
import { amountField, bodyObject, strField } from '../../platform/http/body';
import { idempotentCreate } from '../idempotency/idempotency';
import { iso, isoOrNull } from '../../platform/util/time';
import { highNeeded, parseRegisterQuery, toPage } from '../registers/query';
import { registerRows, REGISTERS } from '../registers/plan';
import { maxSeq, paymentOfShop } from '../payments/handlers';
import { refundView } from '../payments/store';
import type { RefundRow } from '../bank-port/refund';
import { createRefundTx } from './refunds';

export const REFUND_STATUSES = ['pending', 'succeeded', 'failed'] as const;

/** POST /v1/public/payments/{id}/refund {amount?, reason?}: 201 with the pending refund (no completed_at). */
export async function createRefund(ctx: Ctx<Core>): Promise<Reply> {
  const obj = bodyObject(ctx.body, ['amount', 'reason']);
  // Elsewhere null reads as omitted; here omitted means "refund everything", which a client that lost its
  // amount must not trigger by accident, so null is refused as the OpenAPI schema says.
  if (obj.amount === null) {
    throw badRequest('Field "amount" must be an integer of minor units (omit it or pass 0 to refund the remainder), got null', 'amount');
  }
  const amount = amountField(obj, 'amount', false, true);
  const reason = strField(obj, 'reason', { max: 500 }) ?? '';
  const id = ctx.params.id;
  return idempotentCreate(ctx, async (tx) => {
    const p = await paymentOfShop(tx, ctx, id);
    const r = await createRefundTx(ctx.app, tx, p, { amount, reason, keyId: ctx.auth!.keyId });
    return { status: 201, body: refundView(r, false) as unknown as Record<string, unknown> };
  });
}

/** GET /v1/public/refunds: the refund register of the key's shop and mode, newest first. */
export async function listRefunds(ctx: Ctx<Core>): Promise<Reply> {
  const auth = ctx.auth!;
  const rq = parseRegisterQuery(ctx.query, { statuses: REFUND_STATUSES });
  const rows = await registerRows<RefundRow>(ctx.app.store, REGISTERS.refunds, auth.shopId, [auth.mode], { status: rq.statuses ?? undefined }, rq);
  const item = (r: RefundRow) => ({
    id: r.id, payment_id: r.payment_id, amount: r.amount, reason: r.reason, status: r.status, failure_code: r.failure_code,
    created_at: iso(r.created_at), completed_at: isoOrNull(r.completed_at),
  });
  const high = highNeeded(rows, rq) ? await maxSeq(ctx.app.store, 'refunds') : undefined;
  return { body: toPage(rows, rq, item, high) };
}

import type { Ctx, Reply } from '../http/types';
import { amountField, bodyObject, strField } from '../http/validate';
import { idempotentCreate } from '../auth/idempotency';
import { iso } from '../util/time';
import { parseRegisterQuery, registerOrder, registerWhere, toPage } from '../registers/query';
import { maxSeq, paymentOfShop } from '../payments/handlers';
import { refundView, type RefundRow } from '../payments/store';
import { createRefundTx } from './refunds';

/** Refund statuses, for the register filter. */
export const REFUND_STATUSES = ['pending', 'succeeded', 'failed'] as const;

/** POST /v1/public/payments/{id}/refund {amount?, reason?}: 201 with the pending refund (no completed_at). */
export async function createRefund(ctx: Ctx): Promise<Reply> {
  const obj = bodyObject(ctx.body, ['amount', 'reason']);
  const amount = amountField(obj, 'amount', false, true);
  const reason = strField(obj, 'reason', { max: 500 }) ?? '';
  const id = ctx.params.id;
  const reply = await idempotentCreate(ctx, (tx) => {
    const p = paymentOfShop(ctx.app, ctx, id);
    const r = createRefundTx(ctx.app, tx, p, { amount, reason, keyId: ctx.auth!.keyId });
    return { status: 201, body: refundView(r, false) as unknown as Record<string, unknown> };
  });
  return reply;
}

/** GET /v1/public/refunds: the refund register of the key's shop and mode, newest first. */
export function listRefunds(ctx: Ctx): Reply {
  const auth = ctx.auth!;
  const rq = parseRegisterQuery(ctx.query, { statuses: REFUND_STATUSES });
  const where = registerWhere(rq);
  where.sql.unshift('shop_id = ?', 'mode = ?');
  where.params.unshift(auth.shopId, auth.mode);
  const rows = ctx.app.store
    .stmt(`SELECT * FROM refunds WHERE ${where.sql.join(' AND ')} ${registerOrder()} LIMIT ?`)
    .all(...where.params, rq.limit + 1) as RefundRow[];
  const item = (r: RefundRow) => ({
    id: r.id,
    payment_id: r.payment_id,
    amount: r.amount,
    reason: r.reason,
    status: r.status,
    failure_code: r.failure_code,
    created_at: iso(r.created_at),
    completed_at: r.completed_at === null ? null : iso(r.completed_at),
  });
  return { body: toPage(rows, rq, item, () => maxSeq(ctx.app, 'refunds')) };
}

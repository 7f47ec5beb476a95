import type { Ctx, Reply } from '../http/types';
import { ApiError, notFound } from '../http/errors';
import { getPayment } from '../payments/store';
import { getRefund } from '../refunds/refunds';
import { paymentAnswered, refundAnswered } from './answers';

/**
 * POST /v1/callbacks/{provider}/{shop_id}: a bank's notification. The shop's live acquirer must be this
 * provider; the provider's port checks the notification (its signature), and everything it tells is
 * applied in one transaction with the webhooks, stream events and ledger postings that follow. A forged
 * notification is answered 403 and changes nothing; repeated and late ones find their operation moved on.
 */
export async function bankCallback(ctx: Ctx): Promise<Reply> {
  const { provider, shop_id: shopId } = ctx.params;
  const port = ctx.app.banks.byProvider(provider);
  if (!port || (await ctx.app.banks.providerFor(ctx.app.store, shopId, 'live')) !== provider) {
    throw notFound(`Cannot take a notification of "${provider.slice(0, 64)}" for shop "${shopId.slice(0, 64)}": the shop has no such acquirer`);
  }
  const result = await port.callback({ shopId, headers: ctx.req.headers, body: ctx.body });
  if (!result.valid) throw new ApiError(403, 'forbidden', `Cannot take the notification of "${provider}": its signature does not match`);
  const mismatches = await ctx.app.store.write(async (tx) => {
    const bad: string[] = [];
    await result.record?.(tx);
    for (const n of result.payments) {
      const p = await getPayment(tx, n.paymentId);
      // Only the shop's own live payments: a notification never reaches another shop's data.
      if (!p || p.shop_id !== shopId || p.mode !== 'live') continue;
      if ((await paymentAnswered(ctx.app, tx, p.id, n.answer, n.amount)) === 'amount_mismatch') bad.push(p.id);
    }
    for (const n of result.refunds) {
      const r = await getRefund(tx, n.refundId);
      if (!r || r.shop_id !== shopId || r.mode !== 'live') continue;
      await refundAnswered(ctx.app, tx, r.id, n.answer);
    }
    return bad;
  });
  for (const id of mismatches) {
    ctx.app.log.warn('bank notification amount does not match the payment; not applied', { provider, shop_id: shopId, payment_id: id });
  }
  return { text: result.reply, contentType: 'text/plain; charset=utf-8' };
}

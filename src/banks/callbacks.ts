import type { Tx } from '../platform/storage/store';
import type { Core } from '../money/core/core';
import type { Handler } from '../platform/http/types';
import { ApiError, notFound } from '../platform/http/errors';
import type { Applied } from '../money/bank-port/checks';
import type { MoneyAnswer, PaymentAnswer } from '../money/bank-port/port';
import { shopPayoutProvider } from '../money/bank-port/store';
import { type OpenApiFragment, errorResponses, uuidSchema as uuid } from '../platform/http/openapi-types';

export type CallbackServices = Pick<Core, 'banks' | 'store' | 'log'>;

/** The domains' entry points for a notification's answers: each applies only to the shop's live operations, ignoring other ids. */
export interface NotifiedAnswers<S> {
  /** An answer about a payment; 'amount_mismatch' when the bank's amount is not the payment's. */
  payment(services: S, tx: Tx, shopId: string, paymentId: string, answer: PaymentAnswer, amount?: number): Promise<Applied>;
  refund(services: S, tx: Tx, shopId: string, refundId: string, answer: MoneyAnswer): Promise<Applied>;
}

// POST /v1/callbacks/{provider}/{shop_id}: the provider must be the shop's live acquirer or payout provider; its port checks
// the notification and all it tells is applied in one transaction. A forged one is 403 and changes nothing.
export function bankCallbackHandler<S extends CallbackServices>(apply: NotifiedAnswers<S>): Handler<S> {
  return async (ctx) => {
    const { provider, shop_id: shopId } = ctx.params;
    const port = ctx.app.banks.byProvider(provider);
    if (!port || !(await servesShop(ctx.app, provider, shopId))) {
      throw notFound(`Cannot take a notification of "${provider.slice(0, 64)}" for shop "${shopId.slice(0, 64)}": the shop has no such acquirer or payout provider`);
    }
    const result = await port.callback({ shopId, headers: ctx.req.headers, body: ctx.body });
    if (!result.valid) throw new ApiError(403, 'forbidden', `Cannot take the notification of "${provider}": its signature does not match`);
    const mismatches = await ctx.app.store.write(async (tx) => {
      const bad: string[] = [];
      await result.record?.(tx);
      for (const n of result.payments) {
        if ((await apply.payment(ctx.app, tx, shopId, n.paymentId, n.answer, n.amount)) === 'amount_mismatch') bad.push(n.paymentId);
      }
      for (const n of result.refunds) await apply.refund(ctx.app, tx, shopId, n.refundId, n.answer);
      return bad;
    });
    for (const id of mismatches) {
      ctx.app.log.warn('bank notification amount does not match the payment; not applied', { provider, shop_id: shopId, payment_id: id });
    }
    return { text: result.reply, contentType: 'text/plain; charset=utf-8' };
  };
}

async function servesShop(app: CallbackServices, provider: string, shopId: string): Promise<boolean> {
  if ((await app.banks.providerFor(app.store, shopId, 'live')) === provider) return true;
  return (await shopPayoutProvider(app.store, shopId))?.provider === provider;
}

export const bankPortOpenApi: OpenApiFragment = {
  paths: {
    '/v1/callbacks/{provider}/{shop_id}': {
      post: {
        summary:
          "A live acquirer's notification about the shop's operations (its NotificationURL). The provider checks the notification's signature: a forged one is answered 403 and changes nothing",
        parameters: [
          { name: 'provider', in: 'path', required: true, schema: { type: 'string' }, description: 'the acquirer, as the shop\'s acquirer names it (tbank)' },
          { name: 'shop_id', in: 'path', required: true, schema: uuid },
        ],
        requestBody: { required: true, content: { 'application/json': { schema: { type: 'object' } } } },
        responses: {
          '200': { description: 'Taken: the body the acquirer expects back (T-Bank: OK)', content: { 'text/plain': { schema: { type: 'string' } } } },
          ...errorResponses,
        },
      },
    },
  },
};

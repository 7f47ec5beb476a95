import type { Reader } from '../../platform/storage/store';
import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../core/core';
import type { PaymentsCore } from '../payments/core';
import { notFound } from '../../platform/http/errors';
import { amountField, bodyObject, enumField, strField } from '../../platform/http/body';
import { idempotentCreate } from '../idempotency/idempotency';
import { isUuid } from '../../platform/util/ids';
import { parseRegisterQuery, toPage, type RegisterQuery } from '../registers/query';
import { registerRows, REGISTERS, type RegisterFilters } from '../registers/plan';
import { urlField } from '../payments/create';
import { getPayment } from '../payments/store';
import { getToken, TOKEN_METHODS, TOKEN_STATUSES, tokenView, type TokenRow } from './store';
import { CARD_VERIFICATION_AMOUNT, chargeTokenTx, createBindingTx } from './tokens';

/** A plausible e-mail address: something@host.tld, no spaces. */
const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** A token of the caller's shop and mode, or 404 (another shop's id looks the same as none). */
export async function tokenOfShop(q: Reader, ctx: Ctx, id: string): Promise<TokenRow> {
  const auth = ctx.auth!;
  const t = isUuid(id) ? await getToken(q, id) : undefined;
  if (!t || t.shop_id !== auth.shopId || t.mode !== auth.mode) throw notFound(`Cannot find token "${id.slice(0, 64)}"`);
  return t;
}

/** customer_ref, customer_email and return_url as both token and subscription creation read them. */
export function customerFields(obj: Record<string, unknown>, mode: 'test' | 'live'): { customerRef: string; customerEmail: string; returnUrl?: string } {
  return {
    // The customer's tokens are found by this reference: one of spaces alone would look empty everywhere.
    customerRef: strField(obj, 'customer_ref', { required: true, max: 128, pattern: /\S/, patternHint: 'a reference with a character other than white space' })!,
    customerEmail: strField(obj, 'customer_email', { max: 254, pattern: EMAIL_RE, patternHint: 'an e-mail address like buyer@example.com' }) ?? '',
    returnUrl: urlField(obj, 'return_url', { loopbackHttp: mode === 'test', anyHttp: false }),
  };
}

export function recurrentFilters(rq: RegisterQuery): RegisterFilters {
  const customer = rq.extra.customer_ref;
  return { status: rq.statuses ?? undefined, customer_ref: customer === undefined ? undefined : [customer] };
}

/** POST /v1/public/tokens {customer_ref, method?, amount?, customer_email?, return_url?} */
export async function createToken(ctx: Ctx<PaymentsCore>): Promise<Reply> {
  const auth = ctx.auth!;
  const obj = bodyObject(ctx.body, ['customer_ref', 'method', 'amount', 'customer_email', 'return_url']);
  const method = enumField(obj, 'method', TOKEN_METHODS, 'cards')!;
  // Cards bind with a 1 RUB verification whatever the amount; sbp and tpay bind with a first charge.
  const amount = amountField(obj, 'amount', method !== 'cards');
  const customer = customerFields(obj, auth.mode);
  const reply = await idempotentCreate(ctx, async (tx) => {
    const binding = { merchantId: auth.merchantId, shopId: auth.shopId, mode: auth.mode, ...customer, method, kind: 'token_binding' as const };
    const { token, payment } = await createBindingTx(ctx.app, tx, { ...binding, amount: method === 'cards' ? CARD_VERIFICATION_AMOUNT : amount! });
    return {
      status: 201,
      body: {
        card: { id: token.id, customer_ref: token.customer_ref, status: token.status },
        pay_url: `${ctx.app.payPageUrl}/pay/${payment.id}`,
        binding_payment_id: payment.id,
      },
    };
  });
  if ('body' in reply) ctx.logExtra = { token_id: ((reply.body as { card: { id: string } }).card).id };
  return reply;
}

export async function getTokenHandler(ctx: Ctx<Pick<Core, 'store'>>): Promise<Reply> {
  return { body: tokenView(await tokenOfShop(ctx.app.store, ctx, ctx.params.id)) };
}

/** GET /v1/public/tokens?customer_ref=: the key's shop and mode, newest first, register pagination. */
export async function listTokens(ctx: Ctx<Pick<Core, 'store'>>): Promise<Reply> {
  const auth = ctx.auth!;
  const rq = parseRegisterQuery(ctx.query, { statuses: TOKEN_STATUSES, extra: { customer_ref: [] } });
  const rows = await registerRows<TokenRow>(ctx.app.store, REGISTERS.tokens, auth.shopId, [auth.mode], recurrentFilters(rq), rq);
  return { body: toPage(rows, rq, tokenView) };
}

/** POST /v1/public/tokens/{id}/charge {amount, order_id?, description?}: 201 {id, status, amount} of the charge payment. */
export async function chargeToken(ctx: Ctx<PaymentsCore>): Promise<Reply> {
  const obj = bodyObject(ctx.body, ['amount', 'order_id', 'description']);
  const amount = amountField(obj, 'amount', true)!;
  const orderId = strField(obj, 'order_id', { max: 128 });
  const description = strField(obj, 'description', { max: 1000 });
  const id = ctx.params.id;
  const reply = await idempotentCreate(
    ctx,
    async (tx) => {
      const p = await chargeTokenTx(ctx.app, tx, await tokenOfShop(tx, ctx, id), { amount, orderId, description, kind: 'token_charge' });
      return { status: 201, body: { id: p.id, status: p.status, amount: p.amount } };
    },
    // A replay tells where the charge stands now, not where it stood when first answered.
    async (tx, stored) => ({ ...stored, status: (await getPayment(tx, String(stored.id)))?.status ?? stored.status }),
  );
  if ('body' in reply) ctx.logExtra = { payment_id: (reply.body as { id: string }).id, token_id: id };
  return reply;
}

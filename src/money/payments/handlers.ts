import type { Reader } from '../../platform/storage/store';
import type { Auth, Ctx, Reply } from '../../platform/http/types';
import type { Mode } from '../../platform/clock';
import type { Core } from '../core/core';
import { badRequest, notFound } from '../../platform/http/errors';
import { bodyObject } from '../../platform/http/body';
import { idempotentCreate } from '../idempotency/idempotency';
import type { PaymentCreatesCore } from './create-batch';
import { isUuid } from '../../platform/util/ids';
import { iso } from '../../platform/util/time';
import { highNeeded, parseRegisterQuery, toPage } from '../registers/query';
import { registerRows, REGISTERS } from '../registers/plan';
import type { PaymentsCore } from './core';
import { createWithAnswer, parseCreateBody } from './create';
import { failureMessage } from './failures';
import { cancelTx, chooseMethodTx, openSessionTx } from './state';
import { getPayment, metadataOf, paymentView, readPaymentView } from './store';
import { PAYMENT_METHODS, PAYMENT_STATUSES, type ConcreteMethod, type PaymentRow, type PaymentView } from '../bank-port/payment';

function visibleTo(auth: Auth, p: { shop_id: string; mode: Mode }, anyMode: boolean): boolean {
  return p.shop_id === auth.shopId && (anyMode || p.mode === auth.mode);
}

/** The 404 of a payment the key may not see: another shop's id and a malformed id look the same as none. */
function notFoundPayment(id: string) {
  return notFound(`Cannot find payment "${id.slice(0, 64)}"`);
}

/** A payment of the caller's shop and mode, or 404 (notFoundPayment). Inside a transaction pass its tx as `q`. */
export async function paymentOfShop(q: Reader, ctx: Ctx, id: string): Promise<PaymentRow> {
  const p = isUuid(id) ? await getPayment(q, id) : undefined;
  if (!p || !visibleTo(ctx.auth!, p, false)) throw notFoundPayment(id);
  return p;
}

/** POST /v1/public/payments */
export async function createPayment(ctx: Ctx<PaymentCreatesCore>): Promise<Reply> {
  const input = parseCreateBody(ctx.body, ctx.auth!, ctx.app.config.webhookAllow);
  if (ctx.req.headers['idempotency-key'] === undefined) {
    // Without a key there is nothing to replay (idempotentCreate checks a key given): the create runs alone, or on
    // PostgreSQL may share its transaction with others (create-batch.ts).
    const made = ctx.app.creates?.takes(input) ? await ctx.app.creates.create(input) : await ctx.app.store.write((tx) => createWithAnswer(ctx.app, tx, input));
    ctx.logExtra = { payment_id: made.row.id };
    return { status: 201, body: made.body };
  }
  const reply = await idempotentCreate(
    ctx,
    async (tx) => ({ status: 201, body: (await createWithAnswer(ctx.app, tx, input)).body }),
    // The specification has failure_code and failure_message present on every replay: the payment's
    // current refusal or expiry code, "" while it has none.
    async (tx, stored) => {
      const id = (stored.payment as { id: string }).id;
      const p = await getPayment(tx, id);
      const code = (p ? metadataOf(p).failure_code : undefined) ?? '';
      return { ...stored, failure_code: code, failure_message: code ? failureMessage(code) : '' };
    },
  );
  if ('body' in reply) ctx.logExtra = { payment_id: ((reply.body as { payment: { id: string } }).payment).id };
  return reply;
}

/** GET /v1/public/payments/{id}: a live key may read (never change) its shop's test payments too, as the register shows them. */
export async function getPaymentHandler(ctx: Ctx<Core>): Promise<Reply> {
  const auth = ctx.auth!;
  const id = ctx.params.id;
  const read = isUuid(id) ? await readPaymentView(ctx.app.store, id) : undefined;
  if (!read || !visibleTo(auth, read, auth.mode === 'live')) throw notFoundPayment(id);
  return { body: read.view };
}

/** POST /v1/public/payments/{id}/cancel (no body) */
export async function cancelPayment(ctx: Ctx<PaymentsCore>): Promise<Reply> {
  bodyObject(ctx.body, []);
  const id = ctx.params.id;
  const p = await ctx.app.store.write(async (tx) => cancelTx(ctx.app, tx, await paymentOfShop(tx, ctx, id)));
  return { body: { status: p.status } };
}

/** GET /v1/public/payments: the payment register, newest first. */
export async function listPayments(ctx: Ctx<Core>): Promise<Reply> {
  const auth = ctx.auth!;
  const rq = parseRegisterQuery(ctx.query, { statuses: PAYMENT_STATUSES, extra: { include_test: ['0', '1'] } });
  const modes = auth.mode === 'test' || rq.extra.include_test !== '1' ? [auth.mode] : ['live', 'test'];
  const rows = await registerRows<Pick<PaymentRow, 'seq' | 'id' | 'order_id' | 'amount' | 'currency' | 'method' | 'status' | 'created_at' | 'mode'>>(
    ctx.app.store,
    REGISTERS.payments,
    auth.shopId,
    modes,
    { status: rq.statuses ?? undefined },
    rq,
    'seq, id, order_id, amount, currency, method, status, created_at, mode',
  );
  const item = (r: (typeof rows)[number]) => ({
    id: r.id,
    order_id: r.order_id,
    amount: r.amount,
    currency: r.currency,
    method: r.method,
    status: r.status,
    created_at: iso(r.created_at),
    mode: r.mode,
  });
  const high = highNeeded(rows, rq) ? await maxSeq(ctx.app.store, 'payments') : undefined;
  return { body: toPage(rows, rq, item, high) };
}

/** The highest seq of a register's table: the bound a first page's cursor carries. */
export async function maxSeq(q: Reader, table: 'payments' | 'refunds'): Promise<number> {
  return (await q.get<{ high: number | null }>(`SELECT MAX(seq) AS high FROM ${table}`))!.high ?? 0;
}

// What the hosted page may do to a payment, by payment id alone (the page is public): each call is one
// group-committed transaction and throws ApiError 409 invalid_state when the payment is in the wrong state.

/** The payment as GET shows it, or undefined when no payment has this id; read through `q` (the store, or a tx). */
export async function findPaymentForPage(q: Reader, id: string): Promise<PaymentView | undefined> {
  return isUuid(id) ? (await readPaymentView(q, id))?.view : undefined;
}

/**
 * The buyer pays with `method` (a payment created with `any` takes it) and the bank session opens; only this POST
 * opens one, and paying again with the method already open changes nothing. Resolves with the row as it is now.
 */
export async function payWithMethod(core: PaymentsCore, id: string, method: string): Promise<PaymentRow> {
  if (method === 'any' || method === 'recurrent' || !(PAYMENT_METHODS as readonly string[]).includes(method)) {
    throw badRequest(`Cannot choose method "${method}": it is not a payment method`, 'method');
  }
  return core.store.write(async (tx) => {
    const p = isUuid(id) ? await getPayment(tx, id) : undefined;
    if (!p) throw notFound(`Cannot find payment "${id}"`);
    if (p.status === 'processing' && p.method === method) return p;
    // One look at the clock, and the method written with the session's status.
    const at = await core.clocks.now(tx, p.shop_id, p.mode);
    const chosen = await chooseMethodTx(core, tx, p, method as ConcreteMethod, at, false);
    const patch = chosen.method === p.method ? undefined : { method: chosen.method };
    return openSessionTx(core, tx, chosen, { by: 'buyer', at, patch });
  });
}

/** The buyer gave up on the page: pending → cancelled. */
export async function buyerCancel(core: PaymentsCore, id: string): Promise<PaymentView> {
  return core.store.write(async (tx) => {
    const p = isUuid(id) ? await getPayment(tx, id) : undefined;
    if (!p) throw notFound(`Cannot find payment "${id}"`);
    return paymentView(tx, await cancelTx(core, tx, p));
  });
}

const REDIRECT_STATUSES = new Set(['succeeded', 'failed', 'cancelled', 'refunded', 'expired']);

/** Where the buyer goes after a final status: return_url with `payment_id` and `status` added (its query kept), else null. */
export function buyerRedirectUrl(payment: { id: string; status: string; return_url: string }): string | null {
  if (!payment.return_url || !REDIRECT_STATUSES.has(payment.status)) return null;
  const u = new URL(payment.return_url);
  u.searchParams.set('payment_id', payment.id);
  u.searchParams.set('status', payment.status);
  return u.toString();
}

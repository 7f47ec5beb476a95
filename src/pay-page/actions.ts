import type { Ctx, Reply } from '../http/types';
import type { Core } from '../core/core';
import type { PaymentsCore } from '../payments/core';
import { buyerCancel, findPaymentForPage, payWithMethod } from '../payments/buyer';
import type { PaymentView } from '../model/payment';
import { backToPage, formOf, langOf, renderNotFound, tolerateMovedOn } from './render';
import { PAGE_METHODS } from './screens';

/** The payment a page action is about, with the buyer's language and form. */
export type Loaded = { lang: ReturnType<typeof langOf>; p: PaymentView; form: Record<string, string> };

/** Load the payment of a page action, or the not-found page. */
export async function loadForAction(ctx: Ctx<Pick<Core, 'store'>>): Promise<Loaded | Reply> {
  const lang = langOf(ctx);
  const p = await findPaymentForPage(ctx.app.store, ctx.params.id);
  if (!p) return renderNotFound(ctx, lang);
  return { lang, p, form: formOf(ctx.body) };
}

/**
 * POST /pay/:id/method: the buyer pays with a method (the one fixed at creation, or the one chosen for an
 * `any` payment): the bank session opens here, never on GET.
 */
export async function postMethod(ctx: Ctx<PaymentsCore>): Promise<Reply> {
  const l = await loadForAction(ctx);
  if (!('p' in l)) return l;
  const method = l.form.method;
  if (l.p.status === 'pending' && (PAGE_METHODS as readonly string[]).includes(method) && (l.p.method === 'any' || l.p.method === method)) {
    await tolerateMovedOn(() => payWithMethod(ctx.app, l.p.id, method));
  }
  return backToPage(l.p.id, l.lang);
}

/** POST /pay/:id/cancel: the buyer gives up before a bank session opens (pending → cancelled). */
export async function postCancel(ctx: Ctx<PaymentsCore>): Promise<Reply> {
  const l = await loadForAction(ctx);
  if (!('p' in l)) return l;
  if (l.p.status === 'pending') await tolerateMovedOn(() => buyerCancel(ctx.app, l.p.id));
  return backToPage(l.p.id, l.lang);
}

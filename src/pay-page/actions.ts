import type { Ctx, Reply } from '../http/types';
import { buyerCancel, buyerResolve, chooseMethod, findPaymentForPage } from '../payments/buyer';
import type { PaymentView } from '../payments/types';
import { planFromMetadata } from '../simulator/plan';
import { checkCard, decideCard, THREE_DS_CODE } from '../simulator/cards';
import { isTest } from './layout';
import { backToPage, formOf, langOf, renderNotFound, renderPage, tolerateMovedOn } from './render';
import { cardScreen, PAGE_METHODS } from './screens';
import { clearStep, getStep, putStep, type PageStep } from './steps';

/** What a buyer's decline means to the bank: the payer refused, reported as do_not_honor. */
const BUYER_DECLINE = 'do_not_honor';

type Loaded = { lang: ReturnType<typeof langOf>; p: PaymentView; form: Record<string, string> };

async function load(ctx: Ctx): Promise<Loaded | Reply> {
  const lang = langOf(ctx);
  const p = await findPaymentForPage(ctx.app, ctx.params.id);
  if (!p) return renderNotFound(ctx, lang);
  return { lang, p, form: formOf(ctx.body) };
}

/** POST /pay/:id/method: the buyer picks a method for an `any` payment (stays pending; GET then opens the session). */
export async function postMethod(ctx: Ctx): Promise<Reply> {
  const l = await load(ctx);
  if (!('p' in l)) return l;
  const method = l.form.method;
  if (l.p.status === 'pending' && l.p.method === 'any' && (PAGE_METHODS as readonly string[]).includes(method)) {
    await tolerateMovedOn(() => chooseMethod(ctx.app, l.p.id, method));
  }
  return backToPage(l.p.id, l.lang);
}

/** POST /pay/:id/cancel: the buyer gives up before a bank session opens (pending → cancelled). */
export async function postCancel(ctx: Ctx): Promise<Reply> {
  const l = await load(ctx);
  if (!('p' in l)) return l;
  if (l.p.status === 'pending') await tolerateMovedOn(() => buyerCancel(ctx.app, l.p.id));
  return backToPage(l.p.id, l.lang);
}

/**
 * POST /pay/:id/bank: approve or decline at the simulated bank (SBP, T-Pay, bank wallet; test mode).
 * Approve follows the magic-amount plan: success or failure at once, requires_action asks for one more
 * confirmation, pending leaves the bank silent until the session expires. Decline fails do_not_honor.
 */
export async function postBank(ctx: Ctx): Promise<Reply> {
  const l = await load(ctx);
  if (!('p' in l)) return l;
  const { p, lang, form } = l;
  const action = form.action;
  if (!isTest(p) || p.status !== 'processing' || p.method === 'cards' || (action !== 'approve' && action !== 'decline')) {
    return backToPage(p.id, lang);
  }
  const step = getStep(ctx.app, p.id);
  if (step && step.step !== 'confirm') return backToPage(p.id, lang);
  if (action === 'decline') {
    await tolerateMovedOn(() => buyerResolve(ctx.app, p.id, { outcome: 'failed', failureCode: BUYER_DECLINE }));
  } else if (step) {
    await tolerateMovedOn(() => buyerResolve(ctx.app, p.id, { outcome: 'succeeded' }));
  } else {
    const plan = planFromMetadata(p.metadata);
    if (plan?.outcome === 'requires_action') await putStep(ctx.app, p, blankStep('confirm'));
    else if (plan?.outcome === 'pending') await putStep(ctx.app, p, blankStep('waiting'));
    else if (plan?.outcome === 'failed') await tolerateMovedOn(() => buyerResolve(ctx.app, p.id, { outcome: 'failed', failureCode: plan.failureCode }));
    else await tolerateMovedOn(() => buyerResolve(ctx.app, p.id, { outcome: 'succeeded' }));
  }
  if (step || action === 'decline') await clearStep(ctx.app, p.id);
  return backToPage(p.id, lang);
}

function blankStep(step: PageStep['step']): PageStep {
  return { step, card_brand: '', card_mask: '', card_holder: '', outcome: '', failure_code: '' };
}

/**
 * POST /pay/:id/card: check the card as the page's script does, then let the test bank decide (the test
 * card, else the magic-amount plan). Only brand, mask and holder leave this function; never the number.
 */
export async function postCard(ctx: Ctx): Promise<Reply> {
  const l = await load(ctx);
  if (!('p' in l)) return l;
  const { p, lang, form } = l;
  if (p.status !== 'processing' || p.method !== 'cards' || getStep(ctx.app, p.id)) return backToPage(p.id, lang);
  const mode = isTest(p) ? 'test' : 'live';
  const checked = checkCard(form, ctx.app.clocks.now(p.shop_id, mode));
  if (!checked.card) {
    const body = cardScreen({ lang, p }, checked.errors, { exp: form.exp, holder: form.holder });
    return renderPage(ctx, lang, p, body, { status: 400, poll: true });
  }
  const { brand, mask, holder, digits } = checked.card;
  const card = { brand, mask, holder };
  const withCard = { step: 'waiting' as const, card_brand: brand, card_mask: mask, card_holder: holder, outcome: '' as const, failure_code: '' };
  if (mode === 'live') {
    // No bank connector exists yet: a live card payment waits until its session expires.
    await putStep(ctx.app, p, withCard);
    return backToPage(p.id, lang);
  }
  const d = decideCard(digits, planFromMetadata(p.metadata) ?? { outcome: 'succeeded', failureCode: '' });
  if (d.threeDs) {
    await putStep(ctx.app, p, { ...withCard, step: 'challenge', outcome: d.outcome, failure_code: d.failureCode ?? '' });
  } else if (d.outcome === 'pending') {
    await putStep(ctx.app, p, withCard);
  } else {
    await tolerateMovedOn(() => buyerResolve(ctx.app, p.id, { outcome: d.outcome as 'succeeded' | 'failed', failureCode: d.failureCode, card }));
  }
  return backToPage(p.id, lang);
}

/** POST /pay/:id/3ds: the documented code passes the challenge (then the card's answer applies); any other fails three_ds_failed. */
export async function postThreeDs(ctx: Ctx): Promise<Reply> {
  const l = await load(ctx);
  if (!('p' in l)) return l;
  const { p, lang, form } = l;
  const step = getStep(ctx.app, p.id);
  if (p.status !== 'processing' || step?.step !== 'challenge') return backToPage(p.id, lang);
  const card = { brand: step.card_brand, mask: step.card_mask, holder: step.card_holder };
  if ((form.code ?? '').trim() !== THREE_DS_CODE) {
    await tolerateMovedOn(() => buyerResolve(ctx.app, p.id, { outcome: 'failed', failureCode: 'three_ds_failed', card }));
  } else if (step.outcome === 'pending') {
    await putStep(ctx.app, p, { ...step, step: 'waiting' });
    return backToPage(p.id, lang);
  } else {
    const outcome = step.outcome === 'failed' ? 'failed' : 'succeeded';
    await tolerateMovedOn(() => buyerResolve(ctx.app, p.id, { outcome, failureCode: step.failure_code || undefined, card }));
  }
  await clearStep(ctx.app, p.id);
  return backToPage(p.id, lang);
}

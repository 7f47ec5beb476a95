import type { Ctx } from '../../platform/http/types';
import type { PaymentsCore } from '../../money/payments/core';
import { checkCard, decideCard, planFromMetadata, THREE_DS_CODE } from '../../banks/simulator/plan';
import { buyerResolve } from '../../banks/simulator/test-bank';
import { pageAction } from './handlers';
import { isTest, backToPage, renderPage, tolerateMovedOn, cardPayStep, cardScreen } from './render';
import { payWithMethod } from '../../money/payments/handlers';
import { getPayment, paymentView } from '../../money/payments/store';
import type { PaymentRow, PaymentView } from '../../money/bank-port/payment';
import { clearStep, getStep, putStep, type PageStep } from './steps';

// The test bank's forms on the hosted page; a live payment's buyer pays on the acquirer's page instead.

/** What a buyer's decline means to the bank: the payer refused, reported as do_not_honor. */
const BUYER_DECLINE = 'do_not_honor';

/** POST /pay/:id/bank: approve (as the magic-amount plan says) or decline at the simulated bank, test mode. */
export const postBank = pageAction(async (ctx: Ctx<PaymentsCore>, { p, lang, form }) => {
  const action = form.action;
  if (!isTest(p) || p.status !== 'processing' || p.method === 'cards' || (action !== 'approve' && action !== 'decline')) {
    return backToPage(p.id, lang);
  }
  const step = await getStep(ctx.app.store, p.id);
  if (step && step.step !== 'confirm') return backToPage(p.id, lang);
  // A decline, or an approval of the confirmation step, ends it; a first approval does what the payment's plan says.
  const plan = action === 'decline' ? { outcome: 'failed', failureCode: BUYER_DECLINE } : step ? null : planFromMetadata(p.metadata);
  if (plan?.outcome === 'requires_action') await putStep(ctx.app, p, blankStep('confirm'));
  else if (plan?.outcome === 'pending') await putStep(ctx.app, p, blankStep('waiting'));
  else if (plan?.outcome === 'failed') await tolerateMovedOn(buyerResolve(ctx.app, p.id, { outcome: 'failed', failureCode: plan.failureCode }));
  else await tolerateMovedOn(buyerResolve(ctx.app, p.id, { outcome: 'succeeded' }));
  if (step || action === 'decline') await clearStep(ctx.app.store, p.id);
  return backToPage(p.id, lang);
});

function blankStep(step: PageStep['step']): PageStep {
  return { step, card_brand: '', card_mask: '', card_holder: '', outcome: '', failure_code: '' };
}

/** Whether a card form posted for `p` is read (a test card session open, or one the card may open), and whether the method was fixed. */
async function cardPayable(ctx: Ctx<PaymentsCore>, p: PaymentView): Promise<{ fixed: boolean } | undefined> {
  // A live buyer enters the card on the acquirer's page: a number posted here is never read.
  if (!isTest(p) || (await getStep(ctx.app.store, p.id))) return undefined;
  if (p.status === 'processing') return p.method === 'cards' ? { fixed: true } : undefined;
  if (p.status !== 'pending') return undefined;
  const row = await getPayment(ctx.app.store, p.id);
  if (!row || (row.method_fixed && row.method !== 'cards')) return undefined;
  return { fixed: Boolean(row.method_fixed) };
}

/** POST /pay/:id/card: checks the card as the script does, opens a pending payment's card session, lets the test bank decide; only brand, mask, holder leave. */
export const postCard = pageAction(async (ctx: Ctx<PaymentsCore>, l) => {
  const { lang, form } = l;
  let p = l.p;
  const payable = await cardPayable(ctx, p);
  if (!payable) return backToPage(p.id, lang);
  const checked = checkCard(form, await ctx.app.clocks.now(ctx.app.store, p.shop_id, 'test'));
  if (!checked.card) {
    const kept = { exp: form.exp, holder: form.holder };
    const body = p.status === 'pending' ? cardPayStep({ lang, p }, !payable.fixed, checked.errors, kept) : cardScreen({ lang, p }, checked.errors, kept);
    return renderPage(lang, p, body, { status: 400, poll: true });
  }
  if (p.status === 'pending') {
    let opened: PaymentRow | undefined;
    await tolerateMovedOn(payWithMethod(ctx.app, p.id, 'cards').then((row) => (opened = row)));
    // The payment moved on meanwhile (expired, cancelled): the page shows where it is now.
    if (!opened) return backToPage(p.id, lang);
    p = await paymentView(ctx.app.store, opened, true);
  }
  const { brand, mask, holder, digits } = checked.card;
  const card = { brand, mask, holder };
  const withCard = { step: 'waiting' as const, card_brand: brand, card_mask: mask, card_holder: holder, outcome: '' as const, failure_code: '' };
  const d = decideCard(digits, planFromMetadata(p.metadata) ?? { outcome: 'succeeded', failureCode: '' });
  if (d.threeDs) {
    await putStep(ctx.app, p, { ...withCard, step: 'challenge', outcome: d.outcome, failure_code: d.failureCode ?? '' });
  } else if (d.outcome === 'pending') {
    await putStep(ctx.app, p, withCard);
  } else {
    await tolerateMovedOn(buyerResolve(ctx.app, p.id, { outcome: d.outcome as 'succeeded' | 'failed', failureCode: d.failureCode, card }));
  }
  return backToPage(p.id, lang);
});

/** POST /pay/:id/3ds: the documented code passes the challenge (then the card's answer applies); any other fails three_ds_failed. */
export const postThreeDs = pageAction(async (ctx: Ctx<PaymentsCore>, { p, lang, form }) => {
  const step = await getStep(ctx.app.store, p.id);
  if (p.status !== 'processing' || step?.step !== 'challenge') return backToPage(p.id, lang);
  const card = { brand: step.card_brand, mask: step.card_mask, holder: step.card_holder };
  if ((form.code ?? '').trim() !== THREE_DS_CODE) {
    await tolerateMovedOn(buyerResolve(ctx.app, p.id, { outcome: 'failed', failureCode: 'three_ds_failed', card }));
  } else if (step.outcome === 'pending') {
    await putStep(ctx.app, p, { ...step, step: 'waiting' });
    return backToPage(p.id, lang);
  } else {
    const outcome = step.outcome === 'failed' ? 'failed' : 'succeeded';
    await tolerateMovedOn(buyerResolve(ctx.app, p.id, { outcome, failureCode: step.failure_code || undefined, card }));
  }
  await clearStep(ctx.app.store, p.id);
  return backToPage(p.id, lang);
});

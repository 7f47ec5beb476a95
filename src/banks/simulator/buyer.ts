import { ApiError, notFound } from '../../platform/http/errors';
import { isUuid } from '../../platform/util/ids';
import { getPayment, metadataOf, paymentView } from '../../money/payments/store';
import type { PaymentsCore } from '../../money/payments/core';
import type { PaymentView } from '../../money/bank-port/payment';
import { paymentAnswered } from '../../money/payments/bank-answers';
import { planFromMetadata } from './plan';
import { simulatedAnswer } from './payments';

// The test bank's answer to what the buyer did on its screens of the hosted page (card form, 3-D Secure,
// bank app), through the same entry point as any bank's answer. The forms themselves are the page's
// (src/web/pay-page/simulator-forms.ts): the page sits above the bank it shows. A live payment never gets here.

/** What the buyer's action on the test bank's screens ended with. */
export interface BuyerOutcome {
  outcome: 'succeeded' | 'failed';
  /** Unified failure code; defaults to the planned code, else do_not_honor. */
  failureCode?: string;
  /** From a card form: never the full number, only brand, mask and holder. */
  card?: { brand: string; mask: string; holder: string };
}

/** The test bank answers with what the buyer did: processing → succeeded or failed (409 when it moved on). */
export async function buyerResolve(core: PaymentsCore, id: string, o: BuyerOutcome): Promise<PaymentView> {
  if (o.card && /\d{9,}/.test(o.card.mask.replace(/\s/g, ''))) {
    throw new ApiError(400, 'bad_request', 'Cannot store the card: the mask must not hold a full card number', 'card');
  }
  return core.store.write(async (tx) => {
    const p = isUuid(id) ? await getPayment(tx, id) : undefined;
    if (!p) throw notFound(`Cannot find payment "${id}"`);
    if (p.status !== 'processing') {
      throw new ApiError(409, 'invalid_state', `Cannot ${o.outcome === 'succeeded' ? 'confirm' : 'fail'} payment "${p.id}": its status is ${p.status}`);
    }
    const planned = planFromMetadata(metadataOf(p))?.failureCode;
    const answer = simulatedAnswer(o.outcome, o.failureCode || planned || 'do_not_honor');
    if (o.card && (answer.outcome === 'succeeded' || answer.outcome === 'refused')) answer.card = o.card;
    await paymentAnswered(core, tx, p.id, answer);
    return paymentView(tx, (await getPayment(tx, p.id))!);
  });
}

import type { Tx } from '../../platform/storage/store';
import type { Core } from '../../money/core/core';
import type { BankPort, CallbackRequest, CallbackResult, OperationRef, PayoutStart, PayoutRequest } from '../../money/bank-port/port';
import { shopPayoutProvider } from '../../money/bank-port/store';
import { getPayout } from '../../money/payouts/store';
import { payoutBody } from './protocol';
import { firstPost, getOpenOrRecent, payoutOfProviderId } from './records';
import { recordRequest } from '../http-call';
import { YOOKASSA } from './settings';
import { forged, noDescription, noExtras, nothing } from '../none';

export const REQUEST_JOB = 'yookassa.request';

/** Why a request is sent: the first POST, a status check (GET, or the POST again), or a notification's GET. */
export type Purpose = 'send' | 'check' | 'notified';

/** The provider keeps an Idempotence-Key 24 hours; repeats of a POST stop an hour before that. */
export const REPEAT_WINDOW_MS = 23 * 3_600_000;

/** Notifications of one payout within this long after its last GET lead to no other GET (a flood is one check). */
const NOTIFIED_QUIET_MS = 5_000;

// YooKassa Payouts behind the bank port for live shops' payouts: requests recorded in the domain's transaction, sent after
// commit by its job (jobs.ts). A card payout's number lives only in `cards` until the provider has it or the payout is final.
export class YookassaBank implements BankPort {
  readonly provider = YOOKASSA;
  readonly sendsPayouts = true;
  /** Card numbers of card payouts not yet known to the provider, by kopek payout id; never written anywhere. */
  readonly cards = new Map<string, string>();

  constructor(private readonly core: Pick<Core, 'clocks' | 'scheduler' | 'store' | 'log'>) {}

  async send(tx: Tx, shopId: string, op: 'CreatePayout' | 'GetPayout', payoutId: string, providerId: string, body: string, purpose: Purpose): Promise<void> {
    await recordRequest(this.core, tx, REQUEST_JOB, { purpose }, {
      shop_id: shopId, provider: YOOKASSA, operation: op, subject_kind: 'payout', subject_id: payoutId,
      order_id: payoutId, bank_payment_id: providerId, request: body,
    });
  }

  async payout(tx: Tx, req: PayoutRequest): Promise<PayoutStart> {
    if (req.method === 'payouts_account') throw new Error('cannot send an account payout through YooKassa: it has no such method');
    if (req.method === 'payouts_card') {
      if (!req.recipient.cardNumber) throw new Error('cannot send a card payout through YooKassa: the card number is missing');
      this.cards.set(req.id, req.recipient.cardNumber);
    }
    await this.send(tx, req.shopId, 'CreatePayout', req.id, '', JSON.stringify(payoutBody(req)), 'send');
    return { accepted: true, bankRef: '' };
  }

  async checkStatus(tx: Tx, op: OperationRef): Promise<void> {
    if (op.kind !== 'payout') return; // payments and refunds go to the shop's acquirer, never here
    const p = await getPayout(tx, op.payoutId);
    if (!p || p.status !== 'pending' || p.mode !== 'live') return;
    if (p.bank_ref) return this.send(tx, p.shop_id, 'GetPayout', p.id, p.bank_ref, '{}', 'check');
    const first = await firstPost(tx, p.id);
    if (!first) return;
    if (this.core.clocks.real() - first.created_at >= REPEAT_WINDOW_MS) {
      this.cards.delete(p.id);
      this.core.log.warn('YooKassa payout left to the operator: no answer within the provider\'s 24 hours', { shop_id: p.shop_id, payout_id: p.id });
      return;
    }
    if (p.method === 'payouts_card' && !this.cards.has(p.id)) {
      // Its number was lost with a restart: never sent again without it; a notification naming it settles it.
      this.core.log.warn('YooKassa card payout needs a decision: its number was lost before the provider named it', { shop_id: p.shop_id, payout_id: p.id });
      return;
    }
    await this.send(tx, p.shop_id, 'CreatePayout', p.id, '', first.request, 'check');
  }

  async callback(req: CallbackRequest): Promise<CallbackResult> {
    const b = req.body as { type?: unknown; event?: unknown; object?: { id?: unknown; metadata?: { payout_id?: unknown } } } | null;
    if (!b || typeof b !== 'object' || b.type !== 'notification' || typeof b.event !== 'string' || !b.object || typeof b.object.id !== 'string') return forged();
    const providerId = b.object.id.slice(0, 100);
    const named = typeof b.object.metadata?.payout_id === 'string' ? b.object.metadata.payout_id.slice(0, 64) : '';
    const ok: CallbackResult = { valid: true, payments: [], refunds: [], reply: '' };
    if ((await shopPayoutProvider(this.core.store, req.shopId))?.provider !== YOOKASSA) return ok;
    const payoutId = (await payoutOfProviderId(this.core.store, req.shopId, providerId)) ?? named;
    if (!payoutId) return ok;
    // Nothing in the body is applied: it only names the payout whose GET (with the shop's credentials) is.
    ok.record = async (tx) => {
      const p = await getPayout(tx, payoutId);
      if (!p || p.shop_id !== req.shopId || p.mode !== 'live' || p.status !== 'pending') return;
      if (p.bank_ref && p.bank_ref !== providerId) return;
      if (await getOpenOrRecent(tx, p.id, this.core.clocks.real() - NOTIFIED_QUIET_MS)) return;
      await this.send(tx, p.shop_id, 'GetPayout', p.id, providerId, '{}', 'notified');
    };
    return ok;
  }

  readonly openSession = elsewhere('take a payment');
  readonly chargeSaved = elsewhere('charge a saved method');
  readonly cancel = elsewhere('cancel a payment');
  readonly refund = elsewhere('refund', 'refunds');
  readonly describePayment = noDescription;
  readonly creationExtras = noExtras;
  readonly pageSession = nothing;
}

/** A payment operation, never sent here: payments and refunds go to the shop's acquirer. */
function elsewhere(what: string, goes = 'payments'): () => Promise<never> {
  return async () => {
    throw new Error(`cannot ${what} through YooKassa Payouts: ${goes} go to the shop's acquirer`);
  };
}

import { randomUUID } from 'node:crypto';
import type { Tx } from '../../platform/storage/store';
import type { Core } from '../../money/core/core';
import type { PaymentRow } from '../../money/bank-port/payment';
import type { RefundRow } from '../../money/bank-port/refund';
import { getPayment } from '../../money/payments/store';
import type { BankPort, CallbackRequest, CallbackResult, OperationRef, PageSession, PayoutStart, SessionRequest } from '../../money/bank-port/port';
import { shopAcquirer } from '../../money/bank-port/store';
import { MasterKey } from '../../platform/secrets/at-rest';
import type { Module } from '../../money/core/module';
import type { PaymentsCore } from '../../money/payments/core';
import { UrlPolicy } from '../../money/webhooks/url-safety';
import { amountOf, bankIdOf, dueDate, paymentAnswerOf, TBANK, tokenMatches, type TBankAnswer, type TBankMethod } from './protocol';
import { readSettings, terminalOf } from './settings';
import { getRebill, getSession, keepUnreadableAmount, newAttempt, paymentOfOrder, putBankRef, putRebill, recurrentOf } from './records';
import { recordRequest } from '../http-call';
import { forged, noDescription, noExtras } from '../none';
import { REFUSE_JOB, REQUEST_JOB, rebillContext, refuseJob, requestJob, type Purpose } from './jobs';

const MAX_DESCRIPTION = 140;

/** Payment kinds that bind a saved method: their Init asks the bank to keep the card (Recurrent=Y). */
const BINDING_KINDS = new Set(['token_binding', 'subscription_init']);

// T-Bank Internet Acquiring behind the bank port: each request is recorded in the domain's transaction and sent after commit
// by its job (jobs.ts). The buyer pays on the bank's page (PaymentURL) or with GetQr's SBP QR code.
export class TBankBank implements BankPort {
  readonly provider = TBANK;
  /** T-Bank's acquiring API sends no payouts: live payouts need a payout connector of their own. */
  readonly sendsPayouts = false;

  /** `key` is the database's master key: it decrypts the terminal's password and keeps the RebillIds. */
  constructor(private readonly core: Core, private readonly key: MasterKey) {}

  /** Refuses a payment without asking the bank, after commit (no_saved_method; no_rebill_id: the bank never gave one). */
  private async refuse(tx: Tx, p: PaymentRow, bankCode: string): Promise<void> {
    this.core.log.warn('T-Bank payment refused before sending: no saved card to charge', { shop_id: p.shop_id, payment_id: p.id, reason: bankCode });
    await this.core.scheduler.schedule(tx, { kind: REFUSE_JOB, subjectId: p.id, shopId: p.shop_id, mode: 'live', dueAt: await this.core.clocks.now(tx, p.shop_id, 'live'), payload: { bankCode } });
  }

  async send(tx: Tx, shopId: string, op: TBankMethod, subject: { kind: 'payment' | 'refund'; id: string }, fields: Record<string, unknown>, purpose: Purpose, extra: Record<string, unknown> = {}): Promise<void> {
    const acq = await shopAcquirer(tx, shopId);
    const terminalKey = acq?.provider === TBANK ? readSettings(acq).terminal_key : '';
    await recordRequest(this.core, tx, REQUEST_JOB, { purpose, ...extra }, {
      shop_id: shopId,
      provider: TBANK,
      operation: op,
      subject_kind: subject.kind,
      subject_id: subject.id,
      order_id: typeof fields.OrderId === 'string' ? fields.OrderId : '',
      bank_payment_id: bankIdOf(fields as { PaymentId?: string }),
      request: JSON.stringify({ TerminalKey: terminalKey, ...fields }),
    });
  }

  async init(tx: Tx, p: PaymentRow, purpose: 'session' | 'charge', tokenId?: string): Promise<void> {
    const orderId = randomUUID();
    await newAttempt(tx, p.id, p.shop_id, orderId, this.core.clocks.real());
    const page = `${this.core.payPageUrl}/pay/${p.id}`;
    const fields: Record<string, unknown> = {
      Amount: p.amount,
      OrderId: orderId,
      Description: (p.description || `Payment ${p.public_id || p.id}`).slice(0, MAX_DESCRIPTION),
      PayType: 'O',
      NotificationURL: `${this.core.baseUrl}/v1/callbacks/${TBANK}/${p.shop_id}`,
    };
    if (purpose === 'session') {
      Object.assign(fields, { SuccessURL: `${page}?back=success`, FailURL: `${page}?back=fail`, RedirectDueDate: dueDate(p.processing_until ?? p.expires_at) });
      const rec = await recurrentOf(tx, p.id);
      if (rec && BINDING_KINDS.has(rec.kind) && rec.token_id) Object.assign(fields, { Recurrent: 'Y', CustomerKey: rec.token_id });
    }
    await this.send(tx, p.shop_id, 'Init', { kind: 'payment', id: p.id }, fields, purpose, tokenId ? { tokenId } : {});
  }

  readonly describePayment = noDescription;

  async openSession(tx: Tx, req: SessionRequest): Promise<void> {
    // A saved-method payment without a token has no card the bank could charge.
    if (req.payment.method === 'recurrent') return this.refuse(tx, req.payment, 'no_saved_method');
    await this.init(tx, req.payment, 'session');
  }

  async chargeSaved(tx: Tx, req: SessionRequest & { tokenId: string }): Promise<void> {
    // Without the RebillId of the binding (its notification never came) the bank cannot charge the card.
    if (!(await getRebill(tx, req.tokenId))) return this.refuse(tx, req.payment, 'no_rebill_id');
    await this.init(tx, req.payment, 'charge', req.tokenId);
  }

  async cancel(tx: Tx, payment: PaymentRow): Promise<void> {
    const s = await getSession(tx, payment.id);
    if (s?.bank_payment_id) await this.send(tx, payment.shop_id, 'Cancel', { kind: 'payment', id: payment.id }, { PaymentId: s.bank_payment_id }, 'void');
  }

  /** A refund's Cancel, sent again as its status check: ExternalRequestId makes the bank take a repeat as the same operation. */
  async refund(tx: Tx, refund: RefundRow): Promise<void> {
    const s = await getSession(tx, refund.payment_id);
    await this.send(tx, refund.shop_id, 'Cancel', { kind: 'refund', id: refund.id }, { PaymentId: s?.bank_payment_id ?? '', Amount: refund.amount, ExternalRequestId: refund.id }, 'refund');
  }

  async checkStatus(tx: Tx, op: OperationRef): Promise<void> {
    if (op.kind === 'refund') return this.refund(tx, op.refund);
    if (op.kind === 'payout') return; // T-Bank's acquiring API sends no payouts: none is ever created live.
    const p = op.payment;
    const s = await getSession(tx, p.id);
    if (!s) return this.reopen(tx, p);
    if (!s.bank_payment_id) {
      // Init never answered: ask by OrderId whether the bank has the order at all.
      await this.send(tx, p.shop_id, 'CheckOrder', { kind: 'payment', id: p.id }, { OrderId: s.order_id }, 'check');
      return;
    }
    await this.send(tx, p.shop_id, 'GetState', { kind: 'payment', id: p.id }, { PaymentId: s.bank_payment_id }, 'check');
    if (p.method === 'sbp' && !s.qr_payload) await this.requestQr(tx, p, s.bank_payment_id);
  }

  /** A new attempt, new OrderId, of a payment whose Init never arrived: a merchant charge again with its token, else a new session. */
  async reopen(tx: Tx, p: PaymentRow): Promise<void> {
    const rec = await recurrentOf(tx, p.id);
    if (rec?.token_id && (rec.kind === 'token_charge' || rec.kind === 'subscription_charge')) await this.chargeSaved(tx, { payment: p, by: 'service', tokenId: rec.token_id });
    else await this.openSession(tx, { payment: p, by: 'service' });
  }

  /** GetQr of an SBP payment's session: the payload the page shows as a QR code. */
  async requestQr(tx: Tx, p: PaymentRow, bankPaymentId: string): Promise<void> {
    await this.send(tx, p.shop_id, 'GetQr', { kind: 'payment', id: p.id }, { PaymentId: bankPaymentId, DataType: 'PAYLOAD' }, 'qr');
  }

  async payout(): Promise<PayoutStart> {
    throw new Error('cannot send a payout through T-Bank acquiring: it has no payout method');
  }

  async callback(req: CallbackRequest): Promise<CallbackResult> {
    if (!req.body || typeof req.body !== 'object' || Array.isArray(req.body)) return forged();
    const n = req.body as Record<string, unknown> & TBankAnswer;
    const acq = await shopAcquirer(this.core.store, req.shopId);
    if (!acq || acq.provider !== TBANK) return forged();
    let terminal;
    try {
      terminal = terminalOf(this.key, acq);
    } catch (err) {
      this.core.log.error('cannot check a T-Bank notification: the terminal password does not decrypt', { shop_id: req.shopId, error: (err as Error).message });
      return forged();
    }
    if (n.TerminalKey !== terminal.terminalKey || !tokenMatches(n, terminal.password)) return forged();
    const ok: CallbackResult = { valid: true, payments: [], refunds: [], reply: 'OK' };
    const orderId = typeof n.OrderId === 'string' ? n.OrderId : '';
    const paymentId = orderId ? await paymentOfOrder(this.core.store, req.shopId, orderId) : undefined;
    if (!paymentId) return ok;
    const answer = paymentAnswerOf(n);
    // Refund statuses are settled by the refunds' own Cancel answers and checks.
    if (['REFUNDED', 'PARTIAL_REFUNDED', 'PARTIAL_REVERSED'].includes(String(n.Status))) return ok;
    // Only an integer of kopecks is the payment's amount; anything else ("300000.00", a fraction, none) is kept, never applied.
    const stated = amountOf(n);
    const amount = stated.kind === 'kopecks' ? stated.value : undefined;
    if (amount !== undefined) ok.payments.push({ paymentId, amount, answer });
    else this.core.log.warn('T-Bank notification Amount is not an integer of kopecks; not applied', { shop_id: req.shopId, payment_id: paymentId });
    const bankPaymentId = bankIdOf(n);
    const rebill = String(n.RebillId ?? '');
    ok.record = async (tx) => {
      const p = await getPayment(tx, paymentId);
      if (!p || p.shop_id !== req.shopId || p.mode !== 'live') return;
      if (amount === undefined) return keepUnreadableAmount(this.core.clocks, tx, p, answer.outcome, stated.kind === 'bad' ? stated.raw : '(none)');
      // The current attempt's bank payment is shown as metadata.bank_ref before the answer applies, so its webhook carries it.
      if ((await getSession(tx, paymentId))?.order_id === orderId) await putBankRef(tx, paymentId, bankPaymentId);
      const rec = await recurrentOf(tx, paymentId);
      if (rebill && answer.outcome === 'succeeded' && rec?.token_id && BINDING_KINDS.has(rec.kind) && p.status === 'processing' && p.amount === amount) {
        await putRebill(tx, rec.token_id, req.shopId, this.key.encrypt(rebill, rebillContext(rec.token_id)), this.core.clocks.real());
      }
    };
    return ok;
  }

  readonly creationExtras = noExtras;

  async pageSession(payment: PaymentRow): Promise<PageSession> {
    const s = await getSession(this.core.store, payment.id);
    if (payment.method === 'sbp') return s?.qr_payload ? { kind: 'qr', payload: s.qr_payload } : { kind: 'waiting' };
    return s?.payment_url ? { kind: 'redirect', url: s.payment_url } : { kind: 'waiting' };
  }
}

// T-Bank as the wiring mounts it: the connector, the job sending each recorded request, and the refusal job; builds only.
// A terminal's api_url is called only at a public address or in a --webhook-allow range.
export function tbankModule(core: PaymentsCore): Module {
  const key = new MasterKey(core.config.db);
  const bank = new TBankBank(core, key);
  return { name: 'tbank', banks: [bank], jobs: [requestJob(core, key, bank, new UrlPolicy(core.config.webhookAllow)), refuseJob(core)] };
}

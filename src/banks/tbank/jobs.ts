import type { Tx } from '../../platform/storage/store';
import type { ModuleJob } from '../../money/core/module';
import type { PaymentsCore } from '../../money/payments/core';
import type { AsyncJobKind, Job } from '../../platform/queue/jobs';
import { getPayment } from '../../money/payments/store';
import { getRefund } from '../../money/refunds/store';
import { paymentAnswered } from '../../money/payments/state';
import { refundAnswered } from '../../money/refunds/bank-answers';
import { shopAcquirer } from '../../money/bank-port/store';
import type { MasterKey } from '../../platform/secrets/at-rest';
import type { Resolved, UrlPolicy } from '../../money/webhooks/url-safety';
import type { PaymentRow } from '../../money/bank-port/payment';
import { accepted, amountOf, bankIdOf, checkOrderPayment, paymentAnswerOf, refundAnswerOf, refusal, TBANK, tbankToken, withoutSecrets, type TBankAnswer, type TBankMethod } from './protocol';
import { terminalOf } from './settings';
import { getRebill, getSession, keepUnreadableAmount, putBankRef, recurrentOf, updateSession } from './records';
import { callBank, getRequest, jsonObject, JOB_MARGIN_MS, markAnswered, sendRecorded, type BankRequestRow } from '../http-call';

/** What an answer may ask of the connector (bank.ts): another request, a QR code, a session opened anew. */
interface TBankRequests {
  send(tx: Tx, shopId: string, op: TBankMethod, subject: { kind: 'payment' | 'refund'; id: string }, fields: Record<string, unknown>,
    purpose: Purpose, extra?: Record<string, unknown>): Promise<void>;
  requestQr(tx: Tx, p: PaymentRow, bankPaymentId: string): Promise<void>;
  reopen(tx: Tx, p: PaymentRow): Promise<void>;
}

export const REQUEST_JOB = 'tbank.request';

/** Job kind: refuse a payment kopek cannot send to the bank at all (no saved card to charge). */
export const REFUSE_JOB = 'tbank.refuse';

export type Purpose = 'session' | 'charge' | 'check' | 'qr' | 'void' | 'refund';

export function rebillContext(tokenId: string): string {
  return `tbank.rebill:${tokenId}`;
}

export type Sent = { kind: 'answer'; answer: TBankAnswer } | { kind: 'unknown'; reason: string };

/** POSTs a signed body (connecting to `resolved`); a timeout, connection error, 5xx or non-object body is unknown: the bank may have acted. */
async function postJson(url: string, body: Record<string, unknown>, timeoutMs: number, resolved: Resolved): Promise<Sent> {
  const payload = Buffer.from(JSON.stringify(body), 'utf8');
  const headers = { 'Content-Type': 'application/json', 'Content-Length': payload.length, Accept: 'application/json' };
  const raw = await callBank({ method: 'POST', url, headers, payload, timeoutMs, resolved, who: 'acquirer' });
  if (raw.kind === 'unknown') return raw;
  if (raw.status >= 500) return { kind: 'unknown', reason: `HTTP ${raw.status}` };
  const parsed = jsonObject(raw.status, raw.body, 'an answer that has no Success', (o) => typeof o.Success === 'boolean');
  return parsed.kind === 'unknown' ? parsed : { kind: 'answer', answer: parsed.body as TBankAnswer };
}

// `run` signs the recorded request (the terminal's password, a charge's RebillId) and sends it once (sendRecorded);
// `complete` applies the answer. `policy`: where the shop's api_url may lead (private addresses only in --webhook-allow ranges).
export function requestJob(core: PaymentsCore, key: MasterKey, bank: TBankRequests, policy: UrlPolicy): ModuleJob {
  const timeoutMs = Math.max(1, Math.round(core.config.acquirerTimeoutSeconds * 1000));
  const hint = ' (the operator allows a range with --webhook-allow)';
  const { store, clocks, log } = core;
  const context = { store, clocks, log, policy, provider: TBANK, bank: 'T-Bank', who: 'acquirer', hint };
  const spec: AsyncJobKind<Sent> = {
    deadline_ms: timeoutMs + JOB_MARGIN_MS,
    run: (job) => sendRecorded<BankRequestRow, Sent>(context, Number(job.subject_id), async (row) => {
      const acq = await shopAcquirer(core.store, row.shop_id);
      if (!acq || acq.provider !== TBANK) return { kind: 'unknown', reason: 'the shop has no T-Bank acquirer any more' };
      const body = JSON.parse(row.request) as Record<string, unknown>;
      let url: string;
      try {
        const t = terminalOf(key, acq);
        [body.TerminalKey, url] = [t.terminalKey, `${t.apiUrl}/${row.operation}`];
        const enc = row.operation === 'Charge' ? await getRebill(core.store, String(job.payload.tokenId ?? '')) : undefined;
        if (enc) body.RebillId = key.decrypt(enc, rebillContext(String(job.payload.tokenId)));
        body.Token = tbankToken(body, t.password);
      } catch (err) {
        return { kind: 'unknown', reason: `cannot sign the request: ${(err as Error).message}` };
      }
      const call = async (resolved: Resolved): Promise<Sent> => {
        const sent = await postJson(url, body, timeoutMs, resolved);
        const outcome = sent.kind === 'answer' ? `${sent.answer.Status ?? ''} ${sent.answer.ErrorCode ?? ''}`.trim() : `unknown: ${sent.reason}`;
        core.log.info('T-Bank request', { operation: row.operation, shop_id: row.shop_id, subject_id: row.subject_id, outcome });
        return sent;
      };
      return { kind: 'call', url, call };
    }),
    async complete(tx, job, sent) {
      const row = await getRequest(tx, Number(job.subject_id), TBANK);
      if (!row) return;
      const a = sent.kind === 'answer' ? sent.answer : undefined;
      const answer = JSON.stringify(a ? withoutSecrets(a as Record<string, unknown>) : { reason: (sent as { reason: string }).reason });
      await markAnswered(tx, row.id, a ? 'answered' : 'unknown', answer, a ? bankIdOf(a) : '', core.clocks.real());
      await onAnswer(core, bank, tx, row, String(job.payload.purpose ?? ''), job, a, sent.kind === 'unknown' ? sent.reason : '');
    },
  };
  return { kind: REQUEST_JOB, async: spec };
}

export function refuseJob(core: PaymentsCore): ModuleJob {
  return {
    kind: REFUSE_JOB,
    run: async (tx, job) => {
      await paymentAnswered(core, tx, job.subject_id, { outcome: 'refused', failureCode: 'processing_error', bankCode: String(job.payload.bankCode) });
    },
  };
}

const unknown = (reason: string) => ({ outcome: 'unknown' as const, reason });

/** Apply an answer with the Amount it states; one that is not an integer of kopecks is kept for the operator, never applied. */
async function answeredWithAmount(core: PaymentsCore, tx: Tx, p: PaymentRow, a: TBankAnswer): Promise<void> {
  const amount = amountOf(a);
  const answer = paymentAnswerOf(a);
  if (amount.kind === 'bad') return keepUnreadableAmount(core.clocks, tx, p, answer.outcome, amount.raw);
  await paymentAnswered(core, tx, p.id, answer, amount.kind === 'kopecks' ? amount.value : undefined);
}

// A merchant charge whose bank payment is still NEW: its Charge never reached the bank. The bank charges only a NEW payment,
// so sending it now cannot charge twice. True when sent.
async function chargeNotSent(bank: TBankRequests, tx: Tx, p: PaymentRow, a: TBankAnswer, bankPaymentId: string): Promise<boolean> {
  if (p.status !== 'processing' || a.Status !== 'NEW' || !bankPaymentId) return false;
  const rec = await recurrentOf(tx, p.id);
  if (!rec?.token_id || (rec.kind !== 'token_charge' && rec.kind !== 'subscription_charge')) return false;
  await bank.send(tx, p.shop_id, 'Charge', { kind: 'payment', id: p.id }, { PaymentId: bankPaymentId }, 'charge', { tokenId: rec.token_id });
  return true;
}

async function onAnswer(core: PaymentsCore, bank: TBankRequests, tx: Tx, row: BankRequestRow, purpose: string, job: Job, a: TBankAnswer | undefined, why: string): Promise<unknown> {
  if (row.subject_kind === 'refund') {
    if (!(await getRefund(tx, row.subject_id))) return;
    return refundAnswered(core, tx, row.subject_id, a ? refundAnswerOf(a) : unknown(why));
  }
  const p = await getPayment(tx, row.subject_id);
  // A void's payment is cancelled already: the bank's answer changes nothing here.
  if (!p || purpose === 'void') return;
  if (!a) {
    if (purpose !== 'qr') await paymentAnswered(core, tx, p.id, unknown(why));
    return;
  }
  const s = await getSession(tx, p.id);
  const now = core.clocks.real();
  const bankPaymentId = bankIdOf(a);
  // The current attempt's bank id, whatever the answer, becomes metadata.bank_ref first, so the webhook below carries it.
  const current = s !== undefined && s.order_id === row.order_id;
  switch (row.operation) {
    case 'Init': {
      if (current) await putBankRef(tx, p.id, bankPaymentId);
      if (!accepted(a)) return paymentAnswered(core, tx, p.id, refusal(a));
      // Only a web address is ever sent to the buyer's browser as the bank's page.
      const paymentUrl = typeof a.PaymentURL === 'string' && /^https?:\/\/[^\s]+$/.test(a.PaymentURL) ? a.PaymentURL : '';
      if (current) await updateSession(tx, p.id, row.order_id, { bankPaymentId, paymentUrl }, now);
      if (purpose === 'charge') {
        const tokenId = job.payload.tokenId;
        return bank.send(tx, p.shop_id, 'Charge', { kind: 'payment', id: p.id }, { PaymentId: bankPaymentId }, 'charge', { tokenId });
      }
      if (p.method === 'sbp' && p.status === 'processing') await bank.requestQr(tx, p, bankPaymentId);
      return paymentAnswered(core, tx, p.id, paymentAnswerOf(a));
    }
    case 'GetQr':
      if (accepted(a) && typeof a.Data === 'string' && s) await updateSession(tx, p.id, s.order_id, { qrPayload: a.Data }, now);
      else if (a.Success === false) await paymentAnswered(core, tx, p.id, refusal(a));
      return;
    case 'Charge':
      if (!accepted(a) && a.Success === false) return paymentAnswered(core, tx, p.id, refusal(a));
      return answeredWithAmount(core, tx, p, a);
    case 'GetState':
      if (!accepted(a)) return paymentAnswered(core, tx, p.id, unknown(`GetState error ${a.ErrorCode ?? ''}`));
      if (!(await chargeNotSent(bank, tx, p, a, bankPaymentId))) await answeredWithAmount(core, tx, p, a);
      return;
    case 'CheckOrder': {
      const found = accepted(a) ? checkOrderPayment(a) : undefined;
      // No such order at the bank: the Init never reached it. A new attempt, with a new OrderId.
      if (!found && a.Success === false && p.status === 'processing' && current) return bank.reopen(tx, p);
      if (!found) return paymentAnswered(core, tx, p.id, unknown('CheckOrder found no payment'));
      const foundId = bankIdOf(found);
      if (current) {
        await updateSession(tx, p.id, row.order_id, { bankPaymentId: foundId }, now);
        await putBankRef(tx, p.id, foundId);
      }
      if (!(await chargeNotSent(bank, tx, p, found, foundId))) await answeredWithAmount(core, tx, p, found);
    }
  }
}

import type { Tx } from '../../platform/storage/store';
import type { ModuleJob } from '../../money/core/module';
import type { PaymentsCore } from '../../money/payments/core';
import type { AsyncJobKind, Job } from '../../platform/queue/jobs';
import { getPayment } from '../../money/payments/store';
import { getRefund } from '../../money/refunds/refunds';
import { paymentAnswered } from '../../money/payments/bank-answers';
import { refundAnswered } from '../../money/refunds/bank-answers';
import { shopAcquirer } from '../../money/bank-port/store';
import type { MasterKey } from '../../platform/secrets/master-key';
import type { PaymentAnswer } from '../../money/bank-port/port';
import { fixedLookup, type Resolved, type UrlPolicy } from '../../money/webhooks/url-safety';
import { accepted, amountOf, checkOrderPayment, failureCodeOf, paymentAnswerOf, refundAnswerOf, TBANK, tbankToken, withoutSecrets, type TBankAnswer, type TBankMethod } from './protocol';
import { terminalOf } from './settings';
import { getRebill, getRequest, getSession, keepUnreadableAmount, putBankRef, recurrentOf, updateSession } from './records';
import { callBank, JOB_MARGIN_MS, markAnswered, markSent, type BankRequestRow } from '../http-call';
import type { PaymentRow } from '../../money/bank-port/payment';

/** What an answer may ask of the connector (bank.ts): another request, a QR code, a session opened anew. */
export interface TBankRequests {
  send(tx: Tx, shopId: string, op: TBankMethod, subject: { kind: 'payment' | 'refund'; id: string }, fields: Record<string, unknown>, purpose: Purpose, extra?: Record<string, unknown>): Promise<number>;
  requestQr(tx: Tx, p: PaymentRow, bankPaymentId: string): Promise<void>;
  reopen(tx: Tx, p: PaymentRow): Promise<void>;
}

/** Job kind: send one recorded request to T-Bank and report its answer. */
export const REQUEST_JOB = 'tbank.request';

/** Job kind: refuse a payment kopek cannot send to the bank at all (no saved card to charge). */
export const REFUSE_JOB = 'tbank.refuse';

/** Why a request is sent, which decides what its answer does. */
export type Purpose = 'session' | 'charge' | 'check' | 'qr' | 'void' | 'refund';

export function rebillContext(tokenId: string): string {
  return `tbank.rebill:${tokenId}`;
}

/** What one POST to the bank gave: a readable JSON answer, or unknown (and why, without secrets). */
export type Sent = { kind: 'answer'; answer: TBankAnswer } | { kind: 'unknown'; reason: string };

/** POSTs a signed body (connecting to `resolved`); a timeout, connection error, 5xx or non-object body is unknown: the bank may have acted. */
export async function postJson(url: string, body: Record<string, unknown>, timeout_ms: number, resolved?: Resolved): Promise<Sent> {
  const payload = Buffer.from(JSON.stringify(body), 'utf8');
  const headers = { 'Content-Type': 'application/json', 'Content-Length': payload.length, Accept: 'application/json' };
  const raw = await callBank({ method: 'POST', url, headers, payload, timeoutMs: timeout_ms, lookup: resolved ? fixedLookup(resolved) : undefined, who: 'acquirer' });
  if (raw.kind === 'unknown') return raw;
  if (raw.status >= 500) return { kind: 'unknown', reason: `HTTP ${raw.status}` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.body.toString('utf8'));
  } catch {
    return { kind: 'unknown', reason: `HTTP ${raw.status} with a body that is not JSON` };
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed) || typeof (parsed as TBankAnswer).Success !== 'boolean') {
    return { kind: 'unknown', reason: `HTTP ${raw.status} with an answer that has no Success` };
  }
  return { kind: 'answer', answer: parsed as TBankAnswer };
}

// `run` sends outside any transaction, marking the request sent first: one found sent already (the process died before its
// answer was recorded) is reported unknown, not sent again, and a status check settles it. `complete` applies the answer.
// `policy`: where the shop's api_url may lead (private addresses only in --webhook-allow ranges).
export function requestJob(core: PaymentsCore, key: MasterKey, bank: TBankRequests, policy: UrlPolicy): ModuleJob {
  const timeout_ms = Math.max(1, Math.round(core.config.acquirerTimeoutSeconds * 1000));
  const spec: AsyncJobKind<Sent> = {
    deadline_ms: timeout_ms + JOB_MARGIN_MS,
    async run(job) {
      const row = await getRequest(core.store, Number(job.subject_id));
      if (!row) return { kind: 'unknown', reason: 'the request record is gone' };
      if (row.state !== 'queued') return { kind: 'unknown', reason: 'sent before a restart; no answer was recorded' };
      const acq = await shopAcquirer(core.store, row.shop_id);
      if (!acq || acq.provider !== TBANK) return { kind: 'unknown', reason: 'the shop has no T-Bank acquirer any more' };
      let body: Record<string, unknown>;
      let url: string;
      let resolved: Resolved;
      try {
        const t = terminalOf(key, acq);
        body = { ...(JSON.parse(row.request) as Record<string, unknown>), TerminalKey: t.terminalKey };
        if (row.operation === 'Charge') {
          const enc = await getRebill(core.store, String(job.payload.tokenId ?? ''));
          if (enc) body.RebillId = key.decrypt(enc, rebillContext(String(job.payload.tokenId)));
        }
        body.Token = tbankToken(body, t.password);
        url = `${t.apiUrl}/${row.operation}`;
      } catch (err) {
        return { kind: 'unknown', reason: `cannot sign the request: ${(err as Error).message}` };
      }
      try {
        resolved = await policy.checkProvider(new URL(url));
      } catch (err) {
        // Never sent: the terminal key and a Token do not go to the operator's own network on a shop's word.
        core.log.error('T-Bank request not sent: the acquirer address is refused', { shop_id: row.shop_id, operation: row.operation, reason: (err as Error).message });
        return { kind: 'unknown', reason: `not sent: the acquirer address is refused: ${(err as Error).message} (the operator allows a range with --webhook-allow)` };
      }
      // Only the run moving the request from queued to sent sends it: another that read it queued (one frozen past
      // its claim, and the one that took the job over) sends nothing.
      if (!(await core.store.write(async (tx) => markSent(tx, row.id, core.clocks.real())))) {
        return { kind: 'unknown', reason: 'sent by another run; no answer was recorded here' };
      }
      const sent = await postJson(url, body, timeout_ms, resolved);
      core.log.info('T-Bank request', { operation: row.operation, shop_id: row.shop_id, subject_id: row.subject_id, outcome: sent.kind === 'answer' ? `${sent.answer.Status ?? ''} ${sent.answer.ErrorCode ?? ''}`.trim() : `unknown: ${sent.reason}` });
      return sent;
    },
    async complete(tx, job, sent) {
      const row = await getRequest(tx, Number(job.subject_id));
      if (!row) return;
      const a = sent.kind === 'answer' ? sent.answer : undefined;
      const bankPaymentId = a?.PaymentId !== undefined && a.PaymentId !== null ? String(a.PaymentId) : '';
      await markAnswered(tx, row.id, a ? 'answered' : 'unknown', JSON.stringify(a ? withoutSecrets(a as Record<string, unknown>) : { reason: (sent as { reason: string }).reason }), bankPaymentId, core.clocks.real());
      await onAnswer(core, bank, tx, row, String(job.payload.purpose ?? ''), job, a, sent.kind === 'unknown' ? sent.reason : '');
    },
  };
  return { kind: REQUEST_JOB, async: spec };
}

/** The refusal job: the payment is refused processing_error with the `bankCode` the connector gave (refuse()). */
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
async function answeredWithAmount(core: PaymentsCore, tx: Tx, p: PaymentRow, answer: PaymentAnswer, a: TBankAnswer): Promise<void> {
  const amount = amountOf(a);
  if (amount.kind === 'bad') return keepUnreadableAmount(core.clocks, tx, p, answer.outcome, amount.raw);
  await paymentAnswered(core, tx, p.id, answer, amount.kind === 'kopecks' ? amount.value : undefined);
}

/** A refusal of a request as a payment answer: the bank's ErrorCode, unified. */
function refusal(a: TBankAnswer) {
  const code = String(a.ErrorCode ?? '') || '0';
  return { outcome: 'refused' as const, failureCode: failureCodeOf(code), bankCode: code };
}

// A merchant charge whose bank payment is still NEW: its Charge never reached the bank. The bank charges only a NEW payment,
// so sending it now cannot charge twice. True when sent.
async function chargeNotSent(bank: TBankRequests, tx: Tx, p: { id: string; shop_id: string; status: string }, a: TBankAnswer, bankPaymentId: string): Promise<boolean> {
  if (p.status !== 'processing' || a.Status !== 'NEW' || !bankPaymentId) return false;
  const rec = await recurrentOf(tx, p.id);
  if (!rec?.token_id || (rec.kind !== 'token_charge' && rec.kind !== 'subscription_charge')) return false;
  await bank.send(tx, p.shop_id, 'Charge', { kind: 'payment', id: p.id }, { PaymentId: bankPaymentId }, 'charge', { tokenId: rec.token_id });
  return true;
}

async function onAnswer(core: PaymentsCore, bank: TBankRequests, tx: Tx, row: BankRequestRow, purpose: string, job: Job, a: TBankAnswer | undefined, why: string): Promise<void> {
  if (row.subject_kind === 'refund') {
    if (!(await getRefund(tx, row.subject_id))) return;
    await refundAnswered(core, tx, row.subject_id, a ? refundAnswerOf(a) : unknown(why));
    return;
  }
  const p = await getPayment(tx, row.subject_id);
  if (!p) return;
  const s = await getSession(tx, p.id);
  const now = core.clocks.real();
  if (purpose === 'void') return; // the payment is cancelled already; the bank's answer changes nothing here
  if (!a) {
    if (purpose !== 'qr') await paymentAnswered(core, tx, p.id, unknown(why));
    return;
  }
  const bankPaymentId = a.PaymentId !== undefined && a.PaymentId !== null ? String(a.PaymentId) : '';
  // The current attempt's bank id, whatever the answer, becomes metadata.bank_ref first, so the webhook below carries it.
  const current = s !== undefined && s.order_id === row.order_id;
  switch (row.operation) {
    case 'Init': {
      if (current) await putBankRef(tx, p.id, bankPaymentId);
      if (!accepted(a)) {
        await paymentAnswered(core, tx, p.id, refusal(a));
        return;
      }
      // Only a web address is ever sent to the buyer's browser as the bank's page.
      const paymentUrl = typeof a.PaymentURL === 'string' && /^https?:\/\/[^\s]+$/.test(a.PaymentURL) ? a.PaymentURL : '';
      if (current) await updateSession(tx, p.id, row.order_id, { bankPaymentId, paymentUrl }, now);
      if (purpose === 'charge') {
        await bank.send(tx, p.shop_id, 'Charge', { kind: 'payment', id: p.id }, { PaymentId: bankPaymentId }, 'charge', { tokenId: job.payload.tokenId });
        return;
      }
      if (p.method === 'sbp' && p.status === 'processing') await bank.requestQr(tx, p, bankPaymentId);
      await paymentAnswered(core, tx, p.id, paymentAnswerOf(a));
      return;
    }
    case 'GetQr':
      if (accepted(a) && typeof a.Data === 'string' && s) await updateSession(tx, p.id, s.order_id, { qrPayload: a.Data }, now);
      else if (a.Success === false) await paymentAnswered(core, tx, p.id, refusal(a));
      return;
    case 'Charge':
      if (!accepted(a) && a.Success === false) await paymentAnswered(core, tx, p.id, refusal(a));
      else await answeredWithAmount(core, tx, p, paymentAnswerOf(a), a);
      return;
    case 'GetState':
      if (accepted(a) && (await chargeNotSent(bank, tx, p, a, bankPaymentId))) return;
      if (accepted(a)) await answeredWithAmount(core, tx, p, paymentAnswerOf(a), a);
      else await paymentAnswered(core, tx, p.id, unknown(`GetState error ${a.ErrorCode ?? ''}`));
      return;
    case 'CheckOrder': {
      const found = accepted(a) ? checkOrderPayment(a) : undefined;
      if (!found) {
        // The bank has no such order: the Init never reached it. A new attempt, with a new OrderId.
        if (a.Success === false && p.status === 'processing' && s && s.order_id === row.order_id) await bank.reopen(tx, p);
        else await paymentAnswered(core, tx, p.id, unknown('CheckOrder found no payment'));
        return;
      }
      const foundId = found.PaymentId !== undefined ? String(found.PaymentId) : '';
      if (current) {
        await updateSession(tx, p.id, row.order_id, { bankPaymentId: foundId }, now);
        await putBankRef(tx, p.id, foundId);
      }
      if (await chargeNotSent(bank, tx, p, found, foundId)) return;
      await answeredWithAmount(core, tx, p, paymentAnswerOf(found), found);
      return;
    }
  }
}

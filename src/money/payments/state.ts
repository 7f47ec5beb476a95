import type { Core } from '../core/core';
import type { Reader, RunResult, Tx } from '../../platform/storage/store';
import type { Mode } from '../../platform/clock';
import type { Job } from '../../platform/queue/jobs-table';
import type { Scheduler } from '../../platform/queue/jobs';
import { invalidState } from '../../platform/http/errors';
import { post } from '../ledger/ledger';
import type { BankPort, Opener, PaymentAnswer } from '../bank-port/port';
import { CHECK_JOBS, recordMismatch, scheduleCheck, type Applied, type CheckTiming } from '../bank-port/checks';
import type { PaymentsCore } from './core';
import { buildPaymentView, getPayment, insertPayment, metadataOf, SHOP_NAME_SQL, updatePayment, type InsertParams } from './store';
import { SESSION_TTL_MS, type ConcreteMethod, type PaymentRow, type PaymentStatus } from '../bank-port/payment';

/** Anything else is 409 invalid_state. */
const ALLOWED: Record<PaymentStatus, readonly PaymentStatus[]> = {
  pending: ['processing', 'cancelled', 'expired'],
  // processing → cancelled only on the bank's word (it voided the session); the merchant cancels pending payments.
  processing: ['succeeded', 'failed', 'expired', 'cancelled'],
  succeeded: ['refunded'],
  failed: [],
  cancelled: [],
  refunded: [],
  expired: [],
};

/** `refunded` sends none: each refund sends its own. */
const WEBHOOK: Partial<Record<PaymentStatus, string>> = {
  succeeded: 'payment.succeeded',
  failed: 'payment.failed',
  cancelled: 'payment.cancelled',
  expired: 'payment.expired',
};

/** The state machine always acts on the committed row. */
export async function reload(q: Reader, id: string): Promise<PaymentRow> {
  const p = await getPayment(q, id);
  if (!p) throw new Error(`cannot reload payment "${id}": it does not exist`);
  return p;
}

function refuse(p: PaymentRow, action: string, extra = ''): never {
  throw invalidState(`Cannot ${action} payment "${p.id}": its status is ${p.status}${extra}`);
}

/**
 * The one place a payment's status changes, with payment.status_changed in the same transaction. The write names
 * the status it moves from, so a transaction that read the row before another moved it writes nothing and gets
 * 409: no transition sends its webhook twice. `patch` may hold columns of `p` not written yet (its method, chosen
 * in this transaction): they go with the status.
 */
async function move(core: PaymentsCore, tx: Tx, p: PaymentRow, to: PaymentStatus, action: string, at: number, patch: Partial<PaymentRow> = {}, unwritten?: InsertParams): Promise<PaymentRow> {
  if (!ALLOWED[p.status].includes(to)) refuse(p, action);
  let next: PaymentRow;
  let write: Promise<RunResult> | undefined;
  if (unwritten) {
    // Created in this transaction and not written yet: one INSERT of the row as the move leaves it.
    if (to !== 'processing' || patch.processing_until == null) throw new Error(`cannot write payment "${p.id}" as ${to} at its creation`);
    next = await insertPayment(tx, unwritten, undefined, { status: to, processing_until: patch.processing_until });
  } else {
    // As read (and checked, and found unchanged by the write) plus the columns written: no read needed.
    next = { ...p, ...patch, status: to };
    const values: unknown[] = [to];
    let sql = 'UPDATE payments SET status = ?';
    for (const col in patch) {
      sql += `, ${col} = ?`;
      values.push((patch as Record<string, unknown>)[col]);
    }
    write = tx.run(`${sql} WHERE id = ? AND status = ?`, ...values, p.id, p.status);
  }
  const event = WEBHOOK[to];
  // Side by side (one round trip on PostgreSQL): the status write and the shop's name for the webhook's view (a
  // payment leaving pending or processing, as every move with a webhook does, never succeeded: it has no refunds).
  const [written, shop] = await Promise.all([write, event ? tx.get<{ name: string }>(SHOP_NAME_SQL, next.shop_id) : undefined]);
  if (written && written.changes !== 1) refuse((await getPayment(tx, p.id)) ?? p, action);
  // The money moves, side by side with the event, before anything reacts (a card binding's verification refund
  // needs the credit).
  await Promise.all([
    to === 'succeeded' ? post(tx, { merchantId: next.merchant_id, shopId: next.shop_id, mode: next.mode }, 'payment_succeeded', next.id, next.amount, at, next.seq) : undefined,
    core.events.append(tx, {
      merchantId: next.merchant_id,
      shopId: next.shop_id,
      mode: next.mode,
      kind: 'payment.status_changed',
      payload: { id: next.id, status: to },
      at,
      paymentId: next.id,
      webhook: event ? { event, data: buildPaymentView(next, shop?.name ?? '', []), url: next.webhook_url || null } : undefined,
    }),
  ]);
  // Tokens and subscriptions react here (typed hooks, in the order added; payments knows none of them).
  for (const h of core.paymentHooks.moved) if (h.kinds.has(next.kind) && h.statuses.has(next.status)) await h.fn(tx, next, p.status, at);
  return next;
}

/**
 * pending → pending with a concrete method; re-choosing is allowed while the payment was created as `any`. `at`:
 * the clock as the caller read it in this transaction. `write` false leaves the column to the session's move
 * (openSessionTx's `patch`), which writes it with the status.
 */
export async function chooseMethodTx(core: Pick<Core, 'clocks' | 'events'>, tx: Tx, p: PaymentRow, method: ConcreteMethod, at?: number, write = true): Promise<PaymentRow> {
  if (p.status !== 'pending') refuse(p, `choose method ${method} for`);
  if (p.method === method) return p;
  if (p.method_fixed) refuse(p, `choose method ${method} for`, ` and its method ${p.method} was fixed at creation`);
  if (write) await updatePayment(tx, p.id, { method });
  // Not a status change: no webhook, but the stream learns of it.
  await core.events.append(tx, {
    merchantId: p.merchant_id,
    shopId: p.shop_id,
    mode: p.mode,
    kind: 'payment.method_chosen',
    payload: { id: p.id, method },
    at: at ?? (await core.clocks.now(tx, p.shop_id, p.mode)),
    paymentId: p.id,
  });
  return { ...p, method };
}

export interface SessionOptions {
  /** Default the service. */
  by?: Opener;
  tokenId?: string;
  /** Created in this transaction and not written yet (createPaymentTx, saved method); `p` is the pending row it would be. */
  unwritten?: InsertParams;
  /** When the caller has it already. */
  bank?: BankPort;
  /** The clock, when the caller read it in this transaction. */
  at?: number;
  /** Columns of `p` changed in this transaction and not written yet (chooseMethodTx's method). */
  patch?: Partial<PaymentRow>;
}

/** pending (method chosen) → processing; the bank is told in the same transaction. Idempotent when processing. */
export async function openSessionTx(core: PaymentsCore, tx: Tx, p: PaymentRow, opts: SessionOptions = {}): Promise<PaymentRow> {
  if (p.status === 'processing') return p;
  if (p.status !== 'pending') refuse(p, 'open a bank session for');
  if (p.method === 'any') refuse(p, 'open a bank session for', ' and no method is chosen yet');
  const now = opts.at ?? (await core.clocks.now(tx, p.shop_id, p.mode));
  const until = now + SESSION_TTL_MS[p.method];
  const [next, , bank] = await Promise.all([
    move(core, tx, p, 'processing', 'open a bank session for', now, { ...opts.patch, processing_until: until }, opts.unwritten),
    core.scheduler.ensureDueBy(tx, { kind: SESSION_SWEEP_JOB, subjectId: `${p.shop_id}/${p.mode}`, shopId: p.shop_id, mode: p.mode, dueAt: until }),
    opts.bank ?? core.banks.for(tx, p.shop_id, p.mode),
  ]);
  const req = { payment: next, by: opts.by ?? 'service' };
  if (opts.tokenId) await bank.chargeSaved(tx, { ...req, tokenId: opts.tokenId });
  else await bank.openSession(tx, req);
  return next;
}

/** processing → succeeded or failed, on the bank's final answer. */
async function resolveTx(core: PaymentsCore, tx: Tx, p: PaymentRow, a: Extract<PaymentAnswer, { outcome: 'succeeded' | 'refused' }>): Promise<PaymentRow> {
  const ok = a.outcome === 'succeeded';
  const action = ok ? 'confirm' : 'fail';
  if (p.status !== 'processing') refuse(p, action);
  const now = await core.clocks.now(tx, p.shop_id, p.mode);
  const patch: Partial<PaymentRow> = { finalized_at: now };
  if (ok && a.rrn) patch.rrn = a.rrn;
  if (a.bankName) patch.bank_name = a.bankName;
  if (a.card) {
    patch.card_brand = a.card.brand.slice(0, 32);
    patch.card_mask = a.card.mask.slice(0, 32);
    patch.card_holder = a.card.holder.slice(0, 128);
  }
  if (ok && a.phoneMask) patch.phone_mask = a.phoneMask;
  if (ok && a.payerBank) patch.payer_bank = a.payerBank;
  if (ok) {
    patch.captured_at = now;
  } else {
    const meta = metadataOf(p);
    meta.failure_code = a.failureCode || 'do_not_honor';
    if (a.bankCode) meta.bank_failure_code = a.bankCode;
    patch.metadata = JSON.stringify(meta);
  }
  return move(core, tx, p, ok ? 'succeeded' : 'failed', action, now, patch);
}

/** pending → cancelled (merchant or buyer); the bank voids whatever it holds. */
export async function cancelTx(core: PaymentsCore, tx: Tx, p: PaymentRow): Promise<PaymentRow> {
  if (p.status !== 'pending') refuse(p, 'cancel', '; only pending payments can be cancelled');
  const now = await core.clocks.now(tx, p.shop_id, p.mode);
  const next = await move(core, tx, p, 'cancelled', 'cancel', now, { finalized_at: now });
  await (await core.banks.for(tx, p.shop_id, p.mode)).cancel(tx, next);
  return next;
}

/** processing → cancelled: the bank voided the session. */
export async function bankCancelTx(core: PaymentsCore, tx: Tx, p: PaymentRow): Promise<PaymentRow> {
  if (p.status !== 'processing') refuse(p, 'cancel at the bank');
  const now = await core.clocks.now(tx, p.shop_id, p.mode);
  return move(core, tx, p, 'cancelled', 'cancel at the bank', now, { finalized_at: now });
}

/** pending → expired (link_expired) or processing → expired (session_expired). */
export async function expireTx(core: PaymentsCore, tx: Tx, p: PaymentRow): Promise<PaymentRow> {
  const code = p.status === 'pending' ? 'link_expired' : p.status === 'processing' ? 'session_expired' : null;
  if (!code) refuse(p, 'expire');
  const meta = metadataOf(p);
  meta.failure_code = code;
  const now = await core.clocks.now(tx, p.shop_id, p.mode);
  return move(core, tx, p, 'expired', 'expire', now, { finalized_at: now, metadata: JSON.stringify(meta) });
}

/** Add a succeeded refund to amount_refunded; succeeded → refunded when refunds reach the amount. */
export async function applyRefundTx(core: PaymentsCore, tx: Tx, p: PaymentRow, amount: number): Promise<PaymentRow> {
  const total = p.amount_refunded + amount;
  if (total > p.amount) throw new Error(`cannot apply refund of ${amount} to payment "${p.id}": ${total} exceeds amount ${p.amount}`);
  await updatePayment(tx, p.id, { amount_refunded: total });
  const next: PaymentRow = { ...p, amount_refunded: total };
  if (total !== p.amount || p.status !== 'succeeded') return next;
  return move(core, tx, next, 'refunded', 'refund', await core.clocks.now(tx, p.shop_id, p.mode));
}

/**
 * Expire a shop and mode's pending payments whose links ran out: one job per shop and mode (subject `<shop id>/<mode>`),
 * due at the earliest expires_at, expiring all due and scheduling the next. A create writes no job (it may move the sweep
 * earlier with Scheduler.ensureDueBy); a payment leaving `pending` drops out of the partial index payments_pending_expiry.
 */
export const LINK_SWEEP_JOB = 'payment.link_sweep';

/** The same for processing payments whose bank session ended (processing_until, index `payments_session_end`). */
export const SESSION_SWEEP_JOB = 'payment.session_sweep';

/** The next run, due at once, takes the rest. */
export const SWEEP_BATCH = 200;

export function checkTiming(core: Pick<Core, 'clocks' | 'scheduler' | 'config'>): CheckTiming {
  return { clocks: core.clocks, scheduler: core.scheduler, syncAfterSeconds: core.config.acquirerSyncAfterSeconds };
}

/** Its end less the method's session lifetime: the bank knows the payment since then, not since its creation. */
function sessionStart(p: PaymentRow): number {
  const ttl = SESSION_TTL_MS[p.method as ConcreteMethod];
  return p.processing_until !== null && ttl !== undefined ? Math.max(p.created_at, p.processing_until - ttl) : p.created_at;
}

/** `payment`: its id, or its row as just read in this transaction; `amount`, when the bank states it, must match. */
export async function paymentAnswered(core: PaymentsCore, tx: Tx, payment: string | PaymentRow, a: PaymentAnswer, amount?: number): Promise<Applied> {
  const p = typeof payment === 'string' ? await getPayment(tx, payment) : payment;
  if (!p) return 'ignored';
  if (p.status !== 'processing') {
    // Money taken for a payment kopek closed without it never moves it back, but the operator must see it.
    if (a.outcome === 'succeeded' && (p.status === 'expired' || p.status === 'failed' || p.status === 'cancelled')) {
      await recordMismatch(core.clocks, tx, { shopId: p.shop_id, subjectId: p.id, expected: p.amount, told: amount ?? p.amount, outcome: `succeeded after ${p.status}` });
    }
    return 'ignored';
  }
  if (amount !== undefined && amount !== p.amount) {
    await recordMismatch(core.clocks, tx, { shopId: p.shop_id, subjectId: p.id, expected: p.amount, told: amount, outcome: a.outcome });
    return 'amount_mismatch';
  }
  let moved: Promise<PaymentRow>;
  switch (a.outcome) {
    case 'unknown':
      await scheduleCheck(checkTiming(core), tx, 'payment', { id: p.id, shopId: p.shop_id, mode: p.mode, since: sessionStart(p) });
      return 'checking';
    case 'succeeded':
    case 'refused':
      moved = resolveTx(core, tx, p, a);
      break;
    case 'expired':
      moved = expireTx(core, tx, p);
      break;
    case 'cancelled':
      moved = bankCancelTx(core, tx, p);
      break;
  }
  // The check a doubt scheduled is no longer needed; independent of the move.
  await Promise.all([moved, core.scheduler.cancel(tx, CHECK_JOBS.payment, p.id)]);
  return 'applied';
}

/** Only the shop's own live payments (a notification never reaches another shop's data, nor test mode). */
export async function notifiedPaymentAnswered(core: PaymentsCore, tx: Tx, shopId: string, paymentId: string, a: PaymentAnswer, amount?: number): Promise<Applied> {
  const p = await getPayment(tx, paymentId);
  if (!p || p.shop_id !== shopId || p.mode !== 'live') return 'ignored';
  return paymentAnswered(core, tx, p, a, amount);
}

export async function runPaymentCheck(core: Pick<Core, 'banks'>, tx: Tx, job: Job): Promise<void> {
  const p = await getPayment(tx, job.subject_id);
  if (p && p.status === 'processing') await (await core.banks.for(tx, p.shop_id, p.mode)).checkStatus(tx, { kind: 'payment', payment: p });
}

import type { Core } from '../core/core';
import type { BankDirectory } from '../bank-port/directory';
import type { PayoutRequest } from '../bank-port/port';
import type { PayoutMethod } from '../bank-port/payout';
import type { Reader, Tx } from '../../platform/storage/store';
import { ApiError } from '../../platform/http/errors';
import { post, shopAvailable, type Book } from '../ledger/ledger';
import { sbpBank } from '../sbp/directory';
import { uuid } from '../../platform/util/ids';
import { iso, isoOrNull } from '../../platform/util/time';
import type { PayoutInput } from './fields';
import { finishPayoutRow, getPayout, insertPayout, type PayoutRow } from './store';

/** A subset of the payment codes, plus the payout ones. */
export const PAYOUT_FAILURE_CODES = ['do_not_honor', 'recipient_not_in_sbp', 'bank_unknown', 'invalid_card', 'card_expired', 'limit_exceeded', 'processing_error'] as const;

/** The key's merchant, shop and mode: the book a payout draws on. */
export type Payer = Book;

export type PayoutCore = Pick<Core, 'banks' | 'clocks' | 'events'>;

/** 403 payouts_not_configured when the payer's payout bank sends none; 403 payout_method_not_supported for live payouts_account. */
export async function requirePayoutBank(banks: BankDirectory, q: Reader, payer: Payer, what: string, method?: PayoutMethod): Promise<void> {
  if (!(await banks.forPayout(q, payer.shopId, payer.mode)).sendsPayouts) {
    throw new ApiError(403, 'payouts_not_configured', `Cannot send ${what}: the shop has no payout provider (kopek shop payouts) and its acquirer sends no payouts`);
  }
  if (payer.mode === 'live' && method === 'payouts_account') {
    throw new ApiError(403, 'payout_method_not_supported', `Cannot send ${what}: live payouts_account payouts have no provider; send payouts_sbp or payouts_card`);
  }
}

/**
 * The shop's `available` must cover it (422) and its bank may refuse it (502), both before the first write, so a
 * batch fails one item and carries on. Group commit serialises these bodies: check and reserve cannot interleave.
 */
export async function createPayoutTx(core: PayoutCore, tx: Tx, payer: Payer, input: PayoutInput): Promise<PayoutRow> {
  await requirePayoutBank(core.banks, tx, payer, `payout of ${input.amount}`, input.method);
  const available = await shopAvailable(tx, payer.shopId, payer.mode);
  if (input.amount > available) {
    throw new ApiError(422, 'insufficient_funds', `Cannot create payout of ${input.amount}: it exceeds the shop's available balance ${available}`, 'amount');
  }
  const now = await core.clocks.now(tx, payer.shopId, payer.mode);
  const id = uuid();
  const bank = await core.banks.forPayout(tx, payer.shopId, payer.mode);
  const start = await bank.payout(tx, { id, shopId: payer.shopId, mode: payer.mode, amount: input.amount, method: input.method, ...destination(input), at: now });
  if (!start.accepted) throw new ApiError(502, 'router_error', `Cannot send payout of ${input.amount}: the payout router refused it`);
  const row: Omit<PayoutRow, 'seq'> = {
    id, merchant_id: payer.merchantId, shop_id: payer.shopId, mode: payer.mode, amount: input.amount,
    currency: 'RUB', method: input.method, status: 'pending', recipient: JSON.stringify(input.recipient),
    card_last4: input.cardPan ? input.cardPan.slice(-4) : null,
    bank_name: input.method === 'payouts_sbp' ? (sbpBank(input.recipient.bank_id)?.name ?? null) : null,
    bank_ref: start.bankRef, fail_reason: '', sim_outcome: start.plan?.outcome ?? null,
    sim_failure_code: start.plan?.failureCode ?? null, created_at: now, completed_at: null,
  };
  await insertPayout(tx, row);
  await post(tx, payer, 'payout_reserved', row.id, row.amount, now);
  const payload = { id: row.id, amount: row.amount, method: row.method, status: row.status };
  await core.events.append(tx, { ...payer, kind: 'payout.created', payload, at: now, payoutId: row.id });
  const a = start.answer;
  const created = await reload(tx, row.id);
  if (!a || a.outcome === 'unknown') return created;
  return finishPayoutTx(core, tx, created,
    a.outcome === 'succeeded' ? 'succeeded' : 'failed', a.outcome === 'refused' ? a.failureCode : '');
}

/** From memory only: the card number. */
function destination(input: PayoutInput): Pick<PayoutRequest, 'bankId' | 'recipient' | 'description'> {
  if (input.method === 'payouts_sbp') {
    const { phone, bank_id: bankId } = input.recipient;
    return { bankId, recipient: { phone, bankId } };
  }
  if (input.method === 'payouts_card') return { recipient: { cardNumber: input.cardPan } };
  return { recipient: {} };
}

async function reload(tx: Tx, id: string): Promise<PayoutRow> {
  const p = await getPayout(tx, id);
  if (!p) throw new Error(`cannot reload payout "${id}": it does not exist`);
  return p;
}

/** The one place a payout reaches its final status: the row, the ledger and payout.status_changed with its webhook. */
export async function finishPayoutTx(core: Pick<Core, 'clocks' | 'events'>, tx: Tx, p: PayoutRow, status: 'succeeded' | 'failed', failReason: string): Promise<PayoutRow> {
  const at = await core.clocks.now(tx, p.shop_id, p.mode);
  if (!(await finishPayoutRow(tx, p.id, status, status === 'failed' ? failReason || 'do_not_honor' : '', at))) {
    throw new Error(`cannot finish payout "${p.id}": its status is no longer pending`);
  }
  const book: Payer = { merchantId: p.merchant_id, shopId: p.shop_id, mode: p.mode };
  await post(tx, book, status === 'succeeded' ? 'payout_settled' : 'payout_released', p.id, p.amount, at);
  const next = await reload(tx, p.id);
  const payload = { id: next.id, status: next.status, fail_reason: next.fail_reason };
  const webhook = { event: `payout.${status}`, data: payoutView(next) };
  await core.events.append(tx, { ...book, kind: 'payout.status_changed', payload, at, payoutId: p.id, webhook });
  return next;
}

/** As GET /v1/public/payouts/{id} returns it and webhooks carry it. */
export function payoutView(p: PayoutRow): Record<string, unknown> {
  const card = p.method === 'payouts_card';
  return {
    id: p.id, merchant_id: p.merchant_id, shop_id: p.shop_id, amount: p.amount, currency: p.currency,
    method: p.method, status: p.status,
    // The spec's echo: an empty object for card payouts, whose only recipient detail is the mask.
    recipient: card ? {} : JSON.parse(p.recipient),
    ...(card ? { recipient_card_mask: p.card_last4 ?? '' } : {}),
    bank_ref: p.bank_ref, fail_reason: p.fail_reason,
    created_at: iso(p.created_at), completed_at: isoOrNull(p.completed_at),
    // Endpoints get test and live events alike; a payment tells its mode in metadata.mode, a payout here.
    mode: p.mode,
  };
}

/** The payout, mode, bank (test: the SBP bank's name; live: `provider`), bank_ref, failure_reason and the simulator block. */
export function creationBody(baseUrl: string, p: PayoutRow, provider?: string): Record<string, unknown> {
  const body: Record<string, unknown> = { payout: payoutView(p), mode: p.mode };
  if (p.mode === 'live' && provider) body.bank = provider;
  else if (p.bank_name) body.bank = p.bank_name;
  body.bank_ref = p.bank_ref;
  if (p.status === 'failed') body.failure_reason = p.fail_reason;
  if (p.mode === 'test') {
    const actions = {
      simulate: `${baseUrl}/v1/test/payouts/${p.id}/simulate`,
      status: `${baseUrl}/v1/public/payouts/${p.id}`,
    };
    body.simulator = { outcome: p.sim_outcome, failure_code: p.sim_failure_code ?? '', actions };
  }
  return body;
}

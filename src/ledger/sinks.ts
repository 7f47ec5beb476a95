import type { App } from '../app-types';
import type { Tx } from '../db/tx';
import type { EventRow } from '../events/emit';
import { post, postedAmount, type Book } from './ledger';

/**
 * Payments and refunds reach the ledger through their events, inside the transaction that appends them,
 * so a credit or reserve commits with the state change or not at all. Replays post nothing twice.
 */
export function ledgerSink(tx: Tx, row: EventRow): void {
  if (row.kind !== 'payment.status_changed' && row.kind !== 'refund.created' && row.kind !== 'refund.status_changed') return;
  const payload = JSON.parse(row.payload) as Record<string, unknown>;
  const book: Book = { merchantId: row.merchant_id, shopId: row.shop_id, mode: row.mode };
  const id = String(payload.id);
  if (row.kind === 'payment.status_changed') {
    if (payload.status !== 'succeeded') return;
    // The SSE payload has no amount; the payment row, written in this same transaction, has.
    const p = tx.stmt('SELECT amount FROM payments WHERE id = ?').get(id) as { amount: number } | undefined;
    if (!p) throw new Error(`cannot credit payment "${id}": no such payment in this transaction`);
    post(tx, book, 'payment_succeeded', id, p.amount, row.at);
    return;
  }
  const amount = Number(payload.amount);
  if (row.kind === 'refund.created') {
    if (payload.status === 'failed') return;
    post(tx, book, 'refund_reserved', id, amount, row.at);
    if (payload.status === 'succeeded') post(tx, book, 'refund_settled', id, amount, row.at);
    return;
  }
  if (payload.status === 'succeeded') {
    // A refund settled without its reserve having been seen is reserved first, so reserves never go negative.
    const reserved = postedAmount(tx, 'refund_reserved', id);
    if (reserved === undefined) post(tx, book, 'refund_reserved', id, amount, row.at);
    post(tx, book, 'refund_settled', id, reserved ?? amount, row.at);
  } else if (payload.status === 'failed') {
    const reserved = postedAmount(tx, 'refund_reserved', id);
    if (reserved !== undefined) post(tx, book, 'refund_released', id, reserved, row.at);
  }
}

/** Hook the ledger into the event log (one call from registerDomains). */
export function registerLedger(app: App): void {
  app.events.addSink(ledgerSink);
}

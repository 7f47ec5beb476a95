import type { App } from '../app-types';
import type { Tx } from '../db/tx';
import { ApiError, badRequest } from '../http/errors';
import { bodyObject } from '../http/validate';
import { duplicateKey, methodField, payoutFields, type PayoutInput, type PayoutMethod } from './fields';
import { createPayoutTx, type Payer } from './payouts';

/** Most items one batch may carry (decisions.md). */
export const BATCH_MAX_ITEMS = 1000;

/** One line of the batch response. */
export interface BatchResult {
  index: number;
  status: 'created' | 'failed' | 'duplicate';
  payout_id?: string;
  method: PayoutMethod;
  /** The item's amount, or null when the item has no valid integer amount. */
  amount: number | null;
  code?: string;
  error?: string;
}

/** A batch after the checks that need no transaction: the whole-batch rules, then each item's fields. */
export interface ParsedBatch {
  method: PayoutMethod;
  /** Per item: its validated input, or the result it already has (failed or duplicate). */
  items: Array<{ input: PayoutInput } | { result: BatchResult }>;
}

/**
 * Whole-batch rules, each a 400 of the batch: the body is an object with only `method` and `items`,
 * a valid method, and items an array of 1..1000. Anything wrong inside an item fails only that item.
 */
export function parseBatch(body: unknown): ParsedBatch {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw badRequest('Request body must be a JSON object {method, items}');
  }
  const obj = bodyObject(body, ['method', 'items']);
  const method = methodField(obj);
  const items = obj.items;
  if (!Array.isArray(items)) throw badRequest('Field "items" must be an array of payouts', 'items');
  if (items.length === 0) throw badRequest('Field "items" must hold at least one payout', 'items');
  if (items.length > BATCH_MAX_ITEMS) {
    throw badRequest(`Field "items" must hold at most ${BATCH_MAX_ITEMS} payouts, got ${items.length}`, 'items');
  }
  const seen = new Map<string, number>();
  const parsed = items.map((item: unknown, index): ParsedBatch['items'][number] => {
    const amount = isObject(item) && Number.isSafeInteger(item.amount) ? (item.amount as number) : null;
    let input: PayoutInput;
    try {
      if (!isObject(item)) throw badRequest(`Item ${index} must be a JSON object`);
      input = payoutFields(item, method, false);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      return { result: { index, status: 'failed', method, amount, code: err.code, error: err.message } };
    }
    const key = duplicateKey(input);
    const first = seen.get(key);
    if (first !== undefined) {
      return { result: { index, status: 'duplicate', method, amount, code: 'duplicate', error: `Item ${index} repeats item ${first}: same recipient and amount` } };
    }
    seen.set(key, index);
    return { input };
  });
  return { method, items: parsed };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * Create the batch's valid items in order, in the caller's transaction. Each item reserves before the
 * next is checked, so the batch never overdraws; an item refused (insufficient funds, router) fails alone.
 */
export function createBatchTx(app: App, tx: Tx, payer: Payer, batch: ParsedBatch): Record<string, unknown> {
  const results: BatchResult[] = [];
  batch.items.forEach((item, index) => {
    if ('result' in item) {
      results.push(item.result);
      return;
    }
    const { input } = item;
    try {
      const p = createPayoutTx(app, tx, payer, input);
      results.push({ index, status: 'created', payout_id: p.id, method: batch.method, amount: input.amount });
    } catch (err) {
      // createPayoutTx refuses (422, 502) before it writes anything, so a refused item leaves nothing behind.
      if (!(err instanceof ApiError) || (err.status >= 500 && err.code !== 'router_error')) throw err;
      results.push({ index, status: 'failed', method: batch.method, amount: input.amount, code: err.code, error: err.message });
    }
  });
  const created = results.filter((r) => r.status === 'created').length;
  return { mode: payer.mode, created, failed: results.length - created, total: results.length, results };
}

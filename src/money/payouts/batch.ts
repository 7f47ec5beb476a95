import type { Tx } from '../../platform/storage/store';
import { ApiError, badRequest } from '../../platform/http/errors';
import { asObject, duplicateKey, payoutFields, type PayoutInput, type PayoutMethod } from './fields';
import { createPayoutTx, requirePayoutBank, type Payer, type PayoutCore } from './payouts';

/** Most items one batch may carry (decisions.md). */
export const BATCH_MAX_ITEMS = 1000;

interface BatchResult {
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
interface ParsedBatch {
  method: PayoutMethod;
  /** Per item: its validated input, or the result it already has (failed or duplicate). */
  items: Array<{ input: PayoutInput } | { result: BatchResult }>;
}

/** `items` must be an array of 1..1000 (400, the method checked already); anything wrong inside an item fails only it. */
export function parseBatch(obj: Record<string, unknown>, method: PayoutMethod): ParsedBatch {
  const items = obj.items;
  if (!Array.isArray(items)) throw badRequest('Field "items" must be an array of payouts', 'items');
  if (items.length === 0) throw badRequest('Field "items" must hold at least one payout', 'items');
  if (items.length > BATCH_MAX_ITEMS) throw badRequest(`Field "items" must hold at most ${BATCH_MAX_ITEMS} payouts, got ${items.length}`, 'items');
  const seen = new Map<string, number>();
  const parsed = items.map((item: unknown, index): ParsedBatch['items'][number] => {
    const amount = Number.isSafeInteger((item as { amount?: unknown } | null)?.amount) ? (item as { amount: number }).amount : null;
    let input: PayoutInput;
    try {
      input = payoutFields(asObject(item, `Item ${index}`), method, false);
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

/** Each valid item in order reserves before the next is checked, so the batch never overdraws; one refused fails alone. */
export async function createBatchTx(core: PayoutCore, tx: Tx, payer: Payer, batch: ParsedBatch): Promise<Record<string, unknown>> {
  await requirePayoutBank(core.banks, tx, payer, 'a payout batch', batch.method);
  const results: BatchResult[] = [];
  for (const [index, item] of batch.items.entries()) {
    if ('result' in item) {
      results.push(item.result);
      continue;
    }
    const { input } = item;
    try {
      const p = await createPayoutTx(core, tx, payer, input);
      results.push({ index, status: 'created', payout_id: p.id, method: batch.method, amount: input.amount });
    } catch (err) {
      // createPayoutTx refuses (422, 502) before it writes anything, so a refused item leaves nothing behind.
      if (!(err instanceof ApiError) || (err.status >= 500 && err.code !== 'router_error')) throw err;
      results.push({ index, status: 'failed', method: batch.method, amount: input.amount, code: err.code, error: err.message });
    }
  }
  const created = results.filter((r) => r.status === 'created').length;
  return { mode: payer.mode, created, failed: results.length - created, total: results.length, results };
}

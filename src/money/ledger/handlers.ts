import type { Reader } from '../../platform/storage/store';
import type { Ctx, Reply } from '../../platform/http/types';
import { merchantBalances } from './store';

/**
 * GET /v1/public/balance: the key's merchant's money in the key's mode, over all its shops. Each shop
 * also shows its own `available`, because a payout draws on the paying shop's available alone.
 */
export async function getBalance(ctx: Ctx<{ readonly store: Reader }>): Promise<Reply> {
  const a = ctx.auth!;
  const shops = await merchantBalances(ctx.app.store, a.merchantId, a.mode);
  let balance = 0;
  let available = 0;
  for (const s of shops) {
    balance += s.balance;
    available += s.available;
  }
  return { body: { balance, available, currency: 'RUB', shops } };
}

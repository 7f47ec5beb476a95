import type { Ctx } from '../http/types';
import { notFound } from '../http/errors';
import { isUuid } from '../util/ids';
import type { Shop } from './store';
import type { PaymentRow } from '../payments/types';
import { findPayment } from './domain';
import type { Actor } from './audit';

/** The signed-in user's merchant's shops, oldest first. */
export function merchantShops(ctx: Ctx): Shop[] {
  return ctx.app.store.stmt('SELECT * FROM shops WHERE merchant_id = ? ORDER BY created_at, id').all(ctx.cabinet!.merchantId) as Shop[];
}

/** A shop of the user's merchant, or 404: another merchant's shop looks the same as none. */
export function ownShop(ctx: Ctx, id: string | undefined | null): Shop {
  const shop = id && isUuid(id) ? (ctx.app.store.stmt('SELECT * FROM shops WHERE id = ?').get(id) as Shop | undefined) : undefined;
  if (!shop || shop.merchant_id !== ctx.cabinet!.merchantId) throw notFound(`Cannot find shop "${String(id ?? '').slice(0, 64)}"`);
  return shop;
}

/** The shop a page is about: `?shop=` when given (and the user's), else the merchant's first shop. */
export function chosenShop(ctx: Ctx): Shop {
  const id = ctx.query.get('shop');
  if (id) return ownShop(ctx, id);
  const first = merchantShops(ctx)[0];
  if (!first) throw notFound('Cannot find a shop of this merchant: create one first');
  return first;
}

/** A payment of the user's merchant, or 404 (another merchant's payment is not reachable by URL). */
export function ownPayment(ctx: Ctx, id: string): PaymentRow {
  const p = isUuid(id) ? findPayment(ctx.app, id) : undefined;
  if (!p || p.merchant_id !== ctx.cabinet!.merchantId) throw notFound(`Cannot find payment "${id.slice(0, 64)}"`);
  return p;
}

/** The signed-in user as the audit log names them. */
export function actor(ctx: Ctx): Actor & { userId: string } {
  const c = ctx.cabinet!;
  return { merchantId: c.merchantId, userId: c.userId, email: c.email, ip: ctx.ip };
}

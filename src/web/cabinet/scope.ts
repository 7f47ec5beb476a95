import type { Ctx } from '../../platform/http/types';
import type { Core } from '../../money/core/core';
import { notFound } from '../../platform/http/errors';
import { isUuid } from '../../platform/util/ids';
import type { Shop } from '../../money/shops/store';
import type { PaymentRow } from '../../money/bank-port/payment';
import { findPayment } from './domain';
import type { Actor } from './audit';

/** The signed-in user's merchant's shops, oldest first. */
export function merchantShops(ctx: Ctx<Pick<Core, 'store'>>): Promise<Shop[]> {
  return ctx.app.store.all<Shop>('SELECT * FROM shops WHERE merchant_id = ? ORDER BY created_at, id', ctx.cabinet!.merchantId);
}

/** A shop of the user's merchant, or 404: another merchant's shop looks the same as none. */
export async function ownShop(ctx: Ctx<Pick<Core, 'store'>>, id: string | undefined | null): Promise<Shop> {
  const shop = id && isUuid(id) ? await ctx.app.store.get<Shop>('SELECT * FROM shops WHERE id = ?', id) : undefined;
  if (!shop || shop.merchant_id !== ctx.cabinet!.merchantId) throw notFound(`Cannot find shop "${String(id ?? '').slice(0, 64)}"`);
  return shop;
}

/**
 * The shop of an object the user named by its own id (a key, a webhook endpoint, an event), else the 404 of
 * that object (`missing`): another merchant's object answers exactly as an unknown id does, naming no shop.
 */
export async function shopOfOwn(ctx: Ctx<Pick<Core, 'store'>>, shopId: string | undefined, missing: string): Promise<Shop> {
  const shop = shopId ? await ctx.app.store.get<Shop>('SELECT * FROM shops WHERE id = ?', shopId) : undefined;
  if (!shop || shop.merchant_id !== ctx.cabinet!.merchantId) throw notFound(missing);
  return shop;
}

/** The shop a page is about: `?shop=` when given (and the user's), else the merchant's first shop. */
export async function chosenShop(ctx: Ctx<Pick<Core, 'store'>>): Promise<Shop> {
  const id = ctx.query.get('shop');
  if (id) return ownShop(ctx, id);
  const first = (await merchantShops(ctx))[0];
  if (!first) throw notFound('Cannot find a shop of this merchant: create one first');
  return first;
}

/** A payment of the user's merchant, or 404 (another merchant's payment is not reachable by URL). */
export async function ownPayment(ctx: Ctx<Pick<Core, 'store'>>, id: string): Promise<PaymentRow> {
  const p = isUuid(id) ? await findPayment(ctx.app.store, id) : undefined;
  if (!p || p.merchant_id !== ctx.cabinet!.merchantId) throw notFound(`Cannot find payment "${id.slice(0, 64)}"`);
  return p;
}

/** The signed-in user as the audit log names them. */
export function actor(ctx: Ctx): Actor & { userId: string } {
  const c = ctx.cabinet!;
  return { merchantId: c.merchantId, userId: c.userId, email: c.email, ip: ctx.ip };
}

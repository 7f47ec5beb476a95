import type { Store, Tx } from '../db/store';

/** A shop's live acquirer: the provider and its settings (secrets inside are encrypted by the provider). */
export interface ShopAcquirer {
  shop_id: string;
  provider: string;
  settings: string;
  updated_at: number;
}

/** The acquirer a shop's live operations go to, if one is set. */
export function shopAcquirer(store: Pick<Store, 'stmt'>, shopId: string): ShopAcquirer | undefined {
  return store.stmt('SELECT shop_id, provider, settings, updated_at FROM shop_acquirers WHERE shop_id = ?').get(shopId) as
    | ShopAcquirer
    | undefined;
}

/** Set (or replace) a shop's acquirer. */
export function putShopAcquirer(tx: Tx, a: ShopAcquirer): void {
  tx
    .stmt(
      `INSERT INTO shop_acquirers (shop_id, provider, settings, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (shop_id) DO UPDATE SET provider = excluded.provider, settings = excluded.settings, updated_at = excluded.updated_at`,
    )
    .run(a.shop_id, a.provider, a.settings, a.updated_at);
}

/** Remove a shop's acquirer; true when there was one. */
export function removeShopAcquirer(tx: Tx, shopId: string): boolean {
  return tx.stmt('DELETE FROM shop_acquirers WHERE shop_id = ?').run(shopId).changes > 0;
}

import type { Reader, Tx } from '../db/store';

/** A shop's live acquirer: the provider and its settings (secrets inside are encrypted by the provider). */
export interface ShopAcquirer {
  shop_id: string;
  provider: string;
  settings: string;
  updated_at: number;
}

/** The acquirer a shop's live operations go to, if one is set (inside a transaction, pass its `tx`). */
export async function shopAcquirer(q: Reader, shopId: string): Promise<ShopAcquirer | undefined> {
  return q.get<ShopAcquirer>('SELECT shop_id, provider, settings, updated_at FROM shop_acquirers WHERE shop_id = ?', shopId);
}

/** Set (or replace) a shop's acquirer. */
export async function putShopAcquirer(tx: Tx, a: ShopAcquirer): Promise<void> {
  await tx.run(
    `INSERT INTO shop_acquirers (shop_id, provider, settings, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (shop_id) DO UPDATE SET provider = excluded.provider, settings = excluded.settings, updated_at = excluded.updated_at`,
    a.shop_id,
    a.provider,
    a.settings,
    a.updated_at,
  );
}

/** Remove a shop's acquirer; true when there was one. */
export async function removeShopAcquirer(tx: Tx, shopId: string): Promise<boolean> {
  return (await tx.run('DELETE FROM shop_acquirers WHERE shop_id = ?', shopId)).changes > 0;
}

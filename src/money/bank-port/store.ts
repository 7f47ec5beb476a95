import type { Reader, Tx } from '../../platform/storage/store';

/** A shop's live acquirer: the provider and its settings (secrets inside are encrypted by the provider). */
export interface ShopAcquirer {
  shop_id: string;
  provider: string;
  settings: string;
  updated_at: number;
}

/** The acquirer a shop's live operations go to, if one is set. */
export async function shopAcquirer(q: Reader, shopId: string): Promise<ShopAcquirer | undefined> {
  return q.get<ShopAcquirer>('SELECT shop_id, provider, settings, updated_at FROM shop_acquirers WHERE shop_id = ?', shopId);
}

export async function putShopAcquirer(tx: Tx, a: ShopAcquirer): Promise<void> {
  await tx.run(
    `INSERT INTO shop_acquirers (shop_id, provider, settings, updated_at) VALUES (@shop_id, @provider, @settings, @updated_at)
       ON CONFLICT (shop_id) DO UPDATE SET provider = excluded.provider, settings = excluded.settings, updated_at = excluded.updated_at`,
    a,
  );
}

export async function removeShopAcquirer(tx: Tx, shopId: string): Promise<boolean> {
  return (await tx.run('DELETE FROM shop_acquirers WHERE shop_id = ?', shopId)).changes > 0;
}

/** A shop's live payout provider (YooKassa Payouts): `secret` sealed under the master key, never in clear. */
export interface ShopPayoutProvider {
  shop_id: string;
  provider: string;
  agent_id: string;
  /** Sealed (secrets/at-rest.ts seal) in context `shop_payout_providers.secret:<shop_id>`. */
  secret: string;
  api_url: string;
}

/** The payout provider a shop's live payouts go to, if one is set. */
export async function shopPayoutProvider(q: Reader, shopId: string): Promise<ShopPayoutProvider | undefined> {
  return q.get<ShopPayoutProvider>('SELECT shop_id, provider, agent_id, secret, api_url FROM shop_payout_providers WHERE shop_id = ?', shopId);
}

/** `secret` sealed already. */
export async function putShopPayoutProvider(tx: Tx, p: ShopPayoutProvider, now: number): Promise<void> {
  await tx.run(
    `INSERT INTO shop_payout_providers (shop_id, provider, agent_id, secret, api_url, created_at, updated_at) VALUES (@shop_id, @provider, @agent_id, @secret, @api_url, @now, @now)
       ON CONFLICT (shop_id) DO UPDATE SET provider = excluded.provider, agent_id = excluded.agent_id, secret = excluded.secret,
         api_url = excluded.api_url, updated_at = excluded.updated_at`,
    { ...p, now },
  );
}

export async function removeShopPayoutProvider(tx: Tx, shopId: string): Promise<boolean> {
  return (await tx.run('DELETE FROM shop_payout_providers WHERE shop_id = ?', shopId)).changes > 0;
}

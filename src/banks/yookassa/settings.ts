import { unseal } from '../../platform/secrets/at-rest';
import type { ShopPayoutProvider } from '../../money/bank-port/store';

/** The provider name a shop's payout provider row carries, and the callback path names. */
export const YOOKASSA = 'yookassa';

/** The provider's published API addresses: the only ones the cabinet offers (others are the operator's). */
export const YOOKASSA_API_URLS: readonly string[] = ['https://api.yookassa.ru/v3'];

/** The sealing label of a shop's YooKassa secret key: a ciphertext moved to another shop does not open. */
export function secretLabel(shopId: string): string {
  return `shop_payout_providers.secret:${shopId}`;
}

/** A shop's payout gateway, its secret unsealed for one request, never stored or logged (`dbPath`: the database whose master key sealed it). */
export function gatewayOf(dbPath: string, row: ShopPayoutProvider): { agentId: string; secret: string; apiUrl: string } {
  return { agentId: row.agent_id, secret: unseal(dbPath, row.secret, secretLabel(row.shop_id)), apiUrl: row.api_url.replace(/\/+$/, '') };
}

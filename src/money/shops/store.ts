import type { Reader, Store } from '../../platform/storage/store';
import { uuid, secret, sha256Hex } from '../../platform/util/ids';
import { ALL_SCOPES, parseScopes } from '../../platform/auth/scopes';
import { compileAllowList } from '../../platform/auth/ip-allowlist';
import type { Mode } from '../../platform/clock';
import { seal, unseal } from '../../platform/secrets/at-rest';

export interface Merchant { id: string; name: string; live_enabled: number; created_at: number }

/** A shop row (secrets included; never print them except at creation or rotation). */
export interface Shop {
  id: string; merchant_id: string; name: string; scopes: string; ip_allowlist: string; signing_secret: string;
  require_signature: number; webhook_secret: string; test_clock_offset_ms: number; created_at: number;
}

/** Without the two secrets, so reading it needs no master key. */
export type ShopSettings = Omit<Shop, 'signing_secret' | 'webhook_secret'>;

interface ApiKey {
  id: string; shop_id: string; mode: Mode; key_prefix: string; scopes: string; created_at: number;
  revoked_at: number | null;
  /** Written at most once a minute (platform/auth/authenticate.ts). */
  last_used_at: number | null;
}

export async function createMerchant(store: Store, name: string, now: number): Promise<Merchant> {
  if (!name.trim()) throw new Error('cannot create merchant: the name must not be empty');
  const m: Merchant = { id: uuid(), name: name.trim(), live_enabled: 0, created_at: now };
  await store.tx((tx) => tx.run('INSERT INTO merchants (id, name, live_enabled, created_at) VALUES (?, ?, 0, ?)', m.id, m.name, now));
  return m;
}

export function getMerchant(q: Reader, id: string): Promise<Merchant | undefined> {
  return q.get<Merchant>('SELECT * FROM merchants WHERE id = ?', id);
}

/** With its signing and fallback webhook secrets; scopes default to all. */
export async function createShop(store: Store, merchantId: string, name: string, scopes: string | undefined, now: number): Promise<Shop> {
  if (!(await getMerchant(store, merchantId))) throw new Error(`cannot create shop: merchant "${merchantId}" not found`);
  if (!name.trim()) throw new Error('cannot create shop: the name must not be empty');
  const list = scopes === undefined ? [...ALL_SCOPES] : because('cannot create shop', () => parseScopes(scopes));
  const shop: Shop = {
    id: uuid(), merchant_id: merchantId, name: name.trim(), scopes: list.join(','), ip_allowlist: '',
    signing_secret: secret('thm_'), require_signature: 0, webhook_secret: secret('whs_'),
    test_clock_offset_ms: 0, created_at: now,
  };
  const signing = seal(store.path, shop.signing_secret, `shops.signing_secret:${shop.id}`);
  const webhook = seal(store.path, shop.webhook_secret, `shops.webhook_secret:${shop.id}`);
  const sql = `INSERT INTO shops (id, merchant_id, name, scopes, ip_allowlist, signing_secret, require_signature,
    webhook_secret, created_at) VALUES (?, ?, ?, ?, '', ?, 0, ?, ?)`;
  await store.tx((tx) => tx.run(sql, shop.id, merchantId, shop.name, shop.scopes, signing, webhook, now));
  return shop;
}

/** Its secrets come decrypted (stored sealed under the master key). */
export async function getShop(store: Store, id: string): Promise<Shop | undefined> {
  const shop = await store.get<Shop>('SELECT * FROM shops WHERE id = ?', id);
  if (!shop) return undefined;
  return {
    ...shop,
    signing_secret: unseal(store.path, shop.signing_secret, `shops.signing_secret:${shop.id}`),
    webhook_secret: unseal(store.path, shop.webhook_secret, `shops.webhook_secret:${shop.id}`),
  };
}

/** Secrets left out, so a command reading it runs without the master key (on PostgreSQL, KOPEK_MASTER_KEY unset). */
export function getShopSettings(q: Reader, id: string): Promise<ShopSettings | undefined> {
  return q.get<ShopSettings>('SELECT id, merchant_id, name, scopes, ip_allowlist, require_signature, test_clock_offset_ms, created_at FROM shops WHERE id = ?', id);
}

async function requireShop(store: Store, id: string, action: string): Promise<ShopSettings> {
  const shop = await getShopSettings(store, id);
  if (!shop) throw new Error(`${action}: shop "${id}" not found`);
  return shop;
}

/** A failure is rethrown with the failed action in front of its message. */
function because<T>(action: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw new Error(`${action}: ${(err as Error).message}`);
  }
}

/** `value` is worked out (and checked) once the shop is found. */
async function setShop<T>(store: Store, shopId: string, action: string, column: string, value: () => T, stored: (v: T) => unknown = (v) => v): Promise<T> {
  await requireShop(store, shopId, action);
  const v = because(action, value);
  const written = stored(v);
  await store.tx((tx) => tx.run(`UPDATE shops SET ${column} = ? WHERE id = ?`, written, shopId));
  return v;
}

export function setShopScopes(store: Store, shopId: string, scopes: string): Promise<string[]> {
  return setShop(store, shopId, `cannot set scopes of shop "${shopId}"`, 'scopes', () => parseScopes(scopes), (list) => list.join(','));
}

/** Validated; an empty list clears it. */
export function setIpAllowlist(store: Store, shopId: string, entries: string): Promise<string[]> {
  const list = (): string[] => {
    compileAllowList(entries);
    return entries.split(',').map((s) => s.trim()).filter(Boolean);
  };
  return setShop(store, shopId, `cannot set the IP allow-list of shop "${shopId}"`, 'ip_allowlist', list, (l) => l.join(','));
}

/** The new one is returned once. */
export function rotateSigningSecret(store: Store, shopId: string): Promise<string> {
  return setShop(store, shopId, 'cannot rotate the signing secret', 'signing_secret', () => secret('thm_'), (s) => seal(store.path, s, `shops.signing_secret:${shopId}`));
}

export async function setRequireSignature(store: Store, shopId: string, on: boolean): Promise<void> {
  await setShop(store, shopId, 'cannot set require-signature', 'require_signature', () => (on ? 1 : 0));
}

/** Stored in clear and shown by `key list`: `sk_test_` and four more. */
export const KEY_PREFIX_LENGTH = 12;

/** Returned once, only its hash stored; scopes default to the shop's. `fixed`: serve --demo-key's secret. */
export async function createKey(
  store: Store, shopId: string, mode: Mode, scopes: string | undefined, now: number, fixed?: string,
): Promise<{ key: ApiKey; secret: string }> {
  const shop = await requireShop(store, shopId, 'cannot create key');
  if (mode !== 'test' && mode !== 'live') throw new Error(`cannot create key: mode must be test or live, got "${mode}"`);
  const list = scopes === undefined ? shop.scopes.split(',').filter(Boolean) : because('cannot create key', () => parseScopes(scopes));
  const prefix = mode === 'test' ? 'sk_test_' : 'sk_live_';
  if (fixed !== undefined && !fixed.startsWith(prefix)) throw new Error(`cannot create key: a ${mode} key starts with ${prefix}`);
  const full = fixed ?? secret(prefix);
  const key: ApiKey = {
    id: uuid(), shop_id: shopId, mode, key_prefix: full.slice(0, KEY_PREFIX_LENGTH), scopes: list.join(','),
    created_at: now, revoked_at: null, last_used_at: null,
  };
  const sql = `INSERT INTO api_keys (id, shop_id, mode, key_hash, key_prefix, scopes, created_at)
    VALUES (?, ?, ?, ?, ?, ?, ?)`;
  await store.tx((tx) => tx.run(sql, key.id, shopId, mode, sha256Hex(full), key.key_prefix, key.scopes, now));
  return { key, secret: full };
}

/** Newest first, without secrets. */
export async function listKeys(store: Store, shopId: string): Promise<ApiKey[]> {
  await requireShop(store, shopId, 'cannot list keys');
  return store.all<ApiKey>(
    `SELECT k.id, k.shop_id, k.mode, k.key_prefix, k.scopes, k.created_at, k.revoked_at, u.last_used_at
       FROM api_keys k LEFT JOIN api_key_usage u ON u.key_id = k.id WHERE k.shop_id = ? ORDER BY k.created_at DESC, k.id`,
    shopId,
  );
}

/** Twelve characters name one key but for a rare clash. */
const PREFIX_MATCHES_MAX = 10;

interface KeyRef { id: string; shop_id: string; key_prefix: string }

/**
 * Of `shopId` only when given: the key with id `ref`; else for a whole key the one with its hash; else the keys
 * whose shown prefix it is (with or without `…`). More than one only for a shared prefix.
 */
async function keysNamedBy(q: Reader, ref: string, shopId?: string): Promise<KeyRef[]> {
  const inShop = shopId === undefined ? '' : ' AND shop_id = ?';
  const shop = shopId === undefined ? [] : [shopId];
  const byId = await q.all<KeyRef>(`SELECT id, shop_id, key_prefix FROM api_keys WHERE id = ?${inShop}`, ref, ...shop);
  if (byId.length > 0) return byId;
  const prefix = ref.replace(/(…|\.\.\.)$/, '');
  if (prefix === ref && /^sk_(test|live)_/.test(ref) && ref.length > KEY_PREFIX_LENGTH) {
    return q.all<KeyRef>(`SELECT id, shop_id, key_prefix FROM api_keys WHERE key_hash = ?${inShop}`, sha256Hex(ref), ...shop);
  }
  return q.all<KeyRef>(`SELECT id, shop_id, key_prefix FROM api_keys WHERE key_prefix = ?${inShop} ORDER BY created_at, id LIMIT ?`, prefix, ...shop, PREFIX_MATCHES_MAX);
}

/** Not found, or a shared prefix, is an error naming what to give instead. */
export async function findKeyToRevoke(q: Reader, ref: string, shopId?: string): Promise<KeyRef> {
  const keys = await keysNamedBy(q, ref, shopId);
  // No further than its prefix, so an error never repeats a key.
  const shown = /^sk_(test|live)_/.test(ref) && ref.length > KEY_PREFIX_LENGTH ? `${ref.slice(0, KEY_PREFIX_LENGTH)}…` : ref.slice(0, 100);
  if (keys.length === 0) {
    throw new Error(`cannot revoke key "${shown}": not found${shopId === undefined ? '' : ` in shop "${shopId}"`}; give its id, the key itself, or the prefix kopek key list shows`);
  }
  if (keys.length > 1) {
    const named = keys.map((k) => `${k.id} (shop ${k.shop_id})`).join(', ');
    throw new Error(`cannot revoke key "${shown}": the prefix is that of ${keys.length === PREFIX_MATCHES_MAX ? 'several keys, among them' : `${keys.length} keys:`} ${named}; give the id of the one to revoke`);
  }
  return keys[0];
}

/** Revoking twice is an error naming the first time. */
export async function revokeKey(store: Store, keyId: string, now: number): Promise<void> {
  const row = await store.get<{ revoked_at: number | null }>('SELECT revoked_at FROM api_keys WHERE id = ?', keyId);
  if (!row) throw new Error(`cannot revoke key "${keyId}": not found`);
  if (row.revoked_at !== null) throw new Error(`cannot revoke key "${keyId}": already revoked`);
  await store.tx((tx) => tx.run('UPDATE api_keys SET revoked_at = ? WHERE id = ?', now, keyId));
}

/** Once a shop of the merchant has an acquirer or a payout provider; refused with the reason before. Returns what `kopek merchant activate-live` prints. */
export async function activateLive(store: Store, merchantId: string) {
  if (!(await getMerchant(store, merchantId))) throw new Error(`cannot activate live mode for merchant "${merchantId}": not found`);
  const shopsWith = async (table: string): Promise<string[]> =>
    (await store.all<{ id: string }>(`SELECT s.id FROM shops s JOIN ${table} a ON a.shop_id = s.id WHERE s.merchant_id = ? ORDER BY s.id`, merchantId)).map((r) => r.id);
  const shops = await shopsWith('shop_acquirers');
  const payouts = await shopsWith('shop_payout_providers');
  if (shops.length === 0 && payouts.length === 0) {
    throw new Error(
      `cannot activate live mode for merchant "${merchantId}": no shop of the merchant has an acquirer (kopek shop acquirer) or a payout provider (kopek shop payouts); live keys answer 403 live_mode_not_activated until one has`,
    );
  }
  await store.tx((tx) => tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', merchantId));
  // Payout providers named only when there are any: an acquirer-only merchant's answer stays as it was.
  return { id: merchantId, live_enabled: true, shops_with_acquirer: shops, ...(payouts.length ? { shops_with_payout_provider: payouts } : {}) };
}

/** The demo setup: a merchant, a shop with every scope, and a test key (`fixedKey` its secret, else a random one). */
export async function createDemo(store: Store, now: number, fixedKey?: string): Promise<{ merchant: Merchant; shop: Shop; key: ApiKey; secret: string }> {
  const merchant = await createMerchant(store, 'Demo merchant', now);
  const shop = await createShop(store, merchant.id, 'Demo shop', undefined, now);
  const { key, secret: s } = await createKey(store, shop.id, 'test', undefined, now, fixedKey);
  return { merchant, shop, key, secret: s };
}

export async function isEmpty(q: Reader): Promise<boolean> {
  return !(await q.get('SELECT 1 FROM merchants LIMIT 1'));
}

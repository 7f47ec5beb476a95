import type { Reader, Store } from '../storage/store';
import type { Auth } from '../http/types';
import type { KeyCheck, KeyInput } from '../http/deps';
import { ApiError } from '../http/errors';
import { hmacHex, safeEqual, sha256Hex } from '../util/crypto';
import { compileAllowList, type AllowList } from './ip-allowlist';
import { unseal } from '../secrets/at-rest';
import { KeyCache } from './key-cache';

interface KeyRow {
  key_id: string; mode: 'test' | 'live'; key_scopes: string; revoked_at: number | null; shop_id: string;
  shop_name: string; shop_scopes: string; ip_allowlist: string; signing_secret: string;
  require_signature: number; merchant_id: string; live_enabled: number; has_acquirer: number;
  has_payout_provider: number;
}

const allowListCache = new Map<string, AllowList>();

/** A resolved key: its row, the compiled allow-list, and the check every request with it gets (built once). */
interface KeyEntry {
  row: KeyRow;
  allow: AllowList;
  check: KeyCheck;
}

const keyCaches = new WeakMap<Store, KeyCache<KeyEntry>>();

const KEY_SQL = `SELECT k.id AS key_id, k.mode, k.scopes AS key_scopes, k.revoked_at, s.id AS shop_id, s.name AS shop_name,
        s.scopes AS shop_scopes, s.ip_allowlist, s.signing_secret, s.require_signature,
        m.id AS merchant_id, m.live_enabled, EXISTS (SELECT 1 FROM shop_acquirers a WHERE a.shop_id = s.id) AS has_acquirer,
        EXISTS (SELECT 1 FROM shop_payout_providers p WHERE p.shop_id = s.id) AS has_payout_provider
 FROM api_keys k JOIN shops s ON s.id = k.shop_id JOIN merchants m ON m.id = s.merchant_id
 WHERE k.key_hash = ?`;

/** KEY_SQL by key id (a stream token names its key by id). */
const KEY_SQL_BY_ID = KEY_SQL.replace('WHERE k.key_hash = ?', 'WHERE k.id = ?');

/** A key's effective scopes: its own that its shop also has. */
function scopesOf(row: { key_scopes: string; shop_scopes: string }): ReadonlySet<string> {
  const shopScopes = new Set(row.shop_scopes.split(',').filter(Boolean));
  return new Set(row.key_scopes.split(',').filter((s) => shopScopes.has(s)));
}

/** The frozen Auth of a key row's requests. */
function authOf(row: KeyRow): Readonly<Auth> {
  return Object.freeze({
    keyId: row.key_id, merchantId: row.merchant_id, shopId: row.shop_id, shopName: row.shop_name,
    mode: row.mode, scopes: scopesOf(row),
  });
}

/** A key row as the pipeline uses it: the compiled allow-list, the Auth and the body's signature check. */
function entryOf(store: Store, row: KeyRow): KeyEntry {
  let allow = allowListCache.get(row.ip_allowlist);
  if (!allow) {
    allow = compileAllowList(row.ip_allowlist);
    if (allowListCache.size > 1000) allowListCache.clear();
    allowListCache.set(row.ip_allowlist, allow);
  }
  const secret = (): string => unseal(store.path, row.signing_secret, `shops.signing_secret:${row.shop_id}`);
  const verifyBody = row.require_signature
    ? (signature: string | undefined, body: Buffer): void => verifyRequestSignature(signature, body, secret())
    : (): void => {};
  return { row, allow, check: { auth: authOf(row), verifyBody } };
}

/**
 * Check `X-PSP-Signature: sha256=<hex>` over exactly the bytes of the body received: an empty body signs the empty
 * string. A GET never carries a body here (the server refuses one before this check).
 */
function verifyRequestSignature(header: string | undefined, rawBody: Buffer, signingSecret: string): void {
  if (header === undefined || header === '') {
    throw new ApiError(401, 'signature_required', 'Cannot accept the request: this shop requires an X-PSP-Signature header');
  }
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
  const expected = hmacHex(signingSecret, rawBody);
  if (!m || !safeEqual(m[1].toLowerCase(), expected)) {
    throw new ApiError(401, 'invalid_signature', 'Cannot accept the request: X-PSP-Signature does not match the body');
  }
}

/**
 * The Auth of the key with this id (a stream token names its key by id): undefined when unknown or revoked,
 * 403 when it is a live key of a merchant without live mode, as for the key itself.
 */
export async function authOfKeyId(q: Reader, keyId: string): Promise<Auth | undefined> {
  const row = await q.get<KeyRow>(KEY_SQL_BY_ID, keyId);
  if (!row || row.revoked_at !== null) return undefined;
  requireLiveEnabled(row);
  return authOf(row);
}

function requireLiveEnabled(row: KeyRow): void {
  if (row.mode === 'live' && !row.live_enabled) {
    throw new ApiError(403, 'live_mode_not_activated', 'Cannot use a live key: live mode is not activated for this merchant');
  }
}

/** Per connection: the last Authorization header that held a well-formed key, and that key's hash. */
const keyHashes = new WeakMap<object, { authorization: string; hash: string }>();

/**
 * The part of authentication that needs no body, run before a byte of the body is read: Bearer key (401),
 * live mode (403), IP allow-list (403). A keyless or refused client never makes the server hold its body.
 * A keep-alive client sends the same Authorization header on every request: its key's hash is kept with the
 * connection and reused while the header is the same string. Keys are looked up by hash in a cache that
 * follows the database's change signal (key-cache.ts).
 */
export async function authenticateKey(store: Store, input: KeyInput): Promise<KeyCheck> {
  const { authorization, connection } = input;
  const memo = keyHashes.get(connection);
  let hash: string;
  if (memo !== undefined && memo.authorization === authorization) hash = memo.hash;
  else {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!m) throw new ApiError(401, 'unauthorized', 'Cannot authenticate: send Authorization: Bearer <API key>');
    if (!/^sk_(test|live)_[A-Za-z0-9_-]{16,128}$/.test(m[1])) throw new ApiError(401, 'unauthorized', 'Cannot authenticate: the API key is malformed');
    // Keys carry 256 bits of entropy, so a plain SHA-256 is a safe lookup hash; the lookup is by equality on it.
    hash = sha256Hex(m[1]);
    keyHashes.set(connection, { authorization: authorization!, hash });
  }
  let cache = keyCaches.get(store);
  if (!cache) keyCaches.set(store, (cache = new KeyCache<KeyEntry>(store)));
  let entry = cache.get(hash);
  if (!entry) {
    const generation = cache.current();
    const row = await store.get<KeyRow>(KEY_SQL, hash);
    if (!row || row.revoked_at !== null) throw new ApiError(401, 'unauthorized', 'Cannot authenticate: the API key is unknown or revoked');
    entry = entryOf(store, row);
    cache.set(hash, entry, generation);
  }
  const row = entry.row;
  requireLiveEnabled(row);
  // A shop with only a payout provider passes: its payment operations answer 403 acquirer_not_configured at the
  // bank port (bank-port/none.ts), its payouts work.
  if (row.mode === 'live' && !row.has_acquirer && !row.has_payout_provider) {
    throw new ApiError(403, 'acquirer_not_configured', 'Cannot use a live key: the shop has no acquirer (kopek shop acquirer) and no payout provider (kopek shop payouts)');
  }
  if (!entry.allow.empty && !entry.allow.allows(input.ip)) {
    throw new ApiError(403, 'ip_not_allowed', `Cannot accept a request from "${input.ip}": the address is not in the shop's allow-list`);
  }
  return entry.check;
}

/** Where a key stands now: revoked or not, and its effective scopes (its own that its shop also has). */
export async function keyStanding(q: Reader, keyId: string): Promise<{ revoked: boolean; scopes: ReadonlySet<string> }> {
  const row = await q.get<{ revoked_at: number | null; key_scopes: string; shop_scopes: string }>(
    'SELECT k.revoked_at, k.scopes AS key_scopes, s.scopes AS shop_scopes FROM api_keys k JOIN shops s ON s.id = k.shop_id WHERE k.id = ?',
    keyId,
  );
  return !row || row.revoked_at !== null ? { revoked: true, scopes: new Set() } : { revoked: false, scopes: scopesOf(row) };
}

/** 403 scope_required unless the key (and its shop) hold the scope. */
export function requireScope(auth: Auth, scope: string): void {
  if (!auth.scopes.has(scope)) {
    throw new ApiError(403, 'scope_required', `Cannot perform this operation: the key needs scope "${scope}"`);
  }
}

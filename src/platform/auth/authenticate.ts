import type { Reader, Store } from '../storage/store';
import type { Auth } from '../http/types';
import type { KeyCheck } from '../http/deps';
import { ApiError } from '../http/errors';
import { sha256Hex } from '../util/crypto';
import { compileAllowList, type AllowList } from './ip-allowlist';
import { verifyRequestSignature } from './request-signature';
import { unseal } from '../secrets/at-rest';
import { KeyCache } from './key-cache';

interface KeyRow {
  key_id: string;
  mode: 'test' | 'live';
  key_scopes: string;
  revoked_at: number | null;
  shop_id: string;
  shop_name: string;
  shop_scopes: string;
  ip_allowlist: string;
  signing_secret: string;
  require_signature: number;
  merchant_id: string;
  live_enabled: number;
  has_acquirer: number;
  has_payout_provider: number;
}

const allowListCache = new Map<string, AllowList>();

function allowList(text: string): AllowList {
  let list = allowListCache.get(text);
  if (!list) {
    list = compileAllowList(text);
    if (allowListCache.size > 1000) allowListCache.clear();
    allowListCache.set(text, list);
  }
  return list;
}

/** A resolved key: its row, the compiled allow-list and the Auth every request with it gets. */
interface KeyEntry {
  row: KeyRow;
  allow: AllowList;
  auth: Readonly<Auth>;
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

/** The key with this hash, from the cache or the database; undefined when unknown or revoked. */
async function lookupKey(store: Store, hash: string): Promise<KeyEntry | undefined> {
  let cache = keyCaches.get(store);
  if (!cache) {
    cache = new KeyCache<KeyEntry>(store);
    keyCaches.set(store, cache);
  }
  const held = cache.get(hash);
  if (held) return held;
  const generation = cache.current();
  const row = await store.get<KeyRow>(KEY_SQL, hash);
  if (!row || row.revoked_at !== null) return undefined;
  const entry = entryOf(row);
  cache.set(hash, entry, generation);
  return entry;
}

/** A key row as the pipeline uses it: the compiled allow-list and the frozen Auth of its requests. */
function entryOf(row: KeyRow): KeyEntry {
  const shopScopes = new Set(row.shop_scopes.split(',').filter(Boolean));
  const scopes: ReadonlySet<string> = new Set(row.key_scopes.split(',').filter((s) => shopScopes.has(s)));
  const auth: Readonly<Auth> = Object.freeze({
    keyId: row.key_id,
    merchantId: row.merchant_id,
    shopId: row.shop_id,
    shopName: row.shop_name,
    mode: row.mode,
    scopes,
  });
  return { row, allow: allowList(row.ip_allowlist), auth };
}

/**
 * The Auth of the key with this id (a stream token names its key by id): undefined when unknown or revoked,
 * 403 when it is a live key of a merchant without live mode, as for the key itself.
 */
export async function authOfKeyId(q: Reader, keyId: string): Promise<Auth | undefined> {
  const row = await q.get<KeyRow>(KEY_SQL_BY_ID, keyId);
  if (!row || row.revoked_at !== null) return undefined;
  if (row.mode === 'live' && !row.live_enabled) {
    throw new ApiError(403, 'live_mode_not_activated', 'Cannot use a live key: live mode is not activated for this merchant');
  }
  return entryOf(row).auth;
}

/** What the pipeline needs from a request. */
export interface AuthInput {
  authorization: string | undefined;
  signature: string | undefined;
  ip: string;
  rawBody: Buffer;
  /**
   * The connection the request came on. A keep-alive client sends the same Authorization header on every
   * request; its key's hash is kept with the connection and reused while the header is the same string.
   */
  connection?: object;
}

/** Per connection: the last Authorization header that held a well-formed key, and that key's hash. */
const keyHashes = new WeakMap<object, { authorization: string; hash: string }>();

/** The lookup hash of the Bearer key in `authorization`; 401 when there is none or it is malformed. */
function keyHashOf(authorization: string | undefined, connection: object | undefined): string {
  const memo = connection === undefined ? undefined : keyHashes.get(connection);
  if (memo !== undefined && memo.authorization === authorization) return memo.hash;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  if (!m) {
    throw new ApiError(401, 'unauthorized', 'Cannot authenticate: send Authorization: Bearer <API key>');
  }
  const key = m[1];
  if (!/^sk_(test|live)_[A-Za-z0-9_-]{16,128}$/.test(key)) {
    throw new ApiError(401, 'unauthorized', 'Cannot authenticate: the API key is malformed');
  }
  // Keys carry 256 bits of entropy, so a plain SHA-256 is a safe lookup hash; the lookup is by equality on it.
  const hash = sha256Hex(key);
  if (connection !== undefined) keyHashes.set(connection, { authorization: authorization!, hash });
  return hash;
}

/** A key that passed the checks made from the headers alone (declared with the server that calls the check). */
export type { KeyCheck };

/**
 * The part of authentication that needs no body, run before a byte of the body is read: Bearer key (401),
 * live mode (403), IP allow-list (403). A keyless or refused client never makes the server hold its body.
 */
export async function authenticateKey(store: Store, input: Omit<AuthInput, 'signature' | 'rawBody'>): Promise<KeyCheck> {
  const entry = await checkKey(store, input);
  const row = entry.row;
  return {
    auth: entry.auth,
    verifyBody: (signature, rawBody) => {
      if (row.require_signature) verifyRequestSignature(signature, rawBody, unseal(store.path, row.signing_secret, `shops.signing_secret:${row.shop_id}`));
    },
  };
}

/**
 * The whole authentication pipeline, in order: Bearer key (401), live mode (403), IP allow-list (403),
 * request signature (401). Scope checks follow in the server, per route.
 */
export async function authenticate(store: Store, input: AuthInput): Promise<Auth> {
  const check = await authenticateKey(store, input);
  check.verifyBody(input.signature, input.rawBody);
  return check.auth;
}

async function checkKey(store: Store, input: Omit<AuthInput, 'signature' | 'rawBody'>): Promise<KeyEntry> {
  const entry = await lookupKey(store, keyHashOf(input.authorization, input.connection));
  if (!entry) {
    throw new ApiError(401, 'unauthorized', 'Cannot authenticate: the API key is unknown or revoked');
  }
  const row = entry.row;
  if (row.mode === 'live' && !row.live_enabled) {
    throw new ApiError(403, 'live_mode_not_activated', 'Cannot use a live key: live mode is not activated for this merchant');
  }
  // A shop with only a payout provider passes: its payment operations answer 403 acquirer_not_configured at the
  // bank port (bank-port/none.ts), its payouts work.
  if (row.mode === 'live' && !row.has_acquirer && !row.has_payout_provider) {
    throw new ApiError(403, 'acquirer_not_configured', 'Cannot use a live key: the shop has no acquirer (kopek shop acquirer) and no payout provider (kopek shop payouts)');
  }
  if (!entry.allow.allows(input.ip)) {
    throw new ApiError(403, 'ip_not_allowed', `Cannot accept a request from "${input.ip}": the address is not in the shop's allow-list`);
  }
  return entry;
}

/** Where a key stands now: revoked or not, and its effective scopes (its own that its shop also has). */
export async function keyStanding(q: Reader, keyId: string): Promise<{ revoked: boolean; scopes: ReadonlySet<string> }> {
  const row = await q.get<{ revoked_at: number | null; key_scopes: string; shop_scopes: string }>(
    'SELECT k.revoked_at, k.scopes AS key_scopes, s.scopes AS shop_scopes FROM api_keys k JOIN shops s ON s.id = k.shop_id WHERE k.id = ?',
    keyId,
  );
  if (!row || row.revoked_at !== null) return { revoked: true, scopes: new Set() };
  const shopScopes = new Set(row.shop_scopes.split(',').filter(Boolean));
  return { revoked: false, scopes: new Set(row.key_scopes.split(',').filter((s) => shopScopes.has(s))) };
}

/** 403 scope_required unless the key (and its shop) hold the scope. */
export function requireScope(auth: Auth, scope: string): void {
  if (!auth.scopes.has(scope)) {
    throw new ApiError(403, 'scope_required', `Cannot perform this operation: the key needs scope "${scope}"`);
  }
}

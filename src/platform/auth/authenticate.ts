import type { Reader, Store } from '../storage/store';
import type { Auth } from '../http/types';
import type { KeyCheck, KeyInput } from '../http/deps';
import { ApiError } from '../http/errors';
import { hmacHex, safeEqual, sha256Hex } from '../util/ids';
import { compileAllowList, type AllowList } from './ip-allowlist';
import { unseal } from '../secrets/at-rest';
import type { Logger } from '../log';
import type { Clocks } from '../clock';

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

/**
 * Key lookups of one store, by key hash. It holds entries only while the store's keyTablesVersion stands at
 * `version`, where it stood before they were read: the version moves with every commit that may have changed a
 * key, its shop, its merchant or their bank connections, through this store, another process or another node
 * (see Store.keyTablesVersion for each engine's bound on how soon).
 */
const keyCaches = new WeakMap<Store, { version: number; entries: Map<string, KeyEntry> }>();

/** Most keys held; past it the cache starts over (a flood of distinct valid keys costs lookups, not memory). */
const MAX_ENTRIES = 10_000;

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

function authOf(row: KeyRow): Readonly<Auth> {
  return Object.freeze({
    keyId: row.key_id, merchantId: row.merchant_id, shopId: row.shop_id, shopName: row.shop_name,
    mode: row.mode, scopes: scopesOf(row),
  });
}

function entryOf(store: Store, row: KeyRow): KeyEntry {
  let allow = allowListCache.get(row.ip_allowlist);
  if (!allow) {
    allow = compileAllowList(row.ip_allowlist);
    if (allowListCache.size > 1000) allowListCache.clear();
    allowListCache.set(row.ip_allowlist, allow);
  }
  // Unsealed once per entry: the entry lives only while the key tables stand where they stood when it was read.
  if (!row.require_signature) return { row, allow, check: { auth: authOf(row) } };
  const secret = unseal(store.path, row.signing_secret, `shops.signing_secret:${row.shop_id}`);
  // `X-PSP-Signature: sha256=<hex>` over exactly the bytes of the body received (none: the empty string).
  const verifyBody = (header: string | undefined, rawBody: Buffer): void => {
    if (header === undefined || header === '') {
      throw new ApiError(401, 'signature_required', 'Cannot accept the request: this shop requires an X-PSP-Signature header');
    }
    const m = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
    if (!m || !safeEqual(m[1].toLowerCase(), hmacHex(secret, rawBody))) {
      throw new ApiError(401, 'invalid_signature', 'Cannot accept the request: X-PSP-Signature does not match the body');
    }
  };
  return { row, allow, check: { auth: authOf(row), verifyBody } };
}

/** The Auth of the key with this id: undefined when unknown or revoked, 403 for a live key without live mode. */
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
 * The part of authentication that needs no body (so a refused client never makes the server hold one): Bearer key
 * (401), live mode, IP allow-list (403). A keep-alive client's key hash is kept with the connection while its
 * Authorization header stays the same.
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
  const version = store.keyTablesVersion();
  let cache = keyCaches.get(store);
  if (cache?.version !== version) keyCaches.set(store, (cache = { version, entries: new Map() }));
  let entry = cache.entries.get(hash);
  if (!entry) {
    const row = await store.get<KeyRow>(KEY_SQL, hash);
    if (!row || row.revoked_at !== null) throw new ApiError(401, 'unauthorized', 'Cannot authenticate: the API key is unknown or revoked');
    entry = entryOf(store, row);
    // An entry read across a change (the read waited, and a write or another process's commit came between) may
    // be older than the change: it is not held, and the next lookup reads again.
    if (store.keyTablesVersion() === version) {
      if (cache.entries.size >= MAX_ENTRIES) cache.entries.clear();
      cache.entries.set(hash, entry);
    }
  }
  const row = entry.row;
  requireLiveEnabled(row);
  // A shop with only a payout provider passes: its payouts work, its payments answer 403 at the bank port.
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

/** A key's last use is written at most this often: a request must not cost a write. */
const FLUSH_EVERY_MS = 60_000;
/** A key's last use, kept when a later one is already written (SQLite's two-argument max is GREATEST there). */
const UPSERT_USE = {
  sqlite: 'INSERT INTO api_key_usage (key_id, last_used_at) VALUES (?, ?) ON CONFLICT (key_id) DO UPDATE SET last_used_at = MAX(api_key_usage.last_used_at, excluded.last_used_at)',
  postgres: 'INSERT INTO api_key_usage (key_id, last_used_at) VALUES (?, ?) ON CONFLICT (key_id) DO UPDATE SET last_used_at = GREATEST(api_key_usage.last_used_at, excluded.last_used_at)',
};

/**
 * The last use of each API key (the cabinet shows it). Kept in memory and written in one group commit at
 * most once a minute, so the figure may lag by that much. What is still held at shutdown is written by
 * `flush()`, which whoever closes the server calls before the database closes.
 */
export class KeyUsage {
  /** Key id → real time of its last request, not yet written. */
  private readonly pending = new Map<string, number>();
  private lastFlush: number;

  constructor(private readonly deps: { readonly store: Pick<Store, 'write'>; readonly clocks: Pick<Clocks, 'real'>; readonly log: Logger }) {
    this.lastFlush = deps.clocks.real();
  }

  /** Writes the batch when the last write is a minute old. Bound: the server calls it as a guard. */
  readonly note = (keyId: string): void => {
    const now = this.deps.clocks.real();
    this.pending.set(keyId, now);
    if (now - this.lastFlush >= FLUSH_EVERY_MS) {
      this.lastFlush = now;
      void this.write().catch((err) => this.deps.log.warn('cannot record API key use', { error: (err as Error).message }));
    }
  };

  /** Write every held last use now (before the cabinet lists keys, and at shutdown). */
  async flush(): Promise<void> {
    this.lastFlush = this.deps.clocks.real();
    await this.write();
  }

  private write(): Promise<void> {
    const batch = [...this.pending];
    this.pending.clear();
    if (batch.length === 0) return Promise.resolve();
    return this.deps.store.write(async (tx) => {
      for (const [id, at] of batch) {
        await tx.run(UPSERT_USE[tx.engine], id, at);
      }
    });
  }
}

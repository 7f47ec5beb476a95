import { createHmac, createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Store } from '../storage/store';
import { isPostgresUrl } from '../storage/postgres/open';
import { closeSync, existsSync, fchmodSync, openSync, readFileSync, writeSync } from 'node:fs';

// Secrets kopek must use again (a terminal password, a RebillId, webhook and request-signing secrets) are stored
// encrypted under the database's master key, bound to the row they belong to: a copy of the database alone, or its
// WAL, holds no usable secret. The key is never in the database: KOPEK_MASTER_KEY, or a key file beside the
// database created on first need; a backup without it cannot decrypt them (they must be entered again). Values
// written before sealing (plain `whs_…` / `thm_…`) still read, and the server seals them on start (sealPlainSecrets).

/** The prefix of a sealed value. */
const SEALED = 'enc:';

const keys = new Map<string, Buffer>();

/** The master key of the database at `dbPath` (the store's `path`), created on first need; cached per file. */
function keyOf(dbPath: string): Buffer {
  let key = keys.get(dbPath);
  if (!key) keys.set(dbPath, (key = loadMasterKey(dbPath, { create: true })));
  return key;
}

/**
 * A keyed fingerprint of a card number (HMAC-SHA256 under a key derived from the master key): equal only for equal
 * numbers, and not turned back into one without the master key (a plain hash could be: a known BIN and last four
 * leave only a few million numbers to try).
 */
export function cardFingerprint(dbPath: string, pan: string): string {
  let sub = fingerprintKeys.get(dbPath);
  if (!sub) fingerprintKeys.set(dbPath, (sub = createHmac('sha256', keyOf(dbPath)).update('kopek card fingerprint v1').digest()));
  return createHmac('sha256', sub).update(pan).digest('hex');
}

const fingerprintKeys = new Map<string, Buffer>();

/** Encrypt a secret of the database at `dbPath` (the store's `path`) for storage in `context` (say `shops.signing_secret:<shop id>`). */
export function seal(dbPath: string, plaintext: string, context: string): string {
  return encryptSecret(keyOf(dbPath), plaintext, context);
}

/** The secret stored in `context`: decrypted, or as it is when it was stored before sealing existed. */
export function unseal(dbPath: string, stored: string, context: string): string {
  return stored.startsWith(SEALED) ? decryptSecret(keyOf(dbPath), stored, context) : stored;
}

/** Columns that may still hold secrets in clear, each with its owner column, which names the seal's context. */
const SEALED_COLUMNS = [
  { table: 'shops', column: 'signing_secret', owner: 'id', context: 'shops.signing_secret' },
  { table: 'shops', column: 'webhook_secret', owner: 'id', context: 'shops.webhook_secret' },
  { table: 'webhook_secrets', column: 'secret', owner: 'endpoint_id', context: 'webhook_secrets' },
  // Cabinet users' TOTP secrets (base32 in clear before schema 18), confirmed and pending alike.
  { table: 'cabinet_users', column: 'totp_secret', owner: 'id', context: 'cabinet_users.totp_secret' },
  { table: 'cabinet_users', column: 'totp_pending', owner: 'id', context: 'cabinet_users.totp_pending' },
] as const;

/** Encrypt every secret still stored in clear (a database from before sealing), in one transaction; returns how many. */
export async function sealPlainSecrets(store: Store): Promise<number> {
  return store.tx(async (tx) => {
    let n = 0;
    for (const { table, column, owner, context } of SEALED_COLUMNS) {
      const rows = await tx.all<{ id: string | number; owner: string; value: string }>(`SELECT id, ${owner} AS owner, ${column} AS value FROM ${table} WHERE ${column} NOT LIKE 'enc:%'`);
      for (const r of rows) {
        await tx.run(`UPDATE ${table} SET ${column} = ? WHERE id = ?`, seal(store.path, r.value, `${context}:${r.owner}`), r.id);
        n++;
      }
    }
    return n;
  });
}

/** AES-256. */
export const MASTER_KEY_BYTES = 32;
/** Version, then base64 of nonce ‖ tag ‖ ciphertext. */
const PREFIX = 'enc:v1:';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** When KOPEK_MASTER_KEY is unset. */
export function keyFilePath(dbPath: string): string {
  return `${dbPath}.key`;
}

function decodeKey(text: string, source: string): Buffer {
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== MASTER_KEY_BYTES || !/^[A-Za-z0-9+/]+={0,2}$/.test(text.trim())) {
    throw new Error(`cannot use the master key from ${source}: it must be ${MASTER_KEY_BYTES} bytes in base64`);
  }
  return key;
}

/** Of every database in memory of this process; it never leaves the process. */
let processKey: Buffer | null = null;

/** KOPEK_MASTER_KEY; for memory, a process key; else `<db>.key`, made 0600 when `create`. Errors never show the key. */
export function loadMasterKey(dbPath: string, opts: { create?: boolean; env?: NodeJS.ProcessEnv } = {}): Buffer {
  const env = opts.env ?? process.env;
  const fromEnv = env.KOPEK_MASTER_KEY;
  if (fromEnv !== undefined && fromEnv !== '') return decodeKey(fromEnv, 'KOPEK_MASTER_KEY');
  // Every node needs the same key: no key file is read or written beside a URL.
  if (isPostgresUrl(dbPath)) throw new Error('cannot find the master key: a PostgreSQL database needs KOPEK_MASTER_KEY (the same on every node)');
  // Nothing of a database in memory (SQLite's `:memory:`, or the empty name of a temporary one) may reach the disk.
  if (dbPath === ':memory:' || dbPath === '') return (processKey ??= randomBytes(MASTER_KEY_BYTES));
  const path = keyFilePath(dbPath);
  if (existsSync(path)) return decodeKey(readFileSync(path, 'utf8'), `"${path}"`);
  if (!opts.create) throw new Error(`cannot find the master key: KOPEK_MASTER_KEY is unset and "${path}" does not exist`);
  const key = randomBytes(MASTER_KEY_BYTES);
  // 'wx' refuses to overwrite a key another process created meanwhile; that one is read back below.
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return decodeKey(readFileSync(path, 'utf8'), `"${path}"`);
    throw new Error(`cannot create the master key file "${path}": ${(err as Error).message}`);
  }
  try {
    fchmodSync(fd, 0o600);
    writeSync(fd, key.toString('base64') + '\n');
  } finally {
    closeSync(fd);
  }
  return key;
}

/** The environment, its key file, or nowhere yet. */
export function masterKeySource(dbPath: string, env: NodeJS.ProcessEnv = process.env): { kind: 'env' | 'file' | 'none'; path: string } {
  if (env.KOPEK_MASTER_KEY) return { kind: 'env', path: '' };
  const path = keyFilePath(dbPath);
  return existsSync(path) ? { kind: 'file', path } : { kind: 'none', path };
}

/** AES-256-GCM, fresh nonce; `context` binds it to where it is stored. */
export function encryptSecret(key: Buffer, plaintext: string, context = ''): string {
  const nonce = randomBytes(NONCE_BYTES);
  const c = createCipheriv('aes-256-gcm', key, nonce);
  c.setAAD(Buffer.from(context, 'utf8'));
  const body = Buffer.concat([c.update(plaintext, 'utf8'), c.final()]);
  return PREFIX + Buffer.concat([nonce, c.getAuthTag(), body]).toString('base64');
}

/** Throws (without the secret) when it cannot. */
export function decryptSecret(key: Buffer, stored: string, context = ''): string {
  if (!stored.startsWith(PREFIX)) throw new Error('cannot decrypt a secret: it was not written by this version (unknown prefix)');
  const raw = Buffer.from(stored.slice(PREFIX.length), 'base64');
  if (raw.length < NONCE_BYTES + TAG_BYTES) throw new Error('cannot decrypt a secret: it is truncated');
  const d = createDecipheriv('aes-256-gcm', key, raw.subarray(0, NONCE_BYTES));
  d.setAAD(Buffer.from(context, 'utf8'));
  d.setAuthTag(raw.subarray(NONCE_BYTES, NONCE_BYTES + TAG_BYTES));
  try {
    return Buffer.concat([d.update(raw.subarray(NONCE_BYTES + TAG_BYTES)), d.final()]).toString('utf8');
  } catch {
    throw new Error('cannot decrypt a secret: the master key is not the one it was encrypted with (or the value was altered)');
  }
}

/** Loaded (and created) on first use and kept for the process. */
export class MasterKey {
  private key: Buffer | null = null;

  constructor(private readonly dbPath: string) {}

  get(): Buffer {
    return (this.key ??= loadMasterKey(this.dbPath, { create: true }));
  }

  encrypt(plaintext: string, context = ''): string {
    return encryptSecret(this.get(), plaintext, context);
  }

  decrypt(stored: string, context = ''): string {
    return decryptSecret(this.get(), stored, context);
  }
}

import { createHmac } from 'node:crypto';
import type { Store } from '../storage/store';
import { decryptSecret, encryptSecret, loadMasterKey } from './master-key';

// Secrets kopek must use again (webhook and request-signing secrets) are stored encrypted under the
// database's master key, bound to the row they belong to: a copy of the database alone, or its WAL, holds
// no usable secret. Values written before this (plain `whs_…` / `thm_…`) still read, and the server seals
// them on start (sealPlainSecrets).

/** The prefix of a sealed value (master-key.ts writes it). */
const SEALED = 'enc:';

const keys = new Map<string, Buffer>();

/** The master key of the database at `dbPath` (the store's `path`; see loadMasterKey), created on first need; cached per file. */
function keyOf(dbPath: string): Buffer {
  let key = keys.get(dbPath);
  if (!key) {
    key = loadMasterKey(dbPath, { create: true });
    keys.set(dbPath, key);
  }
  return key;
}

/**
 * A keyed fingerprint of a card number (HMAC-SHA256 under a key derived from the master key): two numbers
 * compare equal only when they are equal, and nothing stored can be turned back into a number without the
 * master key (a plain hash could: a known BIN and last four leave only a few million numbers to try).
 * `dbPath` is the database's path (the store's `path`).
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

/**
 * Encrypt every secret still stored in clear (a database from before sealing), in one transaction; returns
 * how many it sealed. Run by the server on start.
 */
export async function sealPlainSecrets(store: Store): Promise<number> {
  const path = store.path;
  return store.tx(async (tx) => {
    let n = 0;
    const shops = await tx.all<{ id: string; signing_secret: string; webhook_secret: string }>(`SELECT id, signing_secret, webhook_secret FROM shops WHERE signing_secret NOT LIKE 'enc:%' OR webhook_secret NOT LIKE 'enc:%'`);
    for (const s of shops) {
      await tx.run(
        'UPDATE shops SET signing_secret = ?, webhook_secret = ? WHERE id = ?',
        s.signing_secret.startsWith(SEALED) ? s.signing_secret : seal(path, s.signing_secret, `shops.signing_secret:${s.id}`),
        s.webhook_secret.startsWith(SEALED) ? s.webhook_secret : seal(path, s.webhook_secret, `shops.webhook_secret:${s.id}`),
        s.id,
      );
      n++;
    }
    const secrets = await tx.all<{ id: number; endpoint_id: string; secret: string }>(`SELECT id, endpoint_id, secret FROM webhook_secrets WHERE secret NOT LIKE 'enc:%'`);
    for (const r of secrets) {
      await tx.run('UPDATE webhook_secrets SET secret = ? WHERE id = ?', seal(path, r.secret, `webhook_secrets:${r.endpoint_id}`), r.id);
      n++;
    }
    // Cabinet users' TOTP secrets (base32 in clear before schema 18), confirmed and pending alike.
    for (const column of ['totp_secret', 'totp_pending'] as const) {
      const users = await tx.all<{ id: string; value: string }>(`SELECT id, ${column} AS value FROM cabinet_users WHERE ${column} NOT LIKE 'enc:%'`);
      for (const u of users) {
        await tx.run(`UPDATE cabinet_users SET ${column} = ? WHERE id = ?`, seal(path, u.value, `cabinet_users.${column}:${u.id}`), u.id);
        n++;
      }
    }
    return n;
  });
}

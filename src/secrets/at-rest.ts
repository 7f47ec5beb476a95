import { createHmac, randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import { decryptSecret, encryptSecret, loadMasterKey, MASTER_KEY_BYTES } from './master-key';

// Secrets kopek must use again (webhook and request-signing secrets) are stored encrypted under the
// database's master key, bound to the row they belong to: a copy of the database alone, or its WAL, holds
// no usable secret. Values written before this (plain `whs_…` / `thm_…`) still read, and the server seals
// them on start (sealPlainSecrets).

/** The prefix of a sealed value (master-key.ts writes it). */
const SEALED = 'enc:';

const keys = new Map<string, Buffer>();

/** The master key of this connection's database, created beside it on first need; cached per file. */
function keyOf(db: Database.Database): Buffer {
  let key = keys.get(db.name);
  if (!key) {
    // A database in memory keeps nothing past the process: a key of the process serves it.
    key = db.memory ? randomBytes(MASTER_KEY_BYTES) : loadMasterKey(db.name, { create: true });
    keys.set(db.name, key);
  }
  return key;
}

/**
 * A keyed fingerprint of a card number (HMAC-SHA256 under a key derived from the master key): two numbers
 * compare equal only when they are equal, and nothing stored can be turned back into a number without the
 * master key (a plain hash could: a known BIN and last four leave only a few million numbers to try).
 */
export function cardFingerprint(db: Database.Database, pan: string): string {
  let sub = fingerprintKeys.get(db.name);
  if (!sub) fingerprintKeys.set(db.name, (sub = createHmac('sha256', keyOf(db)).update('kopek card fingerprint v1').digest()));
  return createHmac('sha256', sub).update(pan).digest('hex');
}

const fingerprintKeys = new Map<string, Buffer>();

/** Encrypt a secret for storage in `context` (say `shops.signing_secret:<shop id>`). */
export function seal(db: Database.Database, plaintext: string, context: string): string {
  return encryptSecret(keyOf(db), plaintext, context);
}

/** The secret stored in `context`: decrypted, or as it is when it was stored before sealing existed. */
export function unseal(db: Database.Database, stored: string, context: string): string {
  return stored.startsWith(SEALED) ? decryptSecret(keyOf(db), stored, context) : stored;
}

/**
 * Encrypt every secret still stored in clear (a database from before sealing), in one transaction; returns
 * how many it sealed. Run by the server on start.
 */
export function sealPlainSecrets(db: Database.Database): number {
  let n = 0;
  const tx = db.transaction(() => {
    const shops = db.prepare(`SELECT id, signing_secret, webhook_secret FROM shops WHERE signing_secret NOT LIKE 'enc:%' OR webhook_secret NOT LIKE 'enc:%'`).all() as Array<{
      id: string;
      signing_secret: string;
      webhook_secret: string;
    }>;
    const upd = db.prepare('UPDATE shops SET signing_secret = ?, webhook_secret = ? WHERE id = ?');
    for (const s of shops) {
      upd.run(
        s.signing_secret.startsWith(SEALED) ? s.signing_secret : seal(db, s.signing_secret, `shops.signing_secret:${s.id}`),
        s.webhook_secret.startsWith(SEALED) ? s.webhook_secret : seal(db, s.webhook_secret, `shops.webhook_secret:${s.id}`),
        s.id,
      );
      n++;
    }
    const secrets = db.prepare(`SELECT id, endpoint_id, secret FROM webhook_secrets WHERE secret NOT LIKE 'enc:%'`).all() as Array<{ id: number; endpoint_id: string; secret: string }>;
    const updS = db.prepare('UPDATE webhook_secrets SET secret = ? WHERE id = ?');
    for (const r of secrets) {
      updS.run(seal(db, r.secret, `webhook_secrets:${r.endpoint_id}`), r.id);
      n++;
    }
  });
  tx.immediate();
  return n;
}

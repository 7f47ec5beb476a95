import type Database from 'better-sqlite3';

/**
 * A step of the SQLite migrations before the base version (migrations-old.ts): SQL, or a function for a step
 * that must look at the schema first.
 */
export type OldMigration = string | ((db: Database.Database) => void);

export function hasColumn(db: Database.Database, table: string, column: string): boolean {
  return (db.pragma(`table_info(${table})`) as Array<{ name: string }>).some((c) => c.name === column);
}

/** The records' table of schema versions 13 and 14, which differ in the merchant's type. */
function holdersTable(merchantType: 'TEXT' | 'BLOB'): string {
  return `CREATE TABLE idempotency_keys (
  merchant_id   ${merchantType} NOT NULL,
  mode          TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  key           TEXT NOT NULL,
  request_hash  BLOB NOT NULL,
  holder        TEXT CHECK (holder IN ('payments', 'refunds', 'payouts', 'tokens', 'subscriptions')),
  holder_seq    INTEGER,
  answer        BLOB,
  object_id     TEXT,
  created_at    INTEGER NOT NULL,
  PRIMARY KEY (merchant_id, mode, key),
  CHECK ((holder IS NULL) = (holder_seq IS NULL) AND (holder IS NULL) = (answer IS NOT NULL))
) STRICT, WITHOUT ROWID;`;
}

// 12 → 13: a record is one row in its key's b-tree and its answer lives in the created object's row (a key wrote
// a records page and a random index page besides the create's). Old records keep their answers; columns are added
// only where missing, so a database marked older than it is migrates all the same.
export const TO_13: OldMigration = (db) => {
  for (const table of ['payments', 'refunds', 'payouts', 'tokens', 'subscriptions']) {
    if (!hasColumn(db, table, 'answer')) db.exec(`ALTER TABLE ${table} ADD COLUMN answer BLOB`);
  }
  if (!hasColumn(db, 'idempotency_keys', 'response')) return;
  db.exec(`ALTER TABLE idempotency_keys RENAME TO idempotency_keys_old;
DROP INDEX idempotency_keys_key;
${holdersTable('TEXT')}
INSERT INTO idempotency_keys (merchant_id, mode, key, request_hash, answer, object_id, created_at)
  SELECT merchant_id, mode, key, request_hash, response, object_id, created_at FROM idempotency_keys_old;
DROP TABLE idempotency_keys_old;`);
};

// 13 → 14: the merchant as 16 bytes of the id (legacyMerchantKey's form) and a 16-byte fingerprint: about 85 bytes a
// record instead of 121, so its b-tree (one insert per keyed create) splits less often.
export const TO_14: OldMigration = (db) => {
  const type = (db.pragma('table_info(idempotency_keys)') as Array<{ name: string; type: string }>).find((c) => c.name === 'merchant_id')?.type;
  // Only the layout of 13 (a later one keeps its merchant as text too, without holders).
  if (type !== 'TEXT' || !hasColumn(db, 'idempotency_keys', 'holder')) return;
  db.function('kopek_merchant_key', { deterministic: true }, (id: unknown) => legacyMerchantKey(String(id)));
  db.exec(`ALTER TABLE idempotency_keys RENAME TO idempotency_keys_old;
${holdersTable('BLOB')}
INSERT INTO idempotency_keys (merchant_id, mode, key, request_hash, holder, holder_seq, answer, object_id, created_at)
  SELECT kopek_merchant_key(merchant_id), mode, key, substr(request_hash, 1, ${LEGACY_FINGERPRINT_BYTES}), holder, holder_seq, answer, object_id, created_at
  FROM idempotency_keys_old;
DROP TABLE idempotency_keys_old;`);
};

// 14 → 15: records in creation order under a seq, found through the server's in-memory index (gone since 16): a
// client's random key put each record on a leaf written for that create alone. Old records keep their age order.
export const TO_15: OldMigration = (db) => {
  if (hasColumn(db, 'idempotency_keys', 'seq') || !hasColumn(db, 'idempotency_keys', 'holder')) return;
  db.function('kopek_key_hash', { deterministic: true }, (merchant: unknown, mode: unknown, key: unknown) => legacyKeyHash(merchant as Buffer, String(mode), String(key)));
  db.exec(`ALTER TABLE idempotency_keys RENAME TO idempotency_keys_old;
CREATE TABLE idempotency_keys (
  seq           INTEGER PRIMARY KEY AUTOINCREMENT,
  merchant_id   BLOB NOT NULL,
  mode          TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  key           TEXT NOT NULL,
  key_hash      INTEGER NOT NULL,
  request_hash  BLOB NOT NULL,
  holder        TEXT CHECK (holder IN ('payments', 'refunds', 'payouts', 'tokens', 'subscriptions')),
  holder_seq    INTEGER,
  answer        BLOB,
  object_id     TEXT,
  created_at    INTEGER NOT NULL,
  CHECK ((holder IS NULL) = (holder_seq IS NULL) AND (holder IS NULL) = (answer IS NOT NULL))
) STRICT;
INSERT INTO idempotency_keys (merchant_id, mode, key, key_hash, request_hash, holder, holder_seq, answer, object_id, created_at)
  SELECT merchant_id, mode, key, kopek_key_hash(merchant_id, mode, key), request_hash, holder, holder_seq, answer, object_id, created_at
  FROM idempotency_keys_old ORDER BY created_at;
DROP TABLE idempotency_keys_old;`);
};

// 15 → 16: UNIQUE (merchant, mode, key) claimed in the create's transaction replaces the in-memory index; each record
// keeps its first answer as plain JSON, read from the created objects' rows (those columns go). A record whose
// answer is unreadable (holder gone) is dropped. The subscription charges' index becomes unique.
export const TO_16: OldMigration = (db) => {
  if (!hasColumn(db, 'idempotency_keys', 'fingerprint')) convertKeyRecords(db);
  // A database already holding two charges of one period and attempt cannot take it: say which.
  const twice = db
    .prepare(
      `SELECT subscription_id, charge_index, attempt, group_concat(payment_id, ', ') AS payments FROM recurrent_payments
       WHERE subscription_id IS NOT NULL GROUP BY subscription_id, charge_index, attempt HAVING count(*) > 1 LIMIT 5`,
    )
    .all() as Array<{ subscription_id: string; charge_index: number | null; attempt: number; payments: string }>;
  if (twice.length > 0) {
    const list = twice.map((t) => `subscription ${t.subscription_id} period ${t.charge_index} attempt ${t.attempt} (payments ${t.payments})`).join('; ');
    throw new Error(`cannot upgrade to schema 16: charges recorded twice for one period: ${list}; refund the extra charge and delete its recurrent_payments row, then start again`);
  }
  db.exec(`DROP INDEX IF EXISTS recurrent_payments_subscription;
CREATE UNIQUE INDEX recurrent_payments_subscription ON recurrent_payments(subscription_id, charge_index, attempt) WHERE subscription_id IS NOT NULL;`);
  for (const table of ['payments', 'refunds', 'payouts', 'tokens', 'subscriptions']) {
    if (hasColumn(db, table, 'answer')) db.exec(`ALTER TABLE ${table} DROP COLUMN answer`);
  }
};

/**
 * Reads answers in every form versions 6 to 15 wrote: compact in a holder's row, or in the record, compact or plain.
 * A compact answer's shop marker means the holder's shop, else the object_id's, else a batch's first payout's.
 */
function convertKeyRecords(db: Database.Database): void {
  db.exec(`ALTER TABLE idempotency_keys RENAME TO idempotency_keys_old;
CREATE TABLE idempotency_keys (
  seq          INTEGER PRIMARY KEY,
  merchant_id  TEXT NOT NULL,
  mode         TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  key          TEXT NOT NULL,
  fingerprint  TEXT NOT NULL,
  answer       TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  UNIQUE (merchant_id, mode, key)
) STRICT;`);
  type Old = { seq: number; merchant_id: Buffer; mode: string; key: string; request_hash: Buffer; holder: string | null; holder_seq: number | null; answer: Buffer | null; object_id: string | null; created_at: number };
  const page = db.prepare('SELECT seq, merchant_id, mode, key, request_hash, holder, holder_seq, answer, object_id, created_at FROM idempotency_keys_old WHERE seq > ? ORDER BY seq LIMIT 10000');
  const merchantExists = db.prepare('SELECT 1 FROM merchants WHERE id = ?');
  const tables = ['payments', 'refunds', 'payouts', 'tokens', 'subscriptions'];
  const bySeq = new Map(tables.map((t) => [t, db.prepare(`SELECT id, shop_id, answer FROM ${t} WHERE seq = ?`)]));
  const shopOf = tables.map((t) => db.prepare(`SELECT shop_id FROM ${t} WHERE id = ?`));
  const objectShop = (id: string): string | undefined => {
    for (const st of shopOf) {
      const row = st.get(id) as { shop_id: string } | undefined;
      if (row) return row.shop_id;
    }
    return undefined;
  };
  const insert = db.prepare('INSERT INTO idempotency_keys (seq, merchant_id, mode, key, fingerprint, answer, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
  for (let after = 0; ; ) {
    const rows = page.all(after) as Old[];
    if (rows.length === 0) break;
    after = rows[rows.length - 1].seq;
    for (const r of rows) {
      const asUuid = merchantIdOfLegacyKey(r.merchant_id);
      const merchantId = merchantExists.get(asUuid) ? asUuid : r.merchant_id.toString('utf8');
      let text: string | undefined;
      if (r.holder !== null) {
        const h = bySeq.get(r.holder)?.get(r.holder_seq!) as { id: string; shop_id: string; answer: Buffer | null } | undefined;
        if (h?.answer) text = decodeLegacyRecord(h.answer, { objectId: h.id, shopId: h.shop_id, merchantId });
      } else if (r.answer) {
        let shop: string | undefined = '';
        if (namesShop(r.answer)) {
          shop = r.object_id ? objectShop(r.object_id) : undefined;
          if (shop === undefined) {
            const first = /"payout_id":"([^"]+)"/.exec(decodeLegacyRecord(r.answer, { objectId: r.object_id, shopId: '', merchantId }));
            shop = first ? objectShop(first[1]) : undefined;
          }
        }
        if (shop !== undefined) text = decodeLegacyRecord(r.answer, { objectId: r.object_id, shopId: shop, merchantId });
      }
      if (text !== undefined) insert.run(r.seq, merchantId, r.mode, r.key, r.request_hash.toString('hex'), text, r.created_at);
    }
  }
  db.exec('DROP TABLE idempotency_keys_old');
}

/**
 * Frozen readers of idempotency records as schema versions 13 to 15 stored them, for the migrations that
 * convert those records (13 → 14, 14 → 15, 15 → 16) and for nothing else. The server no longer writes this
 * form: a record now keeps its first answer as plain JSON text under a UNIQUE key (schema version 16). Never
 * change these functions: the migrations must read what older versions wrote, byte for byte.
 *
 * The compact form: a create's answer repeated its object's id and the shop's and merchant's ids, which the
 * record kept in columns of its own, and the fixed pieces every answer of its kind has; each was stored as one
 * byte below 0x20, which JSON.stringify never writes raw.
 */

/** First byte of a record in the compact form; a record starting with `{` is plain JSON text. */
const FORMAT_1 = 0x01;
const OBJECT_ID = '\u0002';
const SHOP_ID = '\u0003';
const MERCHANT_ID = '\u0004';

/** Fixed pieces of create answers, each stored as the byte 0x05 + its index. */
const PHRASES = [
  '","merchant_id":"',
  '","shop_id":"',
  '{"payment":{"id":"',
  '","public_id":"P-',
  '","order_id":"',
  '","currency":"RUB","method":"',
  '","status":"pending","expires_at":"',
  '","created_at":"',
  '","metadata":{',
  '"simulator_outcome":"',
  '","simulator_failure_code":"',
  '"}},"payment_url":"',
  '","mode":"test","simulator":{"outcome":"',
  '","failure_code":"',
  '","actions":{"pay_page":"',
  '/v1/test/payments/',
  '/simulate","clock_advance":"',
  '/v1/test/clock/advance"}}}',
  '/pay/',
  '","status":"',
  '","amount":',
  '{"id":"',
  '"payout":{"id":"',
  '","customer_ref":"',
  'http://',
  '.000Z"',
  '":"',
] as const;
const PHRASE_BASE = 0x05;
const MARKER_RE = /[\u0005-\u001f]/g;

/** The ids a compact record's text refers to by marker. */
export interface LegacyRecordIds {
  objectId: string | null;
  shopId: string;
  merchantId: string;
}

/** True when a compact record refers to the shop's id by marker (the shop must be known to read it). */
export function namesShop(stored: Buffer): boolean {
  return stored[0] === FORMAT_1 && stored.includes(SHOP_ID.charCodeAt(0), 1);
}

/** The exact JSON text a record of schema versions 13 to 15 stands for. */
export function decodeLegacyRecord(stored: Buffer, ids: LegacyRecordIds): string {
  if (stored[0] !== FORMAT_1) return stored.toString('utf8');
  let t = stored.toString('utf8', 1);
  t = t.replace(MARKER_RE, (m) => PHRASES[m.charCodeAt(0) - PHRASE_BASE]);
  t = t.replaceAll(MERCHANT_ID, ids.merchantId).replaceAll(SHOP_ID, ids.shopId);
  if (ids.objectId) t = t.replaceAll(OBJECT_ID, ids.objectId);
  return t;
}

/** Bytes of the SHA-256 fingerprint records kept from schema version 14 on. */
export const LEGACY_FINGERPRINT_BYTES = 16;

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A merchant id as versions 14 and 15 stored it: a UUID as its 16 bytes, any other id as its UTF-8 text. */
export function legacyMerchantKey(merchantId: string): Buffer {
  return UUID_RE.test(merchantId) ? Buffer.from(merchantId.replaceAll('-', ''), 'hex') : Buffer.from(merchantId, 'utf8');
}

/** The merchant id a stored merchant key stands for (legacyMerchantKey's inverse). */
export function merchantIdOfLegacyKey(key: Buffer): string {
  if (key.length !== 16) return key.toString('utf8');
  const h = key.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** Version 15's 30-bit FNV-1a hash of merchant key, mode and key (its in-memory index was rebuilt from it). */
export function legacyKeyHash(merchant: Buffer, mode: string, key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < merchant.length; i++) h = Math.imul(h ^ merchant[i], 0x01000193);
  h = Math.imul(h ^ (mode === 'live' ? 1 : 0), 0x01000193);
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return (h >>> 2) & 0x3fffffff;
}

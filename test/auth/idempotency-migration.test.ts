/**
 * Idempotency records of older schema versions: the frozen reader of the compact form (src/platform/storage/sqlite/migrations-records.ts)
 * and databases of versions 5, 12, 13 and 15 upgraded by `kopek migrate`'s step (upgradeOldSqlite) to the current
 * layout (one record per merchant, mode and key under a UNIQUE constraint, the first answer kept as its JSON text).
 * Each builds the old layout by hand from records the real server made, upgrades it, restarts the server on it and checks that every key still
 * replays its first answer byte for byte and still refuses a different request.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { startTestServer, type TestServer } from '../helpers/server';
import { paidPayment } from '../helpers/money';
import { cardBody, KNOWN_BANK, sbpBody } from '../helpers/payouts';
import { openDatabase } from '../../src/platform/storage/sqlite/open';
import { sqliteOnly } from '../helpers/pg';
import { upgradeOldSqlite } from '../../src/platform/storage/sqlite/migrations-old';
import { decodeLegacyRecord, legacyKeyHash, legacyMerchantKey, merchantIdOfLegacyKey, namesShop, type LegacyRecordIds } from '../../src/platform/storage/sqlite/migrations-records';

const sbpItem = (amount: number, phone: string) => ({ amount, phone, bank_id: KNOWN_BANK, full_name: 'Anna Ivanova' });

const PAYMENTS = '/v1/public/payments';
const HOLDERS = ['payments', 'refunds', 'payouts', 'tokens', 'subscriptions'] as const;
type Holder = (typeof HOLDERS)[number];
/** What a payment's replay adds to its first answer: its current failure code and message, empty while it has none. */
const PAYMENT_MORE = ',"failure_code":"","failure_message":""';

// ---- the frozen reader ----

/** A test payment's answer and the bytes the encoder of versions 13 to 15 stored for it (made by that encoder). */
const V15_IDS = { objectId: '0b6a1c52-4e0f-4c1e-9a51-5d2f3c7b8e90', shopId: '7f3e2d1c-0b9a-4876-8543-210fedcba987', merchantId: '1a2b3c4d-5e6f-4a0b-8c1d-2e3f4a5b6c7d' };
const V15_PAYMENT_TEXT =
  '{"payment":{"id":"0b6a1c52-4e0f-4c1e-9a51-5d2f3c7b8e90","public_id":"P-42","merchant_id":"1a2b3c4d-5e6f-4a0b-8c1d-2e3f4a5b6c7d","shop_id":"7f3e2d1c-0b9a-4876-8543-210fedcba987","order_id":"A-1","amount":10000,"currency":"RUB","method":"any","status":"pending","expires_at":"2026-11-25T10:55:40.000Z","created_at":"2026-11-24T10:55:40.081Z","metadata":{"cart":"7","note":"é𝄞\\n\\"\\\\"}},"payment_url":"http://127.0.0.1:8080/pay/0b6a1c52-4e0f-4c1e-9a51-5d2f3c7b8e90","mode":"test","simulator":{"outcome":"succeeded","failure_code":"","actions":{"pay_page":"http://127.0.0.1:8080/pay/0b6a1c52-4e0f-4c1e-9a51-5d2f3c7b8e90","simulate":"http://127.0.0.1:8080/v1/test/payments/0b6a1c52-4e0f-4c1e-9a51-5d2f3c7b8e90/simulate","clock_advance":"http://127.0.0.1:8080/v1/test/clock/advance"}}}';
const V15_PAYMENT_STORED = Buffer.from(
  '0107020834320504060309412d311931303030302c2263757272656e63791f525542222c226d6574686f641f616e790b323032362d31312d32355431303a35353a34301e2c22637265617465645f61741f323032362d31312d32345431303a35353a34302e3038315a0d22636172741f37222c226e6f74651fc3a9f09d849e5c6e5c225c5c101d3132372e302e302e313a3830383017021173756363656564656412131d3132372e302e302e313a383038301702222c2273696d756c6174651f1d3132372e302e302e313a383038301402151d3132372e302e302e313a3830383016',
  'hex',
);
/** A payout batch's answer (no object id of its own, no shop id) and the bytes that encoder stored for it. */
const V15_BATCH_TEXT =
  '{"mode":"test","created":1,"failed":1,"total":2,"results":[{"index":0,"status":"created","payout_id":"0b6a1c52-4e0f-4c1e-9a51-5d2f3c7b8e90","method":"payouts_sbp","amount":1200},{"index":1,"status":"failed","method":"payouts_sbp","amount":1,"code":"invalid_parameter","error":"x"}]}';
const V15_BATCH_STORED = Buffer.from(
  '017b226d6f64651f74657374222c2263726561746564223a312c226661696c6564223a312c22746f74616c223a322c22726573756c7473223a5b7b22696e646578223a302c227374617475731f63726561746564222c227061796f75745f69641f30623661316335322d346530662d346331652d396135312d356432663363376238653930222c226d6574686f641f7061796f7574735f73627019313230307d2c7b22696e646578223a312c227374617475731f6661696c6564222c226d6574686f641f7061796f7574735f73627019312c22636f64651f696e76616c69645f706172616d65746572222c226572726f721f78227d5d7d',
  'hex',
);

test('decodeLegacyRecord reads the bytes the compact encoder of versions 13 to 15 wrote back to the exact text', () => {
  assert.equal(V15_PAYMENT_STORED[0], 0x01);
  assert.equal(decodeLegacyRecord(V15_PAYMENT_STORED, V15_IDS), V15_PAYMENT_TEXT);
  assert.ok(namesShop(V15_PAYMENT_STORED));
  assert.equal(decodeLegacyRecord(V15_BATCH_STORED, { objectId: null, shopId: V15_IDS.shopId, merchantId: V15_IDS.merchantId }), V15_BATCH_TEXT);
  assert.equal(namesShop(V15_BATCH_STORED), false, 'a batch answer names no shop');
  // Built by hand: the ids as the bytes 0x02 (object), 0x03 (shop), 0x04 (merchant), phrases as 0x05 + their index.
  const byHand = Buffer.concat([Buffer.from([0x01]), Buffer.from('\u001a\u0002\u0006\u0003\u0005\u0004\u0018paid\u0019500}')]);
  assert.equal(decodeLegacyRecord(byHand, V15_IDS), `{"id":"${V15_IDS.objectId}","shop_id":"${V15_IDS.shopId}","merchant_id":"${V15_IDS.merchantId}","status":"paid","amount":500}`);
});

test('decodeLegacyRecord returns a record that does not start with 0x01 as its text, as is', () => {
  const plain = '{"results":[],"note":"\\u0002 stays escaped"}';
  assert.equal(decodeLegacyRecord(Buffer.from(plain), V15_IDS), plain);
  assert.equal(namesShop(Buffer.from(plain)), false);
});

test('the merchant key and key hash of versions 14 and 15 are as those versions computed them', () => {
  const m = legacyMerchantKey(V15_IDS.merchantId);
  assert.equal(m.toString('hex'), '1a2b3c4d5e6f4a0b8c1d2e3f4a5b6c7d');
  assert.equal(merchantIdOfLegacyKey(m), V15_IDS.merchantId);
  assert.deepEqual(legacyMerchantKey('demo-merchant'), Buffer.from('demo-merchant'));
  assert.equal(merchantIdOfLegacyKey(Buffer.from('demo-merchant')), 'demo-merchant');
  assert.equal(legacyKeyHash(m, 'test', 'order-1'), 81388961);
  assert.equal(legacyKeyHash(m, 'live', 'order-1'), 894536101);
  assert.equal(legacyKeyHash(legacyMerchantKey('demo-merchant'), 'test', 'é-key'), 1017106592);
});

// ---- databases of older versions ----

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

/**
 * Work on the database file through a connection of its own (the server's belongs to the engine): to set up
 * a schema of an older version, or to read the schema itself.
 */
function onFile<T>(fn: (db: Database.Database) => T): T {
  const db = openDatabase(s.dbPath);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** The id of the object a create answer is about (a payment and a payout answer wrap it, a refund's is at the top). */
function idOf(body: any): string {
  const id = body.id ?? body.payment?.id ?? body.payout?.id ?? body.card?.id ?? body.subscription?.id;
  assert.equal(typeof id, 'string', JSON.stringify(body));
  return id;
}

function create(key: string, idem: string, body: unknown) {
  return s.request('POST', PAYMENTS, { key, body, headers: { 'idempotency-key': idem } });
}

/**
 * An answer in the compact form versions 6 to 15 wrote (read by decodeLegacyRecord): the byte 0x01, then the text
 * with the object's, shop's and merchant's ids as the bytes 0x02, 0x03 and 0x04 and a few fixed pieces as their
 * phrase bytes (0x05 + the phrase's index).
 */
function compactForm(json: string, ids: LegacyRecordIds): Buffer {
  let t = json;
  if (ids.objectId) t = t.replaceAll(ids.objectId, '\u0002');
  t = t.replaceAll(ids.shopId, '\u0003').replaceAll(ids.merchantId, '\u0004');
  const phrases: Array<[string, number]> = [
    ['{"payment":{"id":"', 0x07],
    ['","merchant_id":"', 0x05],
    ['","shop_id":"', 0x06],
    ['","status":"', 0x18],
    ['http://', 0x1d],
    ['":"', 0x1f],
  ];
  for (const [phrase, byte] of phrases) t = t.replaceAll(phrase, String.fromCharCode(byte));
  const stored = Buffer.concat([Buffer.from([0x01]), Buffer.from(t, 'utf8')]);
  assert.equal(decodeLegacyRecord(stored, ids), json, 'the fixture reads back as its text');
  return stored;
}

/** The current layout: one record per key under a UNIQUE constraint, no answer in the objects' rows. */
function assertCurrentLayout(): void {
  const { ddl, cols, answers, indexes } = onFile((db) => ({
    ddl: (db.prepare(`SELECT sql FROM sqlite_master WHERE name = 'idempotency_keys'`).get() as { sql: string }).sql,
    cols: (db.pragma('table_info(idempotency_keys)') as Array<{ name: string; type: string }>).map((c) => `${c.name} ${c.type}`),
    answers: HOLDERS.filter((t) => (db.pragma(`table_info(${t})`) as Array<{ name: string }>).some((c) => c.name === 'answer')),
    indexes: (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'idempotency_keys' AND sql IS NOT NULL`).all() as Array<{ name: string }>).map((r) => r.name),
  }));
  assert.deepEqual(cols, ['seq INTEGER', 'merchant_id TEXT', 'mode TEXT', 'key TEXT', 'fingerprint TEXT', 'answer TEXT', 'created_at INTEGER']);
  assert.match(ddl, /UNIQUE \(merchant_id, mode, key\)/);
  assert.doesNotMatch(ddl, /WITHOUT ROWID|AUTOINCREMENT/);
  assert.deepEqual(indexes, [], 'no index of an older layout is left');
  assert.deepEqual(answers, [], 'no object table keeps an answer column');
}

interface Record16 {
  seq: number;
  merchant_id: string;
  mode: string;
  key: string;
  fingerprint: string;
  answer: string;
  created_at: number;
}

function record(merchantId: string, key: string): Promise<Record16 | undefined> {
  return s.store.get<Record16>('SELECT seq, merchant_id, mode, key, fingerprint, answer, created_at FROM idempotency_keys WHERE merchant_id = ? AND key = ?', merchantId, key);
}

test('a database of schema version 5 converts its idempotency records; their replays answer the same bytes', { skip: sqliteOnly('a migration from an old SQLite schema version') }, async () => {
  const shop = await s.newShop();
  const first = await create(shop.key, 'k-migrated', { amount: 10000, order_id: 'MIG-1' });
  assert.equal(first.status, 201);
  const fingerprint = (await record(shop.merchantId, 'k-migrated'))!.fingerprint;
  // As version 5 left the table: WITHOUT ROWID, the fingerprint as hex text, the answer as JSON text.
  onFile((db) =>
    db
      .transaction(() => {
        db.exec(`CREATE TABLE idempotency_v3 (
      merchant_id TEXT NOT NULL, key TEXT NOT NULL, shop_id TEXT NOT NULL, mode TEXT NOT NULL CHECK (mode IN ('test', 'live')),
      request_hash TEXT NOT NULL, status INTEGER NOT NULL, response TEXT NOT NULL, created_at INTEGER NOT NULL,
      PRIMARY KEY (merchant_id, key)) STRICT, WITHOUT ROWID`);
        // Its fingerprints were whole SHA-256 digests, of which records now keep the first 16 bytes.
        db.prepare(`INSERT INTO idempotency_v3 SELECT merchant_id, key, ?, mode, upper(fingerprint) || hex(randomblob(16)), 201, ?, created_at FROM idempotency_keys WHERE merchant_id = ? AND key = ?`).run(
          shop.shopId,
          first.text,
          shop.merchantId,
          'k-migrated',
        );
        db.exec('DROP TABLE idempotency_keys; ALTER TABLE idempotency_v3 RENAME TO idempotency_keys');
        db.pragma('user_version = 5');
      })
      .immediate(),
  );
  upgradeOldSqlite(s.dbPath);
  await s.restart();
  assertCurrentLayout();
  const rec = (await record(shop.merchantId, 'k-migrated'))!;
  assert.deepEqual({ fingerprint: rec.fingerprint, answer: rec.answer, mode: rec.mode }, { fingerprint, answer: first.text, mode: 'test' });
  const again = await create(shop.key, 'k-migrated', { amount: 10000, order_id: 'MIG-1' });
  assert.equal(again.status, 200);
  assert.equal(again.text, first.text.slice(0, -1) + PAYMENT_MORE + ',"idempotent":true}');
  assert.equal((await create(shop.key, 'k-migrated', { amount: 10000, order_id: 'MIG-2' })).status, 409);
  // New records go on being written next to the converted one.
  const next = await create(shop.key, 'k-after', { amount: 10000 });
  assert.equal(next.status, 201);
  assert.equal((await record(shop.merchantId, 'k-after'))!.answer, next.text);
});

test('a database of schema version 12 keeps its compact records in their own rows; their replays answer the same bytes', { skip: sqliteOnly('a migration from an old SQLite schema version') }, async () => {
  const shop = await s.newShop();
  const body = { amount: 10000, order_id: 'V12-1', metadata: { cart: '12' } };
  const first = await create(shop.key, 'k-v12', body);
  assert.equal(first.status, 201);
  const fingerprint = (await record(shop.merchantId, 'k-v12'))!.fingerprint;
  const stored = compactForm(first.text, { objectId: first.body.payment.id, shopId: shop.shopId, merchantId: shop.merchantId });
  assert.ok([0x02, 0x03, 0x04].every((b) => stored.includes(b)), 'the fixture marks the object, the shop and the merchant');
  // As version 12 left it: records in rowid order under a unique index of their key, the compact answer in the
  // record with the shop's id in a column of its own; no answer column in the objects' tables.
  onFile((db) =>
    db
      .transaction(() => {
        db.exec(`CREATE TABLE idempotency_v12 (
      id INTEGER PRIMARY KEY, merchant_id TEXT NOT NULL, key TEXT NOT NULL, shop_id TEXT NOT NULL, mode TEXT NOT NULL CHECK (mode IN ('test', 'live')),
      request_hash BLOB NOT NULL, status INTEGER NOT NULL, object_id TEXT, response BLOB NOT NULL, created_at INTEGER NOT NULL) STRICT`);
        db.prepare(
          `INSERT INTO idempotency_v12 (merchant_id, key, shop_id, mode, request_hash, status, object_id, response, created_at)
       SELECT merchant_id, key, ?, mode, unhex(fingerprint || hex(randomblob(16))), 201, ?, ?, created_at FROM idempotency_keys WHERE merchant_id = ? AND key = ?`,
        ).run(shop.shopId, first.body.payment.id, stored, shop.merchantId, 'k-v12');
        db.exec(`DROP TABLE idempotency_keys; ALTER TABLE idempotency_v12 RENAME TO idempotency_keys;
      CREATE UNIQUE INDEX idempotency_keys_key ON idempotency_keys(merchant_id, mode, key)`);
        db.pragma('user_version = 12');
      })
      .immediate(),
  );
  upgradeOldSqlite(s.dbPath);
  await s.restart();
  assertCurrentLayout();
  assert.equal(onFile((db) => db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'idempotency_keys_key'`).get()), undefined);
  const rec = await record(shop.merchantId, 'k-v12');
  assert.ok(rec, 'the record of version 12 is kept');
  assert.deepEqual({ fingerprint: rec.fingerprint, answer: rec.answer }, { fingerprint, answer: first.text }, 'the compact answer read back as the text first sent');
  const again = await create(shop.key, 'k-v12', body);
  assert.equal(again.status, 200);
  assert.equal(again.text, first.text.slice(0, -1) + PAYMENT_MORE + ',"idempotent":true}');
  assert.equal((await create(shop.key, 'k-v12', { ...body, amount: 10001 })).status, 409);
  // New records keep their answers as their text, in the record.
  const next = await create(shop.key, 'k-v12-next', body);
  assert.equal(next.status, 201);
  assert.equal((await record(shop.merchantId, 'k-v12-next'))!.answer, next.text);
  assert.equal((await create(shop.key, 'k-v12-next', body)).text, next.text.slice(0, -1) + PAYMENT_MORE + ',"idempotent":true}');
});

test('a database of schema version 13 (merchant as text, whole digests, answers in the objects\' rows) converts; replays answer the same bytes', { skip: sqliteOnly('a migration from an old SQLite schema version') }, async () => {
  const shop = await s.newShop();
  const body = { amount: 10000, order_id: 'V13-1', metadata: { cart: '13' } };
  const first = await create(shop.key, 'k-v13', body);
  assert.equal(first.status, 201);
  const batch = { method: 'payouts_sbp', items: [sbpItem(1400, '+79000000003')] };
  const headers = { 'idempotency-key': 'k-v13-batch' };
  const firstBatch = await s.request('POST', '/v1/public/payouts/batch', { key: shop.key, body: batch, headers });
  assert.equal(firstBatch.status, 201);
  const before = { payment: (await record(shop.merchantId, 'k-v13'))!, batch: (await record(shop.merchantId, 'k-v13-batch'))! };
  // As version 13 left it: the merchant's id as text and the whole SHA-256 digest, of which the first 16 bytes are
  // what a record now keeps; a payment's answer compact in its row, a batch's (no row of its own) in the record.
  onFile((db) =>
    db
      .transaction(() => {
        for (const t of HOLDERS) db.exec(`ALTER TABLE ${t} ADD COLUMN answer BLOB`);
        db.exec(`ALTER TABLE idempotency_keys RENAME TO idempotency_v16;
CREATE TABLE idempotency_keys (
  merchant_id TEXT NOT NULL, mode TEXT NOT NULL CHECK (mode IN ('test', 'live')), key TEXT NOT NULL, request_hash BLOB NOT NULL,
  holder TEXT CHECK (holder IN ('payments', 'refunds', 'payouts', 'tokens', 'subscriptions')), holder_seq INTEGER, answer BLOB, object_id TEXT,
  created_at INTEGER NOT NULL, PRIMARY KEY (merchant_id, mode, key),
  CHECK ((holder IS NULL) = (holder_seq IS NULL) AND (holder IS NULL) = (answer IS NOT NULL))) STRICT, WITHOUT ROWID`);
        const insert = db.prepare(
          `INSERT INTO idempotency_keys (merchant_id, mode, key, request_hash, holder, holder_seq, answer, object_id, created_at)
           SELECT merchant_id, mode, key, unhex(fingerprint || hex(randomblob(16))), ?, ?, ?, ?, created_at FROM idempotency_v16 WHERE merchant_id = ? AND key = ?`,
        );
        const paymentSeq = (db.prepare('SELECT seq FROM payments WHERE id = ?').get(first.body.payment.id) as { seq: number }).seq;
        db.prepare('UPDATE payments SET answer = ? WHERE seq = ?').run(compactForm(first.text, { objectId: first.body.payment.id, shopId: shop.shopId, merchantId: shop.merchantId }), paymentSeq);
        insert.run('payments', paymentSeq, null, null, shop.merchantId, 'k-v13');
        insert.run(null, null, compactForm(firstBatch.text, { objectId: null, shopId: shop.shopId, merchantId: shop.merchantId }), null, shop.merchantId, 'k-v13-batch');
        db.exec('DROP TABLE idempotency_v16');
        db.pragma('user_version = 13');
      })
      .immediate(),
  );
  upgradeOldSqlite(s.dbPath);
  await s.restart();
  assertCurrentLayout();
  for (const [key, was, text] of [
    ['k-v13', before.payment, first.text],
    ['k-v13-batch', before.batch, firstBatch.text],
  ] as const) {
    const rec = await record(shop.merchantId, key);
    assert.ok(rec, key);
    assert.deepEqual({ mode: rec.mode, fingerprint: rec.fingerprint, answer: rec.answer, created_at: rec.created_at }, { mode: 'test', fingerprint: was.fingerprint, answer: text, created_at: was.created_at }, key);
  }
  const again = await create(shop.key, 'k-v13', body);
  assert.equal(again.status, 200);
  assert.equal(again.text, first.text.slice(0, -1) + PAYMENT_MORE + ',"idempotent":true}');
  assert.equal((await create(shop.key, 'k-v13', { ...body, amount: 10001 })).status, 409);
  const batchAgain = await s.request('POST', '/v1/public/payouts/batch', { key: shop.key, body: batch, headers });
  assert.equal(batchAgain.status, 200);
  assert.equal(batchAgain.text, firstBatch.text.slice(0, -1) + ',"idempotent":true}');
  // A new key after the conversion is stored in the same form and replays too.
  const next = await create(shop.key, 'k-v13-next', body);
  assert.equal(next.status, 201);
  assert.equal((await create(shop.key, 'k-v13-next', body)).status, 200);
});

/** Where a test puts a record's answer in a database of version 15, and in which form. */
type Placement = { holder: Holder; id: string; stored: Buffer } | { holder: null; objectId: string | null; stored: Buffer };

/**
 * Rewrite the database as version 15 had it: records in the order made under an AUTOINCREMENT seq, the merchant
 * as its 16 bytes, the key's hash, the fingerprint as 16 bytes, the answer in the row of the object the request
 * created (`answer BLOB` of payments, refunds, payouts, tokens and subscriptions) or, where no row holds it, in
 * the record. Records of `merchantId` named in `places` are placed so; every other record keeps its answer as
 * plain text in the record (as migration 12 → 13 left those of before).
 */
function rewriteAsVersion15(merchantId: string, places: Map<string, Placement>): void {
  onFile((db) =>
    db
      .transaction(() => {
        const records = db.prepare('SELECT seq, merchant_id, mode, key, fingerprint, answer, created_at FROM idempotency_keys ORDER BY seq').all() as Record16[];
        db.exec(`ALTER TABLE idempotency_keys RENAME TO idempotency_v16;
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
) STRICT;`);
        for (const t of HOLDERS) db.exec(`ALTER TABLE ${t} ADD COLUMN answer BLOB`);
        const insert = db.prepare(
          `INSERT INTO idempotency_keys (seq, merchant_id, mode, key, key_hash, request_hash, holder, holder_seq, answer, object_id, created_at)
           VALUES (?, ?, ?, ?, ?, unhex(?), ?, ?, ?, ?, ?)`,
        );
        const placed = new Set<string>();
        for (const r of records) {
          const merchant = legacyMerchantKey(r.merchant_id);
          const place = r.merchant_id === merchantId ? places.get(r.key) : undefined;
          let holder: Holder | null = null;
          let holderSeq: number | null = null;
          let answer: Buffer | null = Buffer.from(r.answer, 'utf8');
          let objectId: string | null = null;
          if (place?.holder) {
            const row = db.prepare(`SELECT seq FROM ${place.holder} WHERE id = ?`).get(place.id) as { seq: number } | undefined;
            assert.ok(row, `${place.holder} ${place.id}`);
            db.prepare(`UPDATE ${place.holder} SET answer = ? WHERE seq = ?`).run(place.stored, row.seq);
            [holder, holderSeq, answer] = [place.holder, row.seq, null];
          } else if (place) {
            [answer, objectId] = [place.stored, place.objectId];
          }
          if (place) placed.add(r.key);
          insert.run(r.seq, merchant, r.mode, r.key, legacyKeyHash(merchant, r.mode, r.key), r.fingerprint, holder, holderSeq, answer, objectId, r.created_at);
        }
        assert.deepEqual([...placed].sort(), [...places.keys()].sort(), 'every placed record was found');
        db.exec('DROP TABLE idempotency_v16');
        db.pragma('user_version = 15');
      })
      .immediate(),
  );
}

test('a database of schema version 15 (answers in the objects\' rows, compact or plain) converts to one record per key; every key replays the same bytes', { skip: sqliteOnly('a migration from an old SQLite schema version') }, async () => {
  const shop = await s.newShop();
  const ids = (objectId: string | null): LegacyRecordIds => ({ objectId, shopId: shop.shopId, merchantId: shop.merchantId });
  const paid = await paidPayment(s, shop.key, 500_000);
  interface Made {
    key: string;
    path: string;
    body: Record<string, unknown>;
    other: Record<string, unknown>;
    more: string;
    first: { text: string; body: any };
    place: (first: { text: string; body: any }) => Placement;
  }
  const plan: Array<Omit<Made, 'first'>> = [
    // A payment's answer compact in its row: ids as markers (0x02 object, 0x03 shop, 0x04 merchant) and phrases.
    {
      key: 'v15-payment-compact',
      path: PAYMENTS,
      body: { amount: 10000, order_id: 'V15-1', metadata: { cart: '15' } },
      other: { amount: 10001, order_id: 'V15-1', metadata: { cart: '15' } },
      more: PAYMENT_MORE,
      place: (f) => {
        const stored = compactForm(f.text, ids(f.body.payment.id));
        assert.ok([0x02, 0x03, 0x04].every((b) => stored.includes(b)), 'the fixture marks the object, the shop and the merchant');
        return { holder: 'payments', id: f.body.payment.id, stored };
      },
    },
    // A payment's answer as plain text in its row.
    {
      key: 'v15-payment-plain',
      path: PAYMENTS,
      body: { amount: 12000, order_id: 'V15-2' },
      other: { amount: 12000, order_id: 'V15-3' },
      more: PAYMENT_MORE,
      place: (f) => ({ holder: 'payments', id: f.body.payment.id, stored: Buffer.from(f.text) }),
    },
    // A payment's answer as plain text in the record, no object id: a record of before the compact form.
    {
      key: 'v15-payment-in-record',
      path: PAYMENTS,
      body: { amount: 13000, order_id: 'V15-4' },
      other: { amount: 13001, order_id: 'V15-4' },
      more: PAYMENT_MORE,
      place: (f) => ({ holder: null, objectId: null, stored: Buffer.from(f.text) }),
    },
    {
      key: 'v15-refund',
      path: `${PAYMENTS}/${paid}/refund`,
      body: { amount: 100, reason: 'v15' },
      other: { amount: 101, reason: 'v15' },
      more: '',
      place: (f) => ({ holder: 'refunds', id: idOf(f.body), stored: compactForm(f.text, ids(idOf(f.body))) }),
    },
    {
      key: 'v15-payout',
      path: '/v1/public/payouts',
      body: sbpBody(1000),
      other: sbpBody(1001),
      more: '',
      place: (f) => ({ holder: 'payouts', id: idOf(f.body), stored: Buffer.from(f.text) }),
    },
    {
      key: 'v15-card-payout',
      path: '/v1/public/payouts',
      body: cardBody(1100),
      other: cardBody(1101),
      more: '',
      place: (f) => ({ holder: 'payouts', id: idOf(f.body), stored: compactForm(f.text, ids(idOf(f.body))) }),
    },
    // A batch has no row of its own: its answer is in the record, compact (phrases; it names no object nor shop).
    {
      key: 'v15-batch',
      path: '/v1/public/payouts/batch',
      body: { method: 'payouts_sbp', items: [sbpItem(1200, '+79000000001'), sbpItem(1300, '+79000000002'), { amount: 1 }] },
      other: { method: 'payouts_sbp', items: [sbpItem(1200, '+79000000001')] },
      more: '',
      place: (f) => ({ holder: null, objectId: null, stored: compactForm(f.text, ids(null)) }),
    },
    {
      key: 'v15-token',
      path: '/v1/public/tokens',
      body: { customer_ref: 'cust-v15', customer_email: 'v15@example.com' },
      other: { customer_ref: 'cust-v15-other', customer_email: 'v15@example.com' },
      more: '',
      place: (f) => ({ holder: 'tokens', id: idOf(f.body), stored: compactForm(f.text, ids(idOf(f.body))) }),
    },
    {
      key: 'v15-subscription',
      path: '/v1/public/subscriptions',
      body: { amount: 49900, customer_ref: 'cust-v15-sub', period: 'month', plan_name: 'Pro' },
      other: { amount: 49901, customer_ref: 'cust-v15-sub', period: 'month', plan_name: 'Pro' },
      more: '',
      place: (f) => ({ holder: 'subscriptions', id: idOf(f.body), stored: Buffer.from(f.text) }),
    },
  ];
  const made: Made[] = [];
  for (const p of plan) {
    const first = await s.request('POST', p.path, { key: shop.key, body: p.body, headers: { 'idempotency-key': p.key } });
    assert.equal(first.status, 201, `${p.key}: ${first.text}`);
    made.push({ ...p, first });
  }
  const before = new Map<string, Record16>();
  for (const m of made) before.set(m.key, (await record(shop.merchantId, m.key))!);
  const total = (await s.store.get<{ n: number }>('SELECT count(*) AS n FROM idempotency_keys'))!.n;
  const objects = async () => {
    const n: Record<string, number> = {};
    for (const t of HOLDERS) n[t] = (await s.store.get<{ n: number }>(`SELECT count(*) AS n FROM ${t} WHERE shop_id = ?`, shop.shopId))!.n;
    return n;
  };
  const objectsBefore = await objects();
  const places = new Map(made.map((m) => [m.key, m.place(m.first)]));
  assert.ok([...places.values()].some((p) => p.holder !== null && p.stored[0] === 0x01), 'one record at least is compact in its holder row');
  rewriteAsVersion15(shop.merchantId, places);
  // Read without openDatabase, which would migrate the file itself.
  const raw = new Database(s.dbPath, { readonly: true });
  try {
    assert.equal(raw.pragma('user_version', { simple: true }), 15);
  } finally {
    raw.close();
  }

  upgradeOldSqlite(s.dbPath);
  await s.restart();
  assertCurrentLayout();
  // Every record converted, none lost (this shop's and those of the other tests, kept plain in their records).
  assert.deepEqual(await s.store.get('SELECT count(*) AS n FROM idempotency_keys'), { n: total });
  for (const m of made) {
    const rec = await record(shop.merchantId, m.key);
    assert.ok(rec, m.key);
    assert.deepEqual(rec, { ...before.get(m.key)!, answer: m.first.text }, `${m.key}: the same record, its answer the text first sent`);
    const again = await s.request('POST', m.path, { key: shop.key, body: m.body, headers: { 'idempotency-key': m.key } });
    assert.equal(again.status, 200, `${m.key}: ${again.text}`);
    assert.equal(again.text, m.first.text.slice(0, -1) + m.more + ',"idempotent":true}', m.key);
    const other = await s.request('POST', m.path, { key: shop.key, body: m.other, headers: { 'idempotency-key': m.key } });
    assert.equal(other.status, 409, `${m.key}: ${other.text}`);
    assert.equal(other.body.error.code, 'idempotent_conflict', m.key);
  }
  // Nothing new was made by the replays.
  assert.deepEqual(await objects(), objectsBefore);
  // A new key after the conversion is a new record, as text.
  const next = await create(shop.key, 'v15-next', { amount: 10000 });
  assert.equal(next.status, 201);
  assert.equal((await record(shop.merchantId, 'v15-next'))!.answer, next.text);
  assert.equal((await create(shop.key, 'v15-next', { amount: 10000 })).status, 200);
});

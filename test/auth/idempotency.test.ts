import { test, before, after } from 'node:test';
import { existsSync, readFileSync } from 'node:fs';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer, type TestShop } from '../helpers/server';
import { createKey, createShop } from '../../src/cabinet/store';
import { paidPayment } from '../helpers/money';
import { activeToken } from '../helpers/recurrent';
import { cardBody, KNOWN_BANK, sbpBody } from '../helpers/payouts';
import { merchantKey } from '../../src/auth/idempotency-record';
import { keyHash, KEY_INDEX_LOAD_SLICE } from '../../src/auth/key-index';
import { openDatabase } from '../../src/db/open';
import type Database from 'better-sqlite3';

const sbpItem = (amount: number, phone: string) => ({ amount, phone, bank_id: KNOWN_BANK, full_name: 'Anna Ivanova' });

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

const PAYMENTS = '/v1/public/payments';

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

function create(key: string, idem: string | undefined, body: unknown) {
  return s.request('POST', PAYMENTS, { key, body, headers: idem === undefined ? {} : { 'idempotency-key': idem } });
}

async function paymentCount(shop: TestShop): Promise<number> {
  const r = await s.request('GET', `${PAYMENTS}?limit=200`, { key: shop.key });
  assert.equal(r.status, 200);
  return r.body.items.length;
}

test('a replay answers 200 with the stored body and "idempotent": true; nothing new is created', async () => {
  const shop = await s.newShop();
  const first = await create(shop.key, 'order-1', { amount: 10000, order_id: 'A-1' });
  assert.equal(first.status, 201);
  assert.equal(first.body.idempotent, undefined);
  const again = await create(shop.key, 'order-1', { order_id: 'A-1', amount: 10000 });
  assert.equal(again.status, 200);
  assert.equal(again.body.idempotent, true);
  assert.equal(again.body.payment.id, first.body.payment.id);
  assert.deepEqual(again.body.payment, first.body.payment);
  assert.equal(await paymentCount(shop), 1);
});

test('the same key with a different body is 409 idempotent_conflict quoting the key', async () => {
  const shop = await s.newShop();
  assert.equal((await create(shop.key, 'k-conflict', { amount: 10000 })).status, 201);
  const r = await create(shop.key, 'k-conflict', { amount: 10001 });
  assert.equal(r.status, 409);
  assert.equal(r.body.error.code, 'idempotent_conflict');
  assert.match(r.body.error.message, /"k-conflict"/);
  assert.equal(await paymentCount(shop), 1);
});

/** The canonical text of a body as records have always fingerprinted it: keys sorted at every level, by code unit. */
function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
    .join(',')}}`;
}

test('a record keeps the fingerprint of the canonical body (keys sorted at every level), so records of earlier versions still match', async () => {
  const shop = await s.newShop();
  const { createHash } = await import('node:crypto');
  const fingerprint = (route: string, body: unknown) => createHash('sha256').update(`${shop.shopId} test POST ${route} {}\n${canonicalJson(body)}`).digest().subarray(0, 16);
  const stored = async (key: string) => (await s.store.get<{ request_hash: Buffer }>('SELECT request_hash FROM idempotency_keys WHERE key = ?', key))!.request_hash;
  // Integer-like keys, which an object lists first and in numeric order, sort here as text.
  const payment = { metadata: { b: 'x', '10': 'ten', '9': 'nine', A: 'upper', é: 'accent' }, order_id: 'CANON-1', amount: 10000 };
  const first = await create(shop.key, 'k-canonical', payment);
  assert.equal(first.status, 201, first.text);
  assert.deepEqual(await stored('k-canonical'), fingerprint(PAYMENTS, payment));
  const reordered = { amount: 10000, order_id: 'CANON-1', metadata: { '9': 'nine', é: 'accent', A: 'upper', '10': 'ten', b: 'x' } };
  const again = await create(shop.key, 'k-canonical', reordered);
  assert.equal(again.status, 200, again.text);
  assert.equal(again.body.idempotent, true);
  // Objects inside an array are sorted too; the array keeps its order.
  const items = [
    { phone: '+79000000004', amount: 1500, full_name: 'Anna Ivanova', bank_id: KNOWN_BANK },
    { full_name: 'Boris Petrov', amount: 1600, bank_id: KNOWN_BANK, phone: '+79000000005' },
  ];
  const batch = { items, method: 'payouts_sbp' };
  const headers = { 'idempotency-key': 'k-canonical-batch' };
  assert.equal((await s.request('POST', '/v1/public/payouts/batch', { key: shop.key, body: batch, headers })).status, 201);
  assert.deepEqual(await stored('k-canonical-batch'), fingerprint('/v1/public/payouts/batch', batch));
  const sameItems = { method: 'payouts_sbp', items: items.map((i) => ({ bank_id: i.bank_id, amount: i.amount, phone: i.phone, full_name: i.full_name })) };
  assert.equal((await s.request('POST', '/v1/public/payouts/batch', { key: shop.key, body: sameItems, headers })).status, 200);
  assert.equal((await s.request('POST', '/v1/public/payouts/batch', { key: shop.key, body: { ...batch, items: [items[1], items[0]] }, headers })).status, 409);
});

test('Idempotency-Key: 64 characters are accepted, 65 are 400 naming the header, empty is 400', async () => {
  const shop = await s.newShop();
  assert.equal((await create(shop.key, 'k'.repeat(64), { amount: 10000 })).status, 201);
  const long = await create(shop.key, 'k'.repeat(65), { amount: 10000 });
  assert.equal(long.status, 400);
  assert.equal(long.body.error.code, 'bad_request');
  assert.equal(long.body.error.param, 'Idempotency-Key');
  const empty = await create(shop.key, '', { amount: 10000 });
  assert.equal(empty.status, 400);
  assert.equal(await paymentCount(shop), 1);
});

test('keys are scoped per merchant: the same key in two merchants makes two objects', async () => {
  const a = await s.newShop();
  const b = await s.newShop();
  const ra = await create(a.key, 'shared-key', { amount: 10000 });
  const rb = await create(b.key, 'shared-key', { amount: 10000 });
  assert.equal(ra.status, 201);
  assert.equal(rb.status, 201);
  assert.notEqual(ra.body.payment.id, rb.body.payment.id);
  assert.equal(rb.body.payment.shop_id, b.shopId);
});

test('another shop of the same merchant reusing a key gets a conflict, never the first shop\'s object', async () => {
  const a = await s.newShop();
  const shop2 = await createShop(s.store, a.merchantId, 'Second shop', undefined, Date.now());
  const key2 = (await createKey(s.store, shop2.id, 'test', undefined, Date.now())).secret;
  assert.equal((await create(a.key, 'merchant-wide', { amount: 10000 })).status, 201);
  const r = await create(key2, 'merchant-wide', { amount: 10000 });
  assert.equal(r.status, 409);
  assert.equal(r.body.error.code, 'idempotent_conflict');
});

test('a key used by a test key is free for the same shop\'s live key: test and live are separate namespaces, as separate books', async () => {
  const a = await s.newShop();
  await s.store.write(async (tx) => {
    await tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', a.merchantId);
  });
  const live = await s.newKey(a.shopId, 'live');
  const t = await create(a.key, 'order-77', { amount: 10000 });
  const l = await create(live.key, 'order-77', { amount: 10000 });
  assert.equal(t.status, 201);
  assert.equal(l.status, 201, 'not 409: the live book has never seen this key');
  assert.notEqual(l.body.payment.id, t.body.payment.id);
  assert.equal(l.body.mode, 'live');
  // Each mode replays its own object.
  assert.equal((await create(live.key, 'order-77', { amount: 10000 })).body.payment.id, l.body.payment.id);
  assert.equal((await create(a.key, 'order-77', { amount: 10000 })).body.payment.id, t.body.payment.id);
});

test('two different cards with the same last four digits under one key are two requests: the second is 409, never a replay of the first payout', async () => {
  const shop = await s.newShop();
  await paidPayment(s, shop.key, 50_000);
  const first = await s.request('POST', '/v1/public/payouts', { key: shop.key, body: cardBody(1_000, { card_pan: '4111111111111111' }), headers: { 'Idempotency-Key': 'card-key' } });
  assert.equal(first.status, 201, first.text);
  const replay = await s.request('POST', '/v1/public/payouts', { key: shop.key, body: cardBody(1_000, { card_pan: '4111111111111111' }), headers: { 'Idempotency-Key': 'card-key' } });
  assert.equal(replay.status, 200);
  assert.equal(replay.body.payout.id, first.body.payout.id);
  const other = await s.request('POST', '/v1/public/payouts', { key: shop.key, body: cardBody(1_000, { card_pan: '2200000000081111' }), headers: { 'Idempotency-Key': 'card-key' } });
  assert.equal(other.status, 409, 'another card is another request');
  assert.equal(other.body.error.code, 'idempotent_conflict');
  // Nothing stored reveals the number: not in clear, not as a plain SHA-256 of it.
  const { createHash } = await import('node:crypto');
  const bytes = readFileSync(s.dbPath).toString('latin1') + (existsSync(`${s.dbPath}-wal`) ? readFileSync(`${s.dbPath}-wal`).toString('latin1') : '');
  assert.ok(!bytes.includes('4111111111111111'));
  assert.ok(!bytes.includes(createHash('sha256').update('4111111111111111').digest('hex')));
});

test('a refused create stores no record: the key can be used again with a valid body', async () => {
  const shop = await s.newShop();
  const bad = await create(shop.key, 'k-retry', { amount: -5 });
  assert.equal(bad.status, 400);
  const good = await create(shop.key, 'k-retry', { amount: 10000 });
  assert.equal(good.status, 201);
});

test('concurrent identical requests make one object; the others are replays of it', async () => {
  const shop = await s.newShop();
  const results = await Promise.all(Array.from({ length: 6 }, () => create(shop.key, 'k-race', { amount: 25000 })));
  const statuses = results.map((r) => r.status).sort();
  assert.deepEqual(statuses, [200, 200, 200, 200, 200, 201]);
  assert.equal(new Set(results.map((r) => r.body.payment.id)).size, 1);
  assert.equal(await paymentCount(shop), 1);
});

test('without an Idempotency-Key identical requests make separate objects', async () => {
  const shop = await s.newShop();
  const [x, y] = await Promise.all([create(shop.key, undefined, { amount: 10000 }), create(shop.key, undefined, { amount: 10000 })]);
  assert.equal(x.status, 201);
  assert.equal(y.status, 201);
  assert.notEqual(x.body.payment.id, y.body.payment.id);
  assert.equal(await paymentCount(shop), 2);
});

test('the record survives a restart', async () => {
  const shop = await s.newShop();
  const first = await create(shop.key, 'k-durable', { amount: 10000 });
  await s.restart();
  const again = await create(shop.key, 'k-durable', { amount: 10000 });
  assert.equal(again.status, 200);
  assert.equal(again.body.payment.id, first.body.payment.id);
});

test('records are kept in the order they are made; after a restart every key is found again, past the first slice the index reads', async () => {
  const shop = await s.newShop();
  const { randomUUID } = await import('node:crypto');
  // More records before these than the index reads in one slice at start (made straight in the table).
  await s.store.tx(async (tx) => {
    for (let i = 0; i < KEY_INDEX_LOAD_SLICE + 5; i++) {
      await tx.run(
        `INSERT INTO idempotency_keys (merchant_id, mode, key, key_hash, request_hash, answer, created_at) VALUES (CAST('m-filler' AS BLOB), 'test', ?, ?, zeroblob(16), CAST('{}' AS BLOB), ?)`,
        `filler-${i}`,
        keyHash(Buffer.from('m-filler'), 'test', `filler-${i}`),
        Date.now(),
      );
    }
  });
  const keys = Array.from({ length: 12 }, () => randomUUID());
  const firsts = [];
  for (const [i, k] of keys.entries()) {
    const r = await create(shop.key, k, { amount: 10_000 + i });
    assert.equal(r.status, 201, r.text);
    firsts.push(r.body.payment.id as string);
  }
  const seqs: number[] = [];
  for (const k of keys) seqs.push((await s.store.get<{ seq: number }>('SELECT seq FROM idempotency_keys WHERE key = ?', k))!.seq);
  assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), 'random keys, records in the order made');
  assert.ok(seqs[0] > KEY_INDEX_LOAD_SLICE);
  await s.restart();
  for (const [i, k] of keys.entries()) {
    const again = await create(shop.key, k, { amount: 10_000 + i });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.payment.id, firsts[i]);
  }
  assert.equal((await create(shop.key, keys[0], { amount: 1 })).status, 409);
  await s.store.tx((tx) => tx.run(`DELETE FROM idempotency_keys WHERE merchant_id = CAST('m-filler' AS BLOB)`));
});

test('two keys of one merchant with the same hash in the index are two records: each replays its own payment', async () => {
  const shop = await s.newShop();
  const merchant = merchantKey(shop.merchantId);
  // Birthday search over the index's 30-bit hash: a pair turns up within a few tens of thousands of keys.
  const seen = new Map<number, string>();
  let pair: [string, string] | null = null;
  for (let i = 0; pair === null; i++) {
    const k = `collide-${i}`;
    const h = keyHash(merchant, 'test', k);
    const other = seen.get(h);
    if (other !== undefined) pair = [other, k];
    else seen.set(h, k);
  }
  const [k1, k2] = pair;
  const a = await create(shop.key, k1, { amount: 11_111 });
  assert.equal(a.status, 201, a.text);
  const b = await create(shop.key, k2, { amount: 22_222 });
  assert.equal(b.status, 201, 'another key, not a replay nor a conflict of the first');
  assert.notEqual(b.body.payment.id, a.body.payment.id);
  for (const [k, first, amount] of [[k1, a, 11_111], [k2, b, 22_222]] as const) {
    const again = await create(shop.key, k, { amount });
    assert.equal(again.status, 200);
    assert.equal(again.body.payment.id, first.body.payment.id);
  }
  await s.restart();
  assert.equal((await create(shop.key, k2, { amount: 22_222 })).body.payment.id, b.body.payment.id);
  assert.equal((await create(shop.key, k1, { amount: 22_222 })).status, 409);
});

test('a replay is the first answer byte for byte, plus "idempotent": true, on every create route; the record is compact', async () => {
  const shop = await s.newShop();
  const paid = await paidPayment(s, shop.key, 500_000);
  const token = await activeToken(s, { customer_ref: 'cust-bytes' }, shop.key);
  // A token charge's replay tells where the charge stands now: its first answer with the current status.
  const nowStatus = async (text: string) => {
    const id = JSON.parse(text).id as string;
    const status = (await s.request('GET', `${PAYMENTS}/${id}`, { key: shop.key })).body.status as string;
    return text.replace(/"status":"[a-z_]+"/, `"status":"${status}"`);
  };
  const routes: Array<{ path: string; body: Record<string, unknown>; more?: string; now?: (text: string) => Promise<string> }> = [
    // A payment replay also carries its current failure code and message, empty while it has none.
    { path: PAYMENTS, body: { amount: 10000, order_id: 'B-1', description: 'Bytes', metadata: { cart: '7' } }, more: ',"failure_code":"","failure_message":""' },
    { path: `${PAYMENTS}/${paid}/refund`, body: { amount: 100, reason: 'bytes' } },
    { path: '/v1/public/payouts', body: sbpBody(1000) },
    { path: '/v1/public/payouts', body: cardBody(1100) },
    { path: '/v1/public/payouts/batch', body: { method: 'payouts_sbp', items: [sbpItem(1200, '+79000000001'), sbpItem(1300, '+79000000002'), { amount: 1 }] } },
    { path: '/v1/public/tokens', body: { customer_ref: 'cust-bytes-2', customer_email: 'b@example.com' } },
    { path: '/v1/public/subscriptions', body: { amount: 49900, customer_ref: 'cust-bytes-3', period: 'month', plan_name: 'Pro' } },
    { path: `/v1/public/tokens/${token.id}/charge`, body: { amount: 2500, order_id: 'renewal-1' }, now: nowStatus },
  ];
  for (const [n, r] of routes.entries()) {
    const headers = { 'idempotency-key': `bytes-${n}` };
    const first = await s.request('POST', r.path, { key: shop.key, body: r.body, headers });
    assert.equal(first.status, 201, `${r.path}: ${first.text}`);
    // Let a charge settle first, so that the status the replay shows cannot change before it is compared.
    if (r.now) assert.equal((await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: 10 } })).status, 200);
    const again = await s.request('POST', r.path, { key: shop.key, body: r.body, headers });
    assert.equal(again.status, 200, `${r.path}: ${again.text}`);
    const answer = r.now ? await r.now(first.text) : first.text;
    assert.equal(again.text, answer.slice(0, -1) + (r.more ?? '') + ',"idempotent":true}', r.path);
    // Stored compactly, in the row of the object the request created (a batch, which has none, in its record): the
    // ids the rows keep in columns are not repeated in the stored answer.
    const rec = (await s.store.get<{ holder: string | null; holder_seq: number | null; answer: Buffer | null; object_id: string | null }>(
      'SELECT holder, holder_seq, answer, object_id FROM idempotency_keys WHERE merchant_id = ? AND mode = ? AND key = ?',
      merchantKey(shop.merchantId),
      'test',
      headers['idempotency-key'],
    ))!;
    const held = rec.holder === null ? null : (await s.store.get<{ id: string; answer: Buffer }>(`SELECT id, answer FROM ${rec.holder} WHERE seq = ?`, rec.holder_seq))!;
    assert.equal(rec.holder === null, r.path.endsWith('/batch'), r.path);
    const stored = held ? held.answer : rec.answer!;
    const objectId = held ? held.id : rec.object_id;
    if (held) assert.equal(rec.answer, null, r.path);
    assert.ok(stored.length < Buffer.byteLength(first.text), `${r.path}: ${stored.length} bytes`);
    assert.ok(!stored.includes(shop.shopId) && !stored.includes(shop.merchantId), r.path);
    if (objectId) assert.ok(first.text.includes(objectId) && !stored.includes(objectId), r.path);
  }
});

test('records written before the compact form still replay their answers and still refuse a different request', async () => {
  const shop = await s.newShop();
  const first = await create(shop.key, 'k-old-form', { amount: 10000, order_id: 'OLD-1' });
  assert.equal(first.status, 201);
  // As migration 3 → 4 leaves a record of before (and 12 → 13 keeps it): the answer as plain JSON text in the
  // record, no object id.
  await s.store.tx(async (tx) => {
    await tx.run(
      `UPDATE idempotency_keys SET holder = NULL, holder_seq = NULL, object_id = NULL, answer = CAST(? AS BLOB) WHERE merchant_id = ? AND key = ?`,
      first.text,
      merchantKey(shop.merchantId),
      'k-old-form',
    );
  });
  const again = await create(shop.key, 'k-old-form', { amount: 10000, order_id: 'OLD-1' });
  assert.equal(again.status, 200);
  assert.equal(again.text, first.text.slice(0, -1) + ',"failure_code":"","failure_message":"","idempotent":true}');
  assert.equal((await create(shop.key, 'k-old-form', { amount: 10001, order_id: 'OLD-1' })).status, 409);
});

test('a database of schema version 5 converts its idempotency records; their replays answer the same bytes', async () => {
  const shop = await s.newShop();
  const first = await create(shop.key, 'k-migrated', { amount: 10000, order_id: 'MIG-1' });
  assert.equal(first.status, 201);
  // As version 5 left the table: WITHOUT ROWID, the fingerprint as hex text, the answer as JSON text.
  onFile((db) => db.transaction(() => {
    db.exec(`CREATE TABLE idempotency_v3 (
      merchant_id TEXT NOT NULL, key TEXT NOT NULL, shop_id TEXT NOT NULL, mode TEXT NOT NULL CHECK (mode IN ('test', 'live')),
      request_hash TEXT NOT NULL, status INTEGER NOT NULL, response TEXT NOT NULL, created_at INTEGER NOT NULL,
      PRIMARY KEY (merchant_id, key)) STRICT, WITHOUT ROWID`);
    // Its fingerprints were whole SHA-256 digests, of which records now keep the first 16 bytes.
    db.prepare(`INSERT INTO idempotency_v3 SELECT ?, key, ?, mode, hex(request_hash) || hex(randomblob(16)), 201, ?, created_at FROM idempotency_keys WHERE key = ?`).run(
      shop.merchantId,
      shop.shopId,
      first.text,
      'k-migrated',
    );
    db.exec('DROP TABLE idempotency_keys; ALTER TABLE idempotency_v3 RENAME TO idempotency_keys');
    db.pragma('user_version = 5');
  }).immediate());
  await s.restart();
  const row = (await s.store.get<{ t: string; n: number; merchant_id: Buffer }>(`SELECT typeof(request_hash) AS t, length(request_hash) AS n, merchant_id FROM idempotency_keys WHERE key = 'k-migrated'`))!;
  assert.deepEqual({ t: row.t, n: row.n }, { t: 'blob', n: 16 });
  assert.deepEqual(row.merchant_id, merchantKey(shop.merchantId));
  const again = await create(shop.key, 'k-migrated', { amount: 10000, order_id: 'MIG-1' });
  assert.equal(again.status, 200);
  assert.equal(again.text, first.text.slice(0, -1) + ',"failure_code":"","failure_message":"","idempotent":true}');
  assert.equal((await create(shop.key, 'k-migrated', { amount: 10000, order_id: 'MIG-2' })).status, 409);
  // New records go on being written next to the converted one.
  assert.equal((await create(shop.key, 'k-after', { amount: 10000 })).status, 201);
});

test('a database of schema version 12 keeps its compact records in their own rows; their replays answer the same bytes', async () => {
  const shop = await s.newShop();
  const body = { amount: 10000, order_id: 'V12-1', metadata: { cart: '12' } };
  const first = await create(shop.key, 'k-v12', body);
  assert.equal(first.status, 201);
  // As version 12 left it: records in rowid order under a unique index of their key, the compact answer in the
  // record with the shop's id in a column of its own; no answer column in the objects' tables.
  onFile((db) => db.transaction(() => {
    db.exec(`CREATE TABLE idempotency_v12 (
      id INTEGER PRIMARY KEY, merchant_id TEXT NOT NULL, key TEXT NOT NULL, shop_id TEXT NOT NULL, mode TEXT NOT NULL CHECK (mode IN ('test', 'live')),
      request_hash BLOB NOT NULL, status INTEGER NOT NULL, object_id TEXT, response BLOB NOT NULL, created_at INTEGER NOT NULL) STRICT`);
    db.prepare(
      `INSERT INTO idempotency_v12 (merchant_id, key, shop_id, mode, request_hash, status, object_id, response, created_at)
       SELECT ?, k.key, p.shop_id, k.mode, unhex(hex(k.request_hash) || hex(randomblob(16))), 201, p.id, p.answer, k.created_at
       FROM idempotency_keys k JOIN payments p ON k.holder = 'payments' AND p.seq = k.holder_seq`,
    ).run(shop.merchantId);
    db.exec(`DROP TABLE idempotency_keys; ALTER TABLE idempotency_v12 RENAME TO idempotency_keys;
      CREATE UNIQUE INDEX idempotency_keys_key ON idempotency_keys(merchant_id, mode, key)`);
    for (const t of ['payments', 'refunds', 'payouts', 'tokens', 'subscriptions']) db.exec(`ALTER TABLE ${t} DROP COLUMN answer`);
    db.pragma('user_version = 12');
  }).immediate());
  await s.restart();
  const ddl = onFile((db) => (db.prepare(`SELECT sql FROM sqlite_master WHERE name = 'idempotency_keys'`).get() as { sql: string }).sql);
  // Records now in the order they were made (version 15), found by key through the server's index.
  assert.match(ddl, /seq\s+INTEGER PRIMARY KEY AUTOINCREMENT/);
  assert.doesNotMatch(ddl, /WITHOUT ROWID/);
  assert.equal(onFile((db) => db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'idempotency_keys_key'`).get()), undefined);
  const rec = (await s.store.get<{ holder: string | null; object_id: string; answer: Buffer }>(`SELECT holder, object_id, answer FROM idempotency_keys WHERE key = 'k-v12'`))!;
  assert.equal(rec.holder, null);
  assert.equal(rec.object_id, first.body.payment.id);
  assert.equal(rec.answer[0], 0x01, 'the compact answer, as it was');
  const again = await create(shop.key, 'k-v12', body);
  assert.equal(again.status, 200);
  assert.equal(again.text, first.text.slice(0, -1) + ',"failure_code":"","failure_message":"","idempotent":true}');
  assert.equal((await create(shop.key, 'k-v12', { ...body, amount: 10001 })).status, 409);
  // New records keep their answers in their objects' rows.
  const next = await create(shop.key, 'k-v12-next', body);
  assert.equal(next.status, 201);
  assert.deepEqual(await s.store.get(`SELECT holder, answer IS NULL AS bare FROM idempotency_keys WHERE key = 'k-v12-next'`), { holder: 'payments', bare: 1 });
  assert.equal((await create(shop.key, 'k-v12-next', body)).text, next.text.slice(0, -1) + ',"failure_code":"","failure_message":"","idempotent":true}');
});

test('a database of schema version 13 keeps its records with the merchant and the fingerprint in 16 bytes each; replays answer the same bytes', async () => {
  const shop = await s.newShop();
  const body = { amount: 10000, order_id: 'V13-1', metadata: { cart: '13' } };
  const first = await create(shop.key, 'k-v13', body);
  assert.equal(first.status, 201);
  const batch = { method: 'payouts_sbp', items: [sbpItem(1400, '+79000000003')] };
  const headers = { 'idempotency-key': 'k-v13-batch' };
  const firstBatch = await s.request('POST', '/v1/public/payouts/batch', { key: shop.key, body: batch, headers });
  assert.equal(firstBatch.status, 201);
  // As version 13 left it: the merchant's id as text and the whole SHA-256 digest, of which the first 16 bytes are
  // what a record now keeps.
  onFile((db) => db.transaction(() => {
    db.exec(`ALTER TABLE idempotency_keys RENAME TO idempotency_v14;
CREATE TABLE idempotency_keys (
  merchant_id TEXT NOT NULL, mode TEXT NOT NULL CHECK (mode IN ('test', 'live')), key TEXT NOT NULL, request_hash BLOB NOT NULL,
  holder TEXT CHECK (holder IN ('payments', 'refunds', 'payouts', 'tokens', 'subscriptions')), holder_seq INTEGER, answer BLOB, object_id TEXT,
  created_at INTEGER NOT NULL, PRIMARY KEY (merchant_id, mode, key),
  CHECK ((holder IS NULL) = (holder_seq IS NULL) AND (holder IS NULL) = (answer IS NOT NULL))) STRICT, WITHOUT ROWID`);
    db.prepare(
      `INSERT INTO idempotency_keys SELECT ?, mode, key, unhex(hex(request_hash) || hex(randomblob(16))), holder, holder_seq, answer, object_id, created_at
       FROM idempotency_v14 WHERE merchant_id = ?`,
    ).run(shop.merchantId, merchantKey(shop.merchantId));
    db.exec('DROP TABLE idempotency_v14');
    db.pragma('user_version = 13');
  }).immediate());
  await s.restart();
  const recs = await s.store.all<{
    key: string;
    merchant_id: Buffer;
    n: number;
    holder: string | null;
  }>(`SELECT key, merchant_id, length(request_hash) AS n, holder FROM idempotency_keys WHERE key IN ('k-v13', 'k-v13-batch') ORDER BY key`);
  assert.deepEqual(
    recs.map((r) => [r.key, r.merchant_id.length, r.n, r.holder]),
    [
      ['k-v13', 16, 16, 'payments'],
      ['k-v13-batch', 16, 16, null],
    ],
  );
  assert.deepEqual(recs[0].merchant_id, Buffer.from(shop.merchantId.replaceAll('-', ''), 'hex'));
  const again = await create(shop.key, 'k-v13', body);
  assert.equal(again.status, 200);
  assert.equal(again.text, first.text.slice(0, -1) + ',"failure_code":"","failure_message":"","idempotent":true}');
  assert.equal((await create(shop.key, 'k-v13', { ...body, amount: 10001 })).status, 409);
  const batchAgain = await s.request('POST', '/v1/public/payouts/batch', { key: shop.key, body: batch, headers });
  assert.equal(batchAgain.status, 200);
  assert.equal(batchAgain.text, firstBatch.text.slice(0, -1) + ',"idempotent":true}');
  // A new key after the conversion is stored in the same form and replays too.
  const next = await create(shop.key, 'k-v13-next', body);
  assert.equal(next.status, 201);
  assert.equal((await create(shop.key, 'k-v13-next', body)).status, 200);
});

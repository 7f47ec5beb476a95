import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { balanceOf, ledgerCheck, paidLivePayment, paidPayment } from '../helpers/money';
import { sbpBody } from '../helpers/payouts';
import { createKey, createShop } from '../../src/money/shops/store';
import { openDatabase } from '../../src/platform/storage/sqlite/open';
import { sqliteOnly } from '../helpers/pg';
import { upgradeOldSqlite } from '../../src/platform/storage/sqlite/migrations-old';

let s: TestServer;
before(async () => {
  s = await startTestServer({ simDelaySeconds: 3 });
});
after(() => s.close());

async function advance(key: string, seconds: number): Promise<void> {
  const r = await s.request('POST', '/v1/test/clock/advance', { key, body: { seconds } });
  assert.equal(r.status, 200, r.text);
}

async function entries(sourceId: string): Promise<Array<{ movement: string; amount: number }>> {
  return s.store.all<{ movement: string; amount: number }>('SELECT movement, amount FROM ledger_entries WHERE source_id = ? ORDER BY id', sourceId);
}

test('a succeeded payment credits balance and available; a refund reserves, then settles or is released', async () => {
  const shop = await s.newShop();
  const empty = await balanceOf(s, shop.key);
  assert.deepEqual(empty, { balance: 0, available: 0, currency: 'RUB', shops: [{ shop_id: shop.shopId, shop_name: 'Test shop', balance: 0, available: 0 }] });
  const pay = await paidPayment(s, shop.key, 100_000);
  assert.deepEqual(await entries(pay), [{ movement: 'payment_succeeded', amount: 100_000 }]);
  let b = await balanceOf(s, shop.key);
  assert.deepEqual([b.balance, b.available], [100_000, 100_000]);

  const ok = await s.request('POST', `/v1/public/payments/${pay}/refund`, { key: shop.key, body: { amount: 30_000 } });
  assert.equal(ok.status, 201, ok.text);
  b = await balanceOf(s, shop.key);
  assert.deepEqual([b.balance, b.available], [100_000, 70_000], 'a pending refund lowers available only');
  const bad = await s.request('POST', `/v1/public/payments/${pay}/refund`, { key: shop.key, body: { amount: 10_001 } });
  assert.equal(bad.status, 201, bad.text);
  b = await balanceOf(s, shop.key);
  assert.deepEqual([b.balance, b.available], [100_000, 59_999]);

  await advance(shop.key, 3);
  b = await balanceOf(s, shop.key);
  assert.deepEqual([b.balance, b.available], [70_000, 70_000], 'the settled refund leaves the balance; the failed one returns');
  assert.deepEqual((await entries(ok.body.id)).map((e) => e.movement), ['refund_reserved', 'refund_settled']);
  assert.deepEqual((await entries(bad.body.id)).map((e) => e.movement), ['refund_reserved', 'refund_released']);
  const c = await ledgerCheck(s.dbPath);
  assert.equal(c.code, 0, c.stdout);
});

test('refunds and payouts share available: a pending refund holds money a payout cannot take', async () => {
  const shop = await s.newShop();
  const pay = await paidPayment(s, shop.key, 50_000);
  await s.request('POST', `/v1/public/payments/${pay}/refund`, { key: shop.key, body: { amount: 20_000 } });
  const over = await s.request('POST', '/v1/public/payouts', { key: shop.key, body: sbpBody(30_100) });
  assert.equal(over.status, 422);
  const fits = await s.request('POST', '/v1/public/payouts', { key: shop.key, body: sbpBody(30_000) });
  assert.equal(fits.status, 201, fits.text);
  let b = await balanceOf(s, shop.key);
  assert.deepEqual([b.balance, b.available], [50_000, 0]);
  await advance(shop.key, 3);
  b = await balanceOf(s, shop.key);
  assert.deepEqual([b.balance, b.available], [0, 0]);
});

test('the balance sums all shops of the merchant, lists each, and keeps test and live apart', async () => {
  const first = await s.newShop();
  // A millisecond later than the first at least: shops list in the order they were made, and two made in one
  // millisecond are ordered by their random ids.
  const second = await createShop(s.store, first.merchantId, 'Second shop', undefined, Date.now() + 1);
  const secondKey = (await createKey(s.store, second.id, 'test', undefined, Date.now())).secret;
  await paidPayment(s, first.key, 10_000);
  await paidPayment(s, secondKey, 25_000);
  await s.request('POST', '/v1/public/payouts', { key: secondKey, body: sbpBody(5_000) });
  const viaFirst = await balanceOf(s, first.key);
  assert.deepEqual(viaFirst, {
    balance: 35_000,
    available: 30_000,
    currency: 'RUB',
    shops: [
      { shop_id: first.shopId, shop_name: 'Test shop', balance: 10_000, available: 10_000 },
      { shop_id: second.id, shop_name: 'Second shop', balance: 25_000, available: 20_000 },
    ],
  });
  assert.deepEqual(await balanceOf(s, secondKey), viaFirst, 'any shop of the merchant sees the merchant totals');

  await s.store.write(async (tx) => tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', first.merchantId));
  const live = await s.newKey(first.shopId, 'live');
  const liveEmpty = await balanceOf(s, live.key);
  assert.deepEqual([liveEmpty.balance, liveEmpty.available, liveEmpty.shops.length], [0, 0, 2]);
  await paidLivePayment(s, { key: live.key, merchantId: first.merchantId, shopId: first.shopId }, 7_000);
  assert.equal((await balanceOf(s, live.key)).balance, 7_000);
  assert.equal((await balanceOf(s, first.key)).balance, 35_000, 'live money is not in the test book');
});

test('GET /v1/public/balance needs api:balance:read', async () => {
  const k = await s.newKey(s.demo.shopId, 'test', 'api:reports:read,api:payouts:sbp');
  const r = await s.request('GET', '/v1/public/balance', { key: k.key });
  assert.equal(r.status, 403);
  assert.equal(r.body.error.code, 'scope_required');
  assert.match(r.body.error.message, /api:balance:read/);
  assert.equal((await s.request('GET', '/v1/public/balance', { key: null })).status, 401);
});

test('a replayed event posts nothing twice', async () => {
  const shop = await s.newShop();
  const pay = await paidPayment(s, shop.key, 40_000);
  const app = s.running.app;
  for (let i = 0; i < 2; i++) {
    await app.store.tx(async (tx) =>
      app.events.append(tx, { merchantId: shop.merchantId, shopId: shop.shopId, mode: 'test', kind: 'payment.status_changed', payload: { id: pay, status: 'succeeded' }, at: Date.now(), paymentId: pay }),
    );
  }
  assert.equal((await entries(pay)).length, 1);
  assert.equal((await balanceOf(s, shop.key)).balance, 40_000);
});

test('test reset empties the test book with the rest of the test data', async () => {
  const shop = await s.newShop();
  await paidPayment(s, shop.key, 9_000);
  await s.request('POST', '/v1/public/payouts', { key: shop.key, body: sbpBody(1_000) });
  const r = await s.request('POST', '/v1/test/reset', { key: shop.key });
  assert.equal(r.status, 200, r.text);
  const b = await balanceOf(s, shop.key);
  assert.deepEqual([b.balance, b.available], [0, 0]);
  const c = await ledgerCheck(s.dbPath);
  assert.equal(c.code, 0, c.stdout);
});

test('a database of schema version 11 keeps every ledger entry when the once-per-source key becomes the source\'s seq', { skip: sqliteOnly('a migration from an old SQLite schema version') }, async () => {
  const shop = await s.newShop();
  const pay = await paidPayment(s, shop.key, 80_000);
  const refund = await s.request('POST', `/v1/public/payments/${pay}/refund`, { key: shop.key, body: { amount: 10_000 } });
  assert.equal(refund.status, 201, refund.text);
  const payout = await s.request('POST', '/v1/public/payouts', { key: shop.key, body: sbpBody(5_000) });
  assert.equal(payout.status, 201, payout.text);
  await advance(shop.key, 3);
  const sources: Record<string, string> = { payments: pay, refunds: refund.body.id, payouts: payout.body.payout.id };
  const all = () => s.store.all('SELECT id, merchant_id, shop_id, mode, movement, source_id, amount, at FROM ledger_entries ORDER BY id');
  const before = await all();

  // As version 11 left the table: the once-per-source key on the source's id, no source_seq.
  await s.store.write(async (tx) => {
    for (const sql of [
      `ALTER TABLE ledger_entries RENAME TO le_current`,
      `DROP INDEX ledger_entries_once`,
      `DROP INDEX ledger_entries_book`,
      `CREATE TABLE ledger_entries (
        id INTEGER PRIMARY KEY, merchant_id TEXT NOT NULL, shop_id TEXT NOT NULL, mode TEXT NOT NULL CHECK (mode IN ('test', 'live')),
        movement TEXT NOT NULL, source_id TEXT NOT NULL, amount INTEGER NOT NULL CHECK (amount > 0), at INTEGER NOT NULL
      ) STRICT`,
      `INSERT INTO ledger_entries SELECT id, merchant_id, shop_id, mode, movement, source_id, amount, at FROM le_current`,
      `DROP TABLE le_current`,
      `CREATE UNIQUE INDEX ledger_entries_once ON ledger_entries(movement, source_id)`,
      `CREATE INDEX ledger_entries_book ON ledger_entries(shop_id, mode, id)`,
      `PRAGMA user_version = 11`,
    ]) {
      await tx.run(sql);
    }
  });
  upgradeOldSqlite(s.dbPath);
  await s.restart();

  const seqOf = async (table: string, id: string) => (await s.store.get<{ seq: number }>(`SELECT seq FROM ${table} WHERE id = ?`, id))!.seq;
  const sourceSeqs = async (id: string) =>
    (await s.store.all<{ source_seq: number }>('SELECT DISTINCT source_seq FROM ledger_entries WHERE source_id = ?', id)).map((r) => r.source_seq);
  assert.deepEqual(await all(), before, 'every entry kept as it was');
  for (const [table, id] of Object.entries(sources)) {
    const seq = await seqOf(table, id);
    const keyed = await sourceSeqs(id);
    assert.deepEqual(keyed, [seq], `the entries of ${table} ${id} are keyed by its seq`);
  }
  assert.equal((await s.store.get<{ n: number }>('SELECT count(*) AS n FROM ledger_entries WHERE source_seq <= 0'))!.n, 0);
  // The index and the query plan are SQLite's: read on a connection of the test's own.
  const db = openDatabase(s.dbPath, { readonly: true });
  try {
    assert.deepEqual(
      (db.prepare(`SELECT name FROM pragma_index_info('ledger_entries_once') ORDER BY seqno`).all() as Array<{ name: string }>).map((r) => r.name),
      ['movement', 'source_seq'],
    );
    const plan = (db.prepare('EXPLAIN QUERY PLAN SELECT amount FROM ledger_entries WHERE movement = ? AND source_seq = (SELECT seq FROM refunds WHERE id = ?)').all('refund_reserved', 'x') as Array<{ detail: string }>)
      .map((r) => r.detail)
      .join(' | ');
    assert.match(plan, /SEARCH ledger_entries USING INDEX ledger_entries_once \(movement=\? AND source_seq=\?\)/);
  } finally {
    db.close();
  }

  // The books go on: a refund of the same payment settles, a second payment posts once, and the check passes.
  const again = await s.request('POST', `/v1/public/payments/${pay}/refund`, { key: shop.key, body: { amount: 20_000 } });
  assert.equal(again.status, 201, again.text);
  const pay2 = await paidPayment(s, shop.key, 7_000);
  await advance(shop.key, 3);
  assert.deepEqual((await entries(again.body.id)).map((e) => e.movement), ['refund_reserved', 'refund_settled']);
  assert.deepEqual(await entries(pay2), [{ movement: 'payment_succeeded', amount: 7_000 }]);
  // Entries made after it are keyed by their source's seq too: a payment's given by the state machine, a
  // refund's read by the posting statement.
  for (const [table, id] of [['payments', pay2], ['refunds', again.body.id]]) {
    const seq = await seqOf(table, id);
    assert.deepEqual(await sourceSeqs(id), [seq], `${table} ${id}`);
  }
  const b = await balanceOf(s, shop.key);
  assert.deepEqual([b.balance, b.available], [80_000 - 10_000 - 5_000 - 20_000 + 7_000, 80_000 - 10_000 - 5_000 - 20_000 + 7_000]);
  const c = await ledgerCheck(s.dbPath);
  assert.equal(c.code, 0, c.stdout);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { startTestServer, type TestServer } from '../helpers/server';
import { createPayment } from '../helpers/payments';
import { sqliteOnly } from '../helpers/pg';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

async function publicNumber(key?: string): Promise<number> {
  const r = await s.request('POST', '/v1/public/payments', { key, body: { amount: 100 } });
  assert.equal(r.status, 201);
  return Number(r.body.payment.public_id.slice(2));
}

test('creates sent together get distinct public ids, each named in its purpose', async () => {
  const rs = await Promise.all(Array.from({ length: 20 }, () => createPayment(s, { amount: 100 })));
  const nums = rs.map((r) => Number(r.payment.public_id.slice(2)));
  assert.equal(new Set(nums).size, nums.length);
  for (const r of rs) {
    const p = (await s.request('GET', `/v1/public/payments/${r.payment.id}`)).body;
    assert.equal(p.public_id, r.payment.public_id);
    assert.equal(p.purpose, `Оплата заказа ${r.payment.public_id}`);
  }
});

test('a public id is never handed out again after a test reset and a restart deleted and forgot the newest', async () => {
  const shop = await s.newShop();
  await publicNumber(shop.key);
  const last = await publicNumber(shop.key);
  const reset = await s.request('POST', '/v1/test/reset', { key: shop.key });
  assert.equal(reset.status, 200);
  assert.ok(reset.body.deleted.payments >= 2);
  assert.ok((await publicNumber(shop.key)) > last);
  const beforeRestart = await publicNumber(shop.key);
  // The newest payments are gone from the table: only the sequence remembers their numbers.
  assert.equal((await s.request('POST', '/v1/test/reset', { key: shop.key })).status, 200);
  await s.restart();
  assert.ok((await publicNumber(shop.key)) > beforeRestart);
});

test('a number taken by another writer of the same file is skipped, not reused', { skip: sqliteOnly('a second connection to the same SQLite file') }, async () => {
  const last = await publicNumber();
  const other = new Database(s.dbPath);
  try {
    other.pragma('busy_timeout = 5000');
    // The next number this server would hand out, taken through a second connection.
    other
      .prepare(
        `INSERT INTO payments (seq, id, public_id, merchant_id, shop_id, mode, order_id, status, amount, currency, method, purpose, created_at, expires_at)
         VALUES (?, ?, ?, ?, ?, 'test', 'o', 'pending', 100, 'RUB', 'any', '', 0, 0)`,
      )
      .run(last - 100_000 + 1, crypto.randomUUID(), `P-${last + 1}`, s.demo.merchantId, s.demo.shopId);
  } finally {
    other.close();
  }
  const next = await publicNumber();
  assert.ok(next > last + 1, `${next} after ${last} and ${last + 1}`);
});

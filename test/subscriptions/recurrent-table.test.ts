import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { advanceDays, createSubscription, get, payThroughHelper } from '../helpers/recurrent';
import { openDatabase, SCHEMA_VERSION } from '../../src/platform/storage/sqlite/open';
import { sqliteOnly } from '../helpers/pg';
import { upgradeOldSqlite } from '../../src/platform/storage/sqlite/migrations-old';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

/** A subscription's payments as its schedule lists them: [kind, status]. */
async function chargesOf(subscriptionId: string, key: string): Promise<Array<[string, string]>> {
  const sched = await get(s, `/v1/public/subscriptions/${subscriptionId}/schedule`, key);
  return sched.charges.map((x: any) => [x.kind, x.status]);
}

/** The table's definition as SQLite keeps it. */
const TABLE_SQL = `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'recurrent_payments'`;

function tableSql(db: { prepare(sql: string): { get(...a: unknown[]): unknown } }): string {
  return (db.prepare(TABLE_SQL).get() as { sql: string }).sql;
}

const COLUMNS = 'payment_id, kind, token_id, subscription_id, shop_id, mode, charge_index, attempt, created_at';
const COLUMN_DEFS = `kind TEXT NOT NULL CHECK (kind IN ('token_binding', 'subscription_init', 'subscription_charge', 'token_charge')),
  token_id TEXT NOT NULL, subscription_id TEXT, shop_id TEXT NOT NULL, mode TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  charge_index INTEGER, attempt INTEGER NOT NULL DEFAULT 1, created_at INTEGER NOT NULL`;

/** How versions 9 and 10 kept the table: keyed by the payment's id, then a rowid table with a unique index on it. */
const OLD_TABLES: Record<number, string> = {
  9: `CREATE TABLE recurrent_payments (payment_id TEXT PRIMARY KEY, ${COLUMN_DEFS}) STRICT, WITHOUT ROWID;`,
  10: `CREATE TABLE recurrent_payments (payment_id TEXT NOT NULL UNIQUE, ${COLUMN_DEFS}) STRICT;`,
};

for (const version of [9, 10]) {
  test(`a database of schema version ${version} keeps every recurrent payment when recurrent_payments is keyed by the payment's seq`, { skip: sqliteOnly('a migration from an old SQLite schema version') }, async () => {
    const shop = await s.newShop();
    const c = await createSubscription(s, { customer_ref: `cust-migrate-${version}`, amount: 45_000 }, shop.key);
    await payThroughHelper(s, c.initial_payment.id, shop.key);
    await advanceDays(s, 31, shop.key);
    assert.deepEqual(await chargesOf(c.subscription.id, shop.key), [
      ['subscription_init', 'succeeded'],
      ['subscription_charge', 'succeeded'],
    ]);
    const rows = await s.store.all<{ payment_seq: number; payment_id: string }>('SELECT * FROM recurrent_payments ORDER BY payment_seq');
    assert.ok(rows.length >= 2);
    for (const r of rows) {
      assert.equal((await s.store.get<{ seq: number }>('SELECT seq FROM payments WHERE id = ?', r.payment_id))!.seq, r.payment_seq);
    }

    // As that version left it (one statement at a time, in one transaction of the server's store).
    await s.store.tx(async (tx) => {
      await tx.run('ALTER TABLE recurrent_payments RENAME TO rp_current');
      await tx.run('DROP INDEX recurrent_payments_subscription');
      await tx.run(OLD_TABLES[version]);
      await tx.run(`INSERT INTO recurrent_payments (${COLUMNS}) SELECT ${COLUMNS} FROM rp_current`);
      await tx.run('DROP TABLE rp_current');
      await tx.run('CREATE INDEX recurrent_payments_subscription ON recurrent_payments(subscription_id, charge_index, attempt) WHERE subscription_id IS NOT NULL');
      await tx.run(`PRAGMA user_version = ${version}`);
    });
    assert.doesNotMatch((await s.store.get<{ sql: string }>(TABLE_SQL))!.sql, /payment_seq/);
    upgradeOldSqlite(s.dbPath);
    await s.restart();

    const db = openDatabase(s.dbPath, { readonly: true });
    try {
      assert.equal(db.pragma('user_version', { simple: true }), SCHEMA_VERSION);
      assert.match(tableSql(db), /payment_seq\s+INTEGER PRIMARY KEY/);
      assert.doesNotMatch(tableSql(db), /WITHOUT ROWID|UNIQUE/);
      assert.deepEqual(db.prepare('SELECT * FROM recurrent_payments ORDER BY payment_seq').all(), rows);
      const plan = (sql: string, ...params: unknown[]) =>
        (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map((r) => r.detail).join(' | ');
      // No index on the payment's id: a payment's row is found by its seq, through the payments' own index.
      assert.deepEqual(db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'recurrent_payments'`).pluck().all(), ['recurrent_payments_subscription']);
      assert.match(plan('SELECT * FROM recurrent_payments WHERE payment_seq = (SELECT seq FROM payments WHERE id = ?)', 'x'), /SEARCH recurrent_payments USING INTEGER PRIMARY KEY \(rowid=\?\).*SEARCH payments USING COVERING INDEX sqlite_autoindex_payments_1 \(id=\?\)/);
      assert.match(plan('SELECT 1 FROM recurrent_payments WHERE subscription_id = ? AND charge_index = ? AND attempt = ?', 'x', 1, 1), /USING COVERING INDEX recurrent_payments_subscription/);
      assert.match(
        plan('SELECT r.payment_id, p.status FROM recurrent_payments r JOIN payments p ON p.seq = r.payment_seq WHERE r.subscription_id = ? ORDER BY r.charge_index DESC, r.attempt DESC LIMIT 1', 'x'),
        /SEARCH r USING INDEX recurrent_payments_subscription \(subscription_id=\?\) \| SEARCH p USING INTEGER PRIMARY KEY \(rowid=\?\)/,
      );
    } finally {
      db.close();
    }

    // The subscription goes on charging after the migration, and its schedule shows every payment.
    await advanceDays(s, 31, shop.key);
    assert.deepEqual(await chargesOf(c.subscription.id, shop.key), [
      ['subscription_init', 'succeeded'],
      ['subscription_charge', 'succeeded'],
      ['subscription_charge', 'succeeded'],
    ]);
    assert.equal((await get(s, `/v1/public/subscriptions/${c.subscription.id}`, shop.key)).status, 'active');
  });
}

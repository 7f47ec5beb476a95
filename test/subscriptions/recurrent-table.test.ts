import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { advanceDays, createSubscription, get, payThroughHelper } from '../helpers/recurrent';
import { openDatabase, SCHEMA_VERSION } from '../../src/db/open';

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
function tableSql(db: { prepare(sql: string): { get(...a: unknown[]): unknown } }): string {
  return (db.prepare(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'recurrent_payments'`).get() as { sql: string }).sql;
}

test('a database of schema version 9 keeps every recurrent payment when recurrent_payments becomes a rowid table', async () => {
  const shop = s.newShop();
  const c = await createSubscription(s, { customer_ref: 'cust-migrate', amount: 45_000 }, shop.key);
  await payThroughHelper(s, c.initial_payment.id, shop.key);
  await advanceDays(s, 31, shop.key);
  assert.deepEqual(await chargesOf(c.subscription.id, shop.key), [
    ['subscription_init', 'succeeded'],
    ['subscription_charge', 'succeeded'],
  ]);
  const rows = s.store.db.prepare('SELECT * FROM recurrent_payments ORDER BY created_at, payment_id').all();
  assert.ok(rows.length >= 2);

  // As version 9 left it: the table keyed by the payment id, WITHOUT ROWID.
  s.store.tx(({ db }) => {
    db.exec(`ALTER TABLE recurrent_payments RENAME TO rp_current;
      CREATE TABLE recurrent_payments (
        payment_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('token_binding', 'subscription_init', 'subscription_charge', 'token_charge')),
        token_id TEXT NOT NULL, subscription_id TEXT, shop_id TEXT NOT NULL, mode TEXT NOT NULL CHECK (mode IN ('test', 'live')),
        charge_index INTEGER, attempt INTEGER NOT NULL DEFAULT 1, created_at INTEGER NOT NULL
      ) STRICT, WITHOUT ROWID;
      INSERT INTO recurrent_payments SELECT payment_id, kind, token_id, subscription_id, shop_id, mode, charge_index, attempt, created_at FROM rp_current;
      DROP TABLE rp_current;
      CREATE INDEX recurrent_payments_subscription ON recurrent_payments(subscription_id, charge_index, attempt) WHERE subscription_id IS NOT NULL;`);
    db.pragma('user_version = 9');
  });
  assert.match(tableSql(s.store.db), /WITHOUT ROWID/);
  await s.restart();

  const db = openDatabase(s.dbPath, { readonly: true });
  try {
    assert.equal(db.pragma('user_version', { simple: true }), SCHEMA_VERSION);
    assert.doesNotMatch(tableSql(db), /WITHOUT ROWID/);
    assert.deepEqual(db.prepare('SELECT * FROM recurrent_payments ORDER BY created_at, payment_id').all(), rows);
    // A payment's row is found through the unique index, a subscription's charges through theirs.
    const byPayment = db.prepare('EXPLAIN QUERY PLAN SELECT * FROM recurrent_payments WHERE payment_id = ?').all('x') as Array<{ detail: string }>;
    assert.match(byPayment.map((r) => r.detail).join(' '), /USING INDEX sqlite_autoindex_recurrent_payments_1 \(payment_id=\?\)/);
    const bySubscription = db
      .prepare('EXPLAIN QUERY PLAN SELECT 1 FROM recurrent_payments WHERE subscription_id = ? AND charge_index = ? AND attempt = ?')
      .all('x', 1, 1) as Array<{ detail: string }>;
    assert.match(bySubscription.map((r) => r.detail).join(' '), /USING COVERING INDEX recurrent_payments_subscription/);
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

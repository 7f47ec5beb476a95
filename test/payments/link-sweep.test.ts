import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { advance, createPayment, getPayment, pendingJobsOf, simulate, statusesOf } from '../helpers/payments';
import { openDatabase, SCHEMA_VERSION } from '../../src/platform/storage/sqlite/open';
import { sqliteOnly } from '../helpers/pg';
import { upgradeOldSqlite } from '../../src/platform/storage/sqlite/migrations-old';

let s: TestServer;
before(async () => {
  s = await startTestServer({ simDelaySeconds: 60 });
});
after(() => s.close());



test('each link expires when its own lifetime ends, in any order of creation, through one sweep job per shop and mode', async () => {
  const shop = await s.newShop();
  // Created longest first, so each create has to move the sweep earlier.
  const ids: string[] = [];
  for (const ttl of [5, 3, 1, 4, 2]) ids.push((await createPayment(s, { amount: 10000, ttl_minutes: ttl }, shop.key)).payment.id);
  const jobs = await pendingJobsOf(s, shop.shopId);
  assert.equal(jobs.length, 1, 'five creates leave one job, not five');
  assert.equal(jobs[0].kind, 'payment.link_sweep');
  assert.equal(jobs[0].subject_id, `${shop.shopId}/test`);
  const created = Date.parse((await getPayment(s, ids[2], shop.key)).created_at);
  assert.ok(Math.abs(jobs[0].due_at - (created + 60_000)) < 1000, 'the sweep is due when the 1-minute link ends');

  const expected = [
    ['pending', 'pending', 'pending', 'pending', 'pending'],
    ['pending', 'pending', 'expired', 'pending', 'pending'],
    ['pending', 'pending', 'expired', 'pending', 'expired'],
    ['pending', 'expired', 'expired', 'pending', 'expired'],
    ['pending', 'expired', 'expired', 'expired', 'expired'],
    ['expired', 'expired', 'expired', 'expired', 'expired'],
  ];
  await advance(s, 50, shop.key);
  assert.deepEqual(await statusesOf(s, ids, shop.key), expected[0], 'nothing ends before its minute');
  for (let minute = 1; minute <= 5; minute++) {
    await advance(s, 60, shop.key);
    assert.deepEqual(await statusesOf(s, ids, shop.key), expected[minute], `after ${minute} min 50 s`);
  }
  for (const id of ids) {
    const p = await getPayment(s, id, shop.key);
    assert.equal(p.metadata.failure_code, 'link_expired');
  }
  assert.deepEqual(await pendingJobsOf(s, shop.shopId), [], 'no sweep waits once no payment is pending');
});

test('a payment that left pending is not expired, and a link expires on the advance that reaches its end', async () => {
  const shop = await s.newShop();
  const paid = (await createPayment(s, { amount: 10000, ttl_minutes: 1 }, shop.key)).payment.id;
  const cancelled = (await createPayment(s, { amount: 10000, ttl_minutes: 1 }, shop.key)).payment.id;
  const left = (await createPayment(s, { amount: 10000, ttl_minutes: 1 }, shop.key)).payment.id;
  assert.equal((await simulate(s, paid, { action: 'open_session', method: 'sbp' }, shop.key)).status, 200);
  assert.equal((await simulate(s, paid, { action: 'succeed' }, shop.key)).status, 200);
  assert.equal((await s.request('POST', `/v1/public/payments/${cancelled}/cancel`, { key: shop.key })).status, 200);
  const p = await getPayment(s, left, shop.key);
  const clock = await s.request('GET', '/v1/test/clock', { key: shop.key });
  // Advance to the first whole second at or after the link's end.
  const ms = Date.parse(p.expires_at) - Date.parse(clock.body.now);
  await advance(s, Math.ceil(ms / 1000), shop.key);
  assert.deepEqual(await statusesOf(s, [paid, cancelled, left], shop.key), ['succeeded', 'cancelled', 'expired']);
});

test('more links than one sweep run takes all expire in one clock advance, each with its webhook event', async () => {
  const shop = await s.newShop();
  const ids: string[] = [];
  for (let i = 0; i < 230; i++) ids.push((await createPayment(s, { amount: 10000, ttl_minutes: 1 }, shop.key)).payment.id);
  await advance(s, 61, shop.key);
  const counts = await s.store.all<{ status: string; n: number }>(`SELECT status, count(*) AS n FROM payments WHERE shop_id = ? GROUP BY status`, shop.shopId);
  assert.deepEqual(counts, [{ status: 'expired', n: 230 }]);
  const expiredEvents = (await s.store.get<{ n: number }>(`SELECT count(*) AS n FROM events WHERE shop_id = ? AND webhook_event = 'payment.expired'`, shop.shopId))!;
  assert.equal(expiredEvents.n, 230);
});

test('a shop\'s sweep never expires another shop\'s payment', async () => {
  const a = await s.newShop();
  const b = await s.newShop();
  const pa = (await createPayment(s, { amount: 10000, ttl_minutes: 1 }, a.key)).payment.id;
  const pb = (await createPayment(s, { amount: 10000, ttl_minutes: 1 }, b.key)).payment.id;
  await advance(s, 61, a.key);
  assert.equal((await getPayment(s, pa, a.key)).status, 'expired');
  assert.equal((await getPayment(s, pb, b.key)).status, 'pending', 'shop b\'s clock did not move');
});

test('a payment created after a test reset is still expired: the reset removes the sweep, the next create makes one', async () => {
  const shop = await s.newShop();
  await createPayment(s, { amount: 10000, ttl_minutes: 1 }, shop.key);
  assert.equal((await s.request('POST', '/v1/test/reset', { key: shop.key })).status, 200);
  assert.deepEqual(await pendingJobsOf(s, shop.shopId), []);
  const id = (await createPayment(s, { amount: 10000, ttl_minutes: 1 }, shop.key)).payment.id;
  await advance(s, 61, shop.key);
  assert.equal((await getPayment(s, id, shop.key)).status, 'expired');
});

test('a database of schema version 1 gains the expiry index through kopek migrate, and its per-payment link job becomes the shop\'s sweep', { skip: sqliteOnly('a migration from an old SQLite schema version') }, async () => {
  const shop = await s.newShop();
  const id = (await createPayment(s, { amount: 10000, ttl_minutes: 1 }, shop.key)).payment.id;
  // As version 1 left it: no sweep, a job of its own for the payment, no index.
  await s.store.write(async (tx) => {
    await tx.run(`DELETE FROM jobs WHERE shop_id = ?`, shop.shopId);
    const p = (await tx.get<{ expires_at: number }>('SELECT expires_at FROM payments WHERE id = ?', id))!;
    await tx.run(
      `INSERT INTO jobs (kind, subject_id, shop_id, mode, due_at, run_at, payload, created_at) VALUES ('payment.link_expiry', ?, ?, 'test', ?, ?, '{}', ?)`,
      id, shop.shopId, p.expires_at, p.expires_at, Date.now(),
    );
    await tx.run('DROP INDEX payments_pending_expiry');
    // Tables of later versions did not exist yet either.
    await tx.run('DROP TABLE shop_acquirers');
    for (const t of ['bank_requests', 'tbank_sessions', 'tbank_rebills', 'bank_mismatches']) await tx.run(`DROP TABLE ${t}`);
    await tx.run('PRAGMA user_version = 1');
  });
  upgradeOldSqlite(s.dbPath);
  await s.restart();
  const db = openDatabase(s.dbPath, { readonly: true });
  try {
    assert.equal(db.pragma('user_version', { simple: true }), SCHEMA_VERSION);
    assert.ok(SCHEMA_VERSION >= 2, 'migration 1 → 2 ran (later ones may follow)');
    const ix = db.prepare(`SELECT sql FROM sqlite_master WHERE name = 'payments_pending_expiry'`).get() as { sql: string } | undefined;
    assert.ok(ix, 'the migration made the index');
    assert.ok(db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'shop_acquirers'`).get(), 'later migrations ran too');
    assert.ok(db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'bank_requests'`).get(), 'and the latest');
  } finally {
    db.close();
  }
  await advance(s, 61, shop.key);
  assert.equal((await getPayment(s, id, shop.key)).status, 'expired');
  assert.equal(await s.store.get(`SELECT 1 FROM jobs WHERE kind = 'payment.link_expiry'`), undefined, 'no job of the old kind is left');
  const sweep = (await s.store.get<{ state: string }>(`SELECT state FROM jobs WHERE kind = 'payment.link_sweep' AND subject_id = ?`, `${shop.shopId}/test`))!;
  assert.equal(sweep.state, 'done', 'the converted job ran as the sweep');
});

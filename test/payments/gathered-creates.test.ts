import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startTestServer, type TestServer, type TestShop } from '../helpers/server';
import { fakeTime, eventually } from '../helpers/fake-time';
import { PG_LIMITS } from '../../src/platform/storage/limits';
import { postgresOnly } from '../helpers/pg';
import { liveTBankShop } from '../helpers/tbank';

// On PostgreSQL a node gathers the creates that arrive while its create transactions are under way and writes
// them in one transaction (src/money/payments/create-batch.ts). Each payment must still be whole and alone in what it
// answers: its own number, its event, its shop's sweep; one that cannot be written fails only itself. A create
// waits for a transaction no longer than a request waits for a connection, and one that waited longer is refused
// before anything of it is written, so a client that gave up on it never finds it made.

const skip = postgresOnly();
const time = fakeTime();
let s: TestServer;
let admin: pg.Client;
before(async () => {
  if (skip) return;
  s = await startTestServer({}, { realNow: time.now });
  admin = new pg.Client({ connectionString: s.dbPath });
  await admin.connect();
});
after(async () => {
  if (skip) return;
  await admin.end();
  await s.close();
});

function create(shop: TestShop, amount: number, n: number) {
  return s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount, order_id: `gathered-${n}` } });
}

test('creates that arrive together share transactions, and each payment has its own number, event and sweep', { skip }, async () => {
  const shops = [await s.newShop(), await s.newShop()];
  const N = 80;
  // Which transactions wrote payments: a statement trigger of the test notes each one's id.
  await admin.query('CREATE TABLE gathered_tx (xid bigint NOT NULL)');
  await admin.query(`CREATE FUNCTION gathered_note() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN INSERT INTO gathered_tx VALUES (txid_current()); RETURN NULL; END $$`);
  await admin.query('CREATE TRIGGER gathered_note AFTER INSERT ON payments FOR EACH STATEMENT EXECUTE FUNCTION gathered_note()');
  let answers;
  let spent: number;
  try {
    answers = await Promise.all(Array.from({ length: N }, (_, i) => create(shops[i % 2], 1_000 + i, i)));
    spent = (await admin.query('SELECT count(DISTINCT xid)::int AS n FROM gathered_tx')).rows[0].n;
  } finally {
    await admin.query('DROP TRIGGER gathered_note ON payments');
    await admin.query('DROP FUNCTION gathered_note()');
    await admin.query('DROP TABLE gathered_tx');
  }
  assert.deepEqual(answers.map((a) => a.status), new Array(N).fill(201));
  const payments = answers.map((a) => a.body.payment as { id: string; public_id: string; amount: number; order_id: string; shop_id: string });
  assert.equal(new Set(payments.map((p) => p.id)).size, N);
  assert.equal(new Set(payments.map((p) => p.public_id)).size, N);
  // Each answer is its own request's.
  payments.forEach((p, i) => assert.deepEqual([p.amount, p.order_id, p.shop_id], [1_000 + i, `gathered-${i}`, shops[i % 2].shopId]));
  assert.ok(spent > 0 && spent < N / 2, `the ${N} creates took ${spent} transactions`);
  // One payment.created event each, and a row each.
  const events = await admin.query(`SELECT payment_id, count(*)::int AS n FROM events WHERE kind = 'payment.created' AND payment_id = ANY($1) GROUP BY payment_id`, [payments.map((p) => p.id)]);
  assert.equal(events.rows.length, N);
  assert.ok(events.rows.every((r) => r.n === 1));
  // Each shop's link sweep is due no later than its earliest new link expires.
  for (const shop of shops) {
    const r = await admin.query(
      `SELECT (SELECT min(expires_at) FROM payments WHERE shop_id = $1) AS first, (SELECT min(due_at) FROM jobs WHERE kind = 'payment.link_sweep' AND subject_id = $1 || '/test' AND state = 'pending') AS due`,
      [shop.shopId],
    );
    assert.ok(r.rows[0].due !== null && Number(r.rows[0].due) <= Number(r.rows[0].first), `shop ${shop.shopId}: sweep ${r.rows[0].due}, first expiry ${r.rows[0].first}`);
  }
  // And each reads back as created.
  for (const p of payments.slice(0, 5)) {
    const got = await s.request('GET', `/v1/public/payments/${p.id}`, { key: shops[payments.indexOf(p) % 2].key });
    assert.deepEqual([got.status, got.body.status, got.body.public_id], [200, 'pending', p.public_id]);
  }
});

test('a create the database refuses inside a shared transaction fails alone; the others are made once', { skip }, async () => {
  const shop = await s.newShop();
  await admin.query(`CREATE FUNCTION gathered_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.amount = 77777 THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$`);
  await admin.query(`CREATE TRIGGER gathered_refuse BEFORE INSERT ON payments FOR EACH ROW EXECUTE FUNCTION gathered_refuse()`);
  try {
    const N = 40;
    const refused = new Set([7, 19, 33]);
    const answers = await Promise.all(Array.from({ length: N }, (_, i) => create(shop, refused.has(i) ? 77_777 : 2_000 + i, 100 + i)));
    answers.forEach((a, i) => {
      if (refused.has(i)) assert.ok(a.status >= 500, `refused create ${i} answered ${a.status}`);
      else assert.equal(a.status, 201, `create ${i}`);
    });
    const rows = await admin.query(`SELECT amount, count(*)::int AS n FROM payments WHERE shop_id = $1 GROUP BY amount`, [shop.shopId]);
    assert.equal(rows.rows.length, N - refused.size);
    assert.ok(rows.rows.every((r) => r.n === 1 && Number(r.amount) !== 77_777));
    const events = await admin.query(`SELECT count(*)::int AS n FROM events WHERE shop_id = $1 AND kind = 'payment.created'`, [shop.shopId]);
    assert.equal(events.rows[0].n, N - refused.size);
  } finally {
    await admin.query('DROP TRIGGER gathered_refuse ON payments');
    await admin.query('DROP FUNCTION gathered_refuse()');
  }
});

test('live creates that arrive together are gathered too, each through its shop\'s acquirer', { skip }, async () => {
  const shop = await liveTBankShop(s);
  const N = 30;
  const answers = await Promise.all(Array.from({ length: N }, (_, i) => create(shop, 3_000 + i, 200 + i)));
  assert.deepEqual(answers.map((a) => a.status), new Array(N).fill(201));
  assert.ok(answers.every((a) => a.body.mode === 'live'));
  const rows = await admin.query(`SELECT count(*)::int AS n, count(DISTINCT public_id)::int AS p FROM payments WHERE shop_id = $1 AND mode = 'live'`, [shop.shopId]);
  assert.deepEqual(rows.rows[0], { n: N, p: N });
});

test('a create that waited for its transaction longer than a connection wait is refused with 503, and nothing of it is written', { skip }, async () => {
  const shop = await s.newShop();
  const creates = s.running.app.creates!;
  // Every create transaction under way stops at the payments table.
  await admin.query('BEGIN');
  await admin.query('LOCK TABLE payments IN EXCLUSIVE MODE');
  const blocked = [create(shop, 5_000, 0), create(shop, 5_001, 1)];
  for (let i = 0; ; i++) {
    const n = Number((await admin.query(`SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`)).rows[0].n);
    if (n === 2) break;
    assert.ok(i < 400, `two create transactions waiting on the lock (${n})`);
    await new Promise((r) => setTimeout(r, 5));
  }
  const late = [create(shop, 5_002, 2), create(shop, 5_003, 3), create(shop, 5_004, 4)];
  await eventually(() => creates.waitingCount === 3, 'three creates waiting for a transaction');
  time.advance(PG_LIMITS.connect_timeout_ms + 1);
  await admin.query('COMMIT');
  const first = await Promise.all(blocked);
  assert.deepEqual(first.map((r) => r.status), [201, 201]);
  const refused = await Promise.all(late);
  for (const r of refused) {
    assert.equal(r.status, 503);
    assert.match(String(r.body.error?.message), /storage is unavailable; retry shortly/);
  }
  const rows = await admin.query(`SELECT order_id FROM payments WHERE shop_id = $1 ORDER BY order_id`, [shop.shopId]);
  assert.deepEqual(rows.rows.map((r) => r.order_id), ['gathered-0', 'gathered-1']);
  // The queue serves again at once.
  assert.equal((await create(shop, 5_005, 5)).status, 201);
});

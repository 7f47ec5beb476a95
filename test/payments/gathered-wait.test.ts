import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startTestServer, type TestServer } from '../helpers/server';
import { fakeTime, eventually } from '../helpers/fake-time';
import { postgresOnly } from '../helpers/pg';
import { PG_LIMITS } from '../../src/db/limits';

// A create gathered on PostgreSQL waits for a transaction as a request waits for a connection: no longer than
// the connection wait (PG_LIMITS.connect_timeout_ms, or --request-timeout-ms if shorter). One that waited past
// it is refused with 503 before anything of it is written, so a client that gave up on it never finds it made.

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

test('a create that waited for its transaction longer than a connection wait is refused with 503, and nothing of it is written', { skip }, async () => {
  const shop = await s.newShop();
  const create = (n: number) => s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 5_000 + n, order_id: `wait-${n}` } });
  const creates = s.running.app.creates;
  // Every create transaction under way stops at the payments table.
  await admin.query('BEGIN');
  await admin.query('LOCK TABLE payments IN EXCLUSIVE MODE');
  const blocked = [create(0), create(1)];
  for (let i = 0; ; i++) {
    const n = Number((await admin.query(`SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`)).rows[0].n);
    if (n === 2) break;
    assert.ok(i < 400, `two create transactions waiting on the lock (${n})`);
    await new Promise((r) => setTimeout(r, 5));
  }
  const late = [create(2), create(3), create(4)];
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
  assert.deepEqual(rows.rows.map((r) => r.order_id), ['wait-0', 'wait-1']);
  // The queue serves again at once.
  assert.equal((await create(5)).status, 201);
});

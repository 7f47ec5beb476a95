import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startCluster, until, type TestCluster } from '../helpers/cluster';
import { postgresOnly } from '../helpers/pg';
import { runCli } from '../helpers/cli';

// On PostgreSQL each node holds resolved keys in memory, dropped by the change announcements of the key, shop and
// merchant tables (src/platform/storage/postgres/events.ts, keyTablesVersion). These tests hold the cache to what it promises: a change made anywhere
// reaches every node, and a node that cannot hear announcements trusts nothing it held. (What it saves shows in
// bench:cluster: a GET is one statement.)

const skip = postgresOnly();
let c: TestCluster;
before(async () => {
  if (!skip) c = await startCluster(2, {});
});
after(async () => {
  if (!skip) await c.close();
});

let shops = 0;
async function newShop(): Promise<{ shopId: string; key: string; keyId: string }> {
  const { createMerchant, createShop, createKey } = await import('../../src/money/shops/store');
  const now = c.store.now();
  const m = await createMerchant(c.store, `Cache merchant ${++shops}`, now);
  const s = await createShop(c.store, m.id, 'Cache shop', undefined, now);
  const k = await createKey(c.store, s.id, 'test', undefined, now);
  return { shopId: s.id, key: k.secret, keyId: k.key.id };
}

const status = async (i: number, key: string): Promise<number> => (await c.nodes[i].request('GET', '/v1/public/payments?limit=1', { key })).status;

async function withAdmin<T>(fn: (a: pg.Client) => Promise<T>): Promise<T> {
  const a = new pg.Client({ connectionString: c.dbUrl });
  await a.connect();
  try {
    return await fn(a);
  } finally {
    await a.end();
  }
}

test('an allow-list set through the admin command applies on every node within a second, though both held the key', { skip }, async () => {
  const shop = await newShop();
  for (const i of [0, 1]) for (let n = 0; n < 3; n++) assert.equal(await status(i, shop.key), 200);
  const set = await runCli(['shop', 'ip-allowlist', shop.shopId, '203.0.113.0/24', '--db', c.dbUrl]);
  assert.equal(set.code, 0, set.err);
  for (const i of [0, 1]) await until(`node ${i} to apply the allow-list`, async () => (await status(i, shop.key)) === 403, 1_000);
  const cleared = await runCli(['shop', 'ip-allowlist', shop.shopId, '--db', c.dbUrl]);
  assert.equal(cleared.code, 0, cleared.err);
  for (const i of [0, 1]) await until(`node ${i} to drop the allow-list`, async () => (await status(i, shop.key)) === 200, 1_000);
});

test('a key revoked while the nodes could not hear announcements is refused as soon as they hear again', { skip }, async () => {
  const shop = await newShop();
  for (const i of [0, 1]) assert.equal(await status(i, shop.key), 200);
  // Cut every node's LISTEN connection and revoke the key at once: its announcement reaches nobody.
  await withAdmin(async (a) => {
    await a.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'kopek-listen' AND datname = current_database()`);
    await a.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2', [Date.now(), shop.keyId]);
  });
  await until('both nodes to listen again', () =>
    withAdmin(async (a) => Number((await a.query(`SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'kopek-listen' AND datname = current_database() AND query LIKE 'LISTEN kopek_changes%'`)).rows[0].n) >= 2),
  );
  for (const i of [0, 1]) assert.equal(await status(i, shop.key), 401, `node ${i}`);
});

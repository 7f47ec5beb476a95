import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { runCli } from '../helpers/cli';
import { openEngine } from '../../src/platform/storage/maintenance';
import type { Store } from '../../src/platform/storage/store';
import { revokeKey, setShopScopes } from '../../src/money/shops/store';
import { onceApplied } from '../helpers/pg';

// The server caches key lookups. These tests change keys and shops the way an operator does while the
// server runs: admin commands on their own connection (data_version), and the server's own connection
// (triggers). Each first makes a request so that the key is cached, then expects the change on the next one.
// On PostgreSQL a change made on another connection reaches the server as an announcement (NOTIFY, delivered
// at commit): there it is expected within the delivery, bounded by the contract's second.

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

const CLOCK = '/v1/test/clock';
/** Needs api:reports:read. */
const SCOPED = '/v1/public/payments';

/** The answer to `path` once a change made on another connection applies (see onceApplied), checked to be `status`. */
async function afterChange(path: string, key: string, status: number): ReturnType<TestServer['request']> {
  const r = await onceApplied(() => s.request('GET', path, { key }), (x) => x.status === status);
  assert.equal(r.status, status, r.text);
  return r;
}

/** Run `fn` with a second connection to the server's database, as a command in another process would. */
async function elsewhere<T>(fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openEngine(s.dbPath);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

test('kopek key revoke (its own connection) refuses a cached key on the next request', async () => {
  const k = await s.newKey(s.demo.shopId, 'test');
  assert.equal((await s.request('GET', CLOCK, { key: k.key })).status, 200);
  assert.equal((await s.request('GET', CLOCK, { key: k.key })).status, 200);
  const r = await runCli(['key', 'revoke', k.keyId, '--db', s.dbPath]);
  assert.equal(r.code, 0, r.err);
  const after = await afterChange(CLOCK, k.key, 401);
  assert.equal(after.body.error.code, 'unauthorized');
});

test('kopek shop ip-allowlist and scopes take effect on the next request', async () => {
  const shop = await s.newShop();
  assert.equal((await s.request('GET', SCOPED, { key: shop.key })).status, 200);
  let r = await runCli(['shop', 'ip-allowlist', shop.shopId, '203.0.113.9', '--db', s.dbPath]);
  assert.equal(r.code, 0, r.err);
  const blocked = await afterChange(SCOPED, shop.key, 403);
  assert.equal(blocked.body.error.code, 'ip_not_allowed');
  r = await runCli(['shop', 'ip-allowlist', shop.shopId, '--db', s.dbPath]);
  assert.equal(r.code, 0, r.err);
  await afterChange(SCOPED, shop.key, 200);
  r = await runCli(['shop', 'scopes', shop.shopId, 'api:balance:read', '--db', s.dbPath]);
  assert.equal(r.code, 0, r.err);
  const noScope = await afterChange(SCOPED, shop.key, 403);
  assert.equal(noScope.body.error.code, 'scope_required');
});

test('require-signature and live mode switched on another connection apply to a cached key', async () => {
  const shop = await s.newShop();
  assert.equal((await s.request('GET', CLOCK, { key: shop.key })).status, 200);
  const r = await runCli(['shop', 'require-signature', shop.shopId, 'on', '--db', s.dbPath]);
  assert.equal(r.code, 0, r.err);
  const unsigned = await afterChange(CLOCK, shop.key, 401);
  assert.equal(unsigned.body.error.code, 'signature_required');

  const live = await s.newShop({ mode: 'live' });
  assert.equal((await s.request('GET', SCOPED, { key: live.key })).body.error.code, 'live_mode_not_activated');
  await elsewhere((store) => store.tx((tx) => tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', live.merchantId)));
  await afterChange(SCOPED, live.key, 200);
  await elsewhere((store) => store.tx((tx) => tx.run('UPDATE merchants SET live_enabled = 0 WHERE id = ?', live.merchantId)));
  assert.equal((await afterChange(SCOPED, live.key, 403)).body.error.code, 'live_mode_not_activated');
});

test('changes through the server\'s own connection apply at once, and a rolled-back one changes nothing', async () => {
  const shop = await s.newShop();
  assert.equal((await s.request('GET', SCOPED, { key: shop.key })).status, 200);
  // A change that rolls back must not leave the cache with what it wrote.
  await assert.rejects(
    s.store.tx(async (tx) => {
      await tx.run('UPDATE shops SET scopes = ? WHERE id = ?', '', shop.shopId);
      throw new Error('abandoned');
    }),
  );
  assert.equal((await s.request('GET', SCOPED, { key: shop.key })).status, 200);
  await setShopScopes(s.store, shop.shopId, 'api:balance:read');
  assert.equal((await s.request('GET', SCOPED, { key: shop.key })).body.error.code, 'scope_required');
  const k = await s.newKey(shop.shopId, 'test');
  assert.equal((await s.request('GET', CLOCK, { key: k.key })).status, 200);
  await revokeKey(s.store, k.keyId, Date.now());
  assert.equal((await s.request('GET', CLOCK, { key: k.key })).status, 401);
});

test('a cached key deleted on another connection is unknown on the next request', async () => {
  const k = await s.newKey(s.demo.shopId, 'test');
  assert.equal((await s.request('GET', CLOCK, { key: k.key })).status, 200);
  await elsewhere((store) => store.tx((tx) => tx.run('DELETE FROM api_keys WHERE id = ?', k.keyId)));
  await afterChange(CLOCK, k.key, 401);
});

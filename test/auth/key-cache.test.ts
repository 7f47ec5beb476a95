import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { runCli } from '../helpers/cli';
import { openDatabase } from '../../src/db/open';
import { Store } from '../../src/db/store';
import { revokeKey, setShopScopes } from '../../src/cabinet/store';

// The server caches key lookups. These tests change keys and shops the way an operator does while the
// server runs: admin commands on their own connection (data_version), and the server's own connection
// (triggers). Each first makes a request so that the key is cached, then expects the change on the next one.

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

const CLOCK = '/v1/test/clock';
/** Needs api:reports:read. */
const SCOPED = '/v1/public/payments';

/** Run `fn` with a second connection to the server's database, as a command in another process would. */
function elsewhere<T>(fn: (store: Store) => T): T {
  const store = new Store(openDatabase(s.dbPath));
  try {
    return fn(store);
  } finally {
    store.db.close();
  }
}

test('kopek key revoke (its own connection) refuses a cached key on the next request', async () => {
  const k = s.newKey(s.demo.shopId, 'test');
  assert.equal((await s.request('GET', CLOCK, { key: k.key })).status, 200);
  assert.equal((await s.request('GET', CLOCK, { key: k.key })).status, 200);
  const r = await runCli(['key', 'revoke', k.keyId, '--db', s.dbPath]);
  assert.equal(r.code, 0, r.err);
  const after = await s.request('GET', CLOCK, { key: k.key });
  assert.equal(after.status, 401);
  assert.equal(after.body.error.code, 'unauthorized');
});

test('kopek shop ip-allowlist and scopes take effect on the next request', async () => {
  const shop = s.newShop();
  assert.equal((await s.request('GET', SCOPED, { key: shop.key })).status, 200);
  let r = await runCli(['shop', 'ip-allowlist', shop.shopId, '203.0.113.9', '--db', s.dbPath]);
  assert.equal(r.code, 0, r.err);
  const blocked = await s.request('GET', SCOPED, { key: shop.key });
  assert.equal(blocked.status, 403);
  assert.equal(blocked.body.error.code, 'ip_not_allowed');
  r = await runCli(['shop', 'ip-allowlist', shop.shopId, '--db', s.dbPath]);
  assert.equal(r.code, 0, r.err);
  assert.equal((await s.request('GET', SCOPED, { key: shop.key })).status, 200);
  r = await runCli(['shop', 'scopes', shop.shopId, 'api:balance:read', '--db', s.dbPath]);
  assert.equal(r.code, 0, r.err);
  const noScope = await s.request('GET', SCOPED, { key: shop.key });
  assert.equal(noScope.status, 403);
  assert.equal(noScope.body.error.code, 'scope_required');
});

test('require-signature and live mode switched on another connection apply to a cached key', async () => {
  const shop = s.newShop();
  assert.equal((await s.request('GET', CLOCK, { key: shop.key })).status, 200);
  const r = await runCli(['shop', 'require-signature', shop.shopId, 'on', '--db', s.dbPath]);
  assert.equal(r.code, 0, r.err);
  const unsigned = await s.request('GET', CLOCK, { key: shop.key });
  assert.equal(unsigned.status, 401);
  assert.equal(unsigned.body.error.code, 'signature_required');

  const live = s.newShop({ mode: 'live' });
  assert.equal((await s.request('GET', SCOPED, { key: live.key })).body.error.code, 'live_mode_not_activated');
  elsewhere((store) => store.tx(({ db }) => db.prepare('UPDATE merchants SET live_enabled = 1 WHERE id = ?').run(live.merchantId)));
  assert.equal((await s.request('GET', SCOPED, { key: live.key })).status, 200);
  elsewhere((store) => store.tx(({ db }) => db.prepare('UPDATE merchants SET live_enabled = 0 WHERE id = ?').run(live.merchantId)));
  assert.equal((await s.request('GET', SCOPED, { key: live.key })).body.error.code, 'live_mode_not_activated');
});

test('changes through the server\'s own connection apply at once, and a rolled-back one changes nothing', async () => {
  const shop = s.newShop();
  assert.equal((await s.request('GET', SCOPED, { key: shop.key })).status, 200);
  // A change that rolls back must not leave the cache with what it wrote.
  assert.throws(() =>
    s.store.tx(({ db }) => {
      db.prepare('UPDATE shops SET scopes = ? WHERE id = ?').run('', shop.shopId);
      throw new Error('abandoned');
    }),
  );
  assert.equal((await s.request('GET', SCOPED, { key: shop.key })).status, 200);
  setShopScopes(s.store, shop.shopId, 'api:balance:read');
  assert.equal((await s.request('GET', SCOPED, { key: shop.key })).body.error.code, 'scope_required');
  const k = s.newKey(shop.shopId, 'test');
  assert.equal((await s.request('GET', CLOCK, { key: k.key })).status, 200);
  revokeKey(s.store, k.keyId, Date.now());
  assert.equal((await s.request('GET', CLOCK, { key: k.key })).status, 401);
});

test('a cached key deleted on another connection is unknown on the next request', async () => {
  const k = s.newKey(s.demo.shopId, 'test');
  assert.equal((await s.request('GET', CLOCK, { key: k.key })).status, 200);
  elsewhere((store) => store.tx(({ db }) => db.prepare('DELETE FROM api_keys WHERE id = ?').run(k.keyId)));
  assert.equal((await s.request('GET', CLOCK, { key: k.key })).status, 401);
});

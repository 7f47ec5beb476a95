import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { revokeKey, setIpAllowlist, setRequireSignature } from '../../src/money/shops/store';

let s: TestServer;
before(async () => {
  s = await startTestServer({ rateLimitPerSecond: 0.1, rateLimitBurst: 3 });
});
after(() => s.close());

const CLOCK = '/v1/test/clock';
/** A route that needs a scope: the payment register needs api:reports:read. */
const SCOPED = '/v1/public/payments';

async function activateLive(merchantId: string): Promise<void> {
  // No command turns live mode on yet (it waits for a bank connector), so the test flips the flag itself.
  await s.store.write(async (tx) => {
    await tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', merchantId);
  });
}

test('401 unauthorized for a missing, malformed, unknown or revoked key', async () => {
  const cases: Array<[string, Record<string, string>, string | null]> = [
    ['missing', {}, null],
    ['not Bearer', { authorization: `Basic ${s.demo.key}` }, null],
    ['empty Bearer', { authorization: 'Bearer ' }, null],
    ['malformed key', {}, 'sk_test_short'],
    ['wrong prefix', {}, 'pk_test_' + 'a'.repeat(43)],
    ['unknown key', {}, 'sk_test_' + 'a'.repeat(43)],
  ];
  for (const [name, headers, key] of cases) {
    const r = await s.request('GET', CLOCK, { key, headers });
    assert.equal(r.status, 401, name);
    assert.equal(r.body.error.code, 'unauthorized', name);
  }
  const k = await s.newKey(s.demo.shopId, 'test');
  assert.equal((await s.request('GET', CLOCK, { key: k.key })).status, 200);
  await revokeKey(s.store, k.keyId, Date.now());
  const revoked = await s.request('GET', CLOCK, { key: k.key });
  assert.equal(revoked.status, 401);
  assert.equal(revoked.body.error.code, 'unauthorized');
  assert.match(revoked.body.error.message, /revoked/);
});

test('the Bearer scheme is case-insensitive, the key is not', async () => {
  assert.equal((await s.request('GET', CLOCK, { key: null, headers: { authorization: `bearer ${s.demo.key}` } })).status, 200);
  const upper = s.demo.key.replace('sk_test_', 'SK_TEST_');
  assert.equal((await s.request('GET', CLOCK, { key: upper })).status, 401);
});

test('403 live_mode_not_activated for a live key while the merchant has no live mode', async () => {
  const live = await s.newShop({ mode: 'live' });
  const r = await s.request('GET', SCOPED, { key: live.key });
  assert.equal(r.status, 403);
  assert.equal(r.body.error.code, 'live_mode_not_activated');
  await activateLive(live.merchantId);
  const ok = await s.request('GET', SCOPED, { key: live.key });
  assert.equal(ok.status, 200, ok.text);
  assert.deepEqual(ok.body.items, [], 'the live register of a new shop is empty');
});

test('test helpers answer 404 to an activated live key', async () => {
  const live = await s.newShop({ mode: 'live' });
  await activateLive(live.merchantId);
  const r = await s.request('GET', CLOCK, { key: live.key });
  assert.equal(r.status, 404);
  assert.equal(r.body.error.code, 'not_found');
});

test('403 scope_required names the scope; effective scopes are the key\'s that the shop also has', async () => {
  const noScope = await s.newShop({ keyScopes: 'api:balance:read' });
  const r = await s.request('GET', SCOPED, { key: noScope.key });
  assert.equal(r.status, 403);
  assert.equal(r.body.error.code, 'scope_required');
  assert.match(r.body.error.message, /"api:reports:read"/);

  // The key names the scope but its shop does not have it: refused.
  const shopLacks = await s.newShop({ shopScopes: 'api:balance:read', keyScopes: 'api:reports:read,api:balance:read' });
  const r2 = await s.request('GET', SCOPED, { key: shopLacks.key });
  assert.equal(r2.status, 403);
  assert.equal(r2.body.error.code, 'scope_required');

  const both = await s.newShop({ shopScopes: 'api:reports:read', keyScopes: 'api:reports:read' });
  const ok = await s.request('GET', SCOPED, { key: both.key });
  assert.equal(ok.status, 200, ok.text);
  assert.ok(Array.isArray(ok.body.items));
});

test('a new key gets all of its shop\'s scopes', async () => {
  const shop = await s.newShop({ shopScopes: 'api:reports:read' });
  const ok = await s.request('GET', SCOPED, { key: shop.key });
  assert.equal(ok.status, 200, ok.text);
  assert.ok(Array.isArray(ok.body.items));
});

test('the pipeline runs in order: key, live mode, IP, signature, scope', async () => {
  const t = await s.newShop({ mode: 'live', keyScopes: '' });
  await setIpAllowlist(s.store, t.shopId, '203.0.113.1');
  await setRequireSignature(s.store, t.shopId, true);
  // Every check would fail; each step is seen only once the one before it passes.
  const step = async (): Promise<string> => (await s.request('GET', SCOPED, { key: t.key })).body.error.code;
  assert.equal((await s.request('GET', SCOPED, { key: t.key.slice(0, -1) + (t.key.endsWith('A') ? 'B' : 'A') })).body.error.code, 'unauthorized');
  assert.equal(await step(), 'live_mode_not_activated');
  await activateLive(t.merchantId);
  assert.equal(await step(), 'ip_not_allowed');
  await setIpAllowlist(s.store, t.shopId, '127.0.0.1');
  assert.equal(await step(), 'signature_required');
  await setRequireSignature(s.store, t.shopId, false);
  assert.equal(await step(), 'scope_required');
});

test('429 rate_limited with Retry-After once a key spends its burst; other keys are unaffected', async () => {
  const a = await s.newShop();
  const b = await s.newShop();
  for (let i = 0; i < 3; i++) assert.equal((await s.request('GET', CLOCK, { key: a.key })).status, 200, `request ${i + 1}`);
  const limited = await s.request('GET', CLOCK, { key: a.key });
  assert.equal(limited.status, 429);
  assert.equal(limited.body.error.code, 'rate_limited');
  const retry = Number(limited.headers['retry-after']);
  assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= 10, `Retry-After ${limited.headers['retry-after']}`);
  assert.equal((await s.request('GET', CLOCK, { key: b.key })).status, 200);
  // Requests without a valid key are refused before the limiter and do not spend anyone's tokens.
  assert.equal((await s.request('GET', CLOCK, { key: null })).status, 401);
});

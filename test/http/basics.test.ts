import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

test('GET /healthz answers status and version without auth', async () => {
  const r = await s.request('GET', '/healthz', { key: null });
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, { status: 'ok', version: s.running.app.version });
  assert.match(String(r.headers['x-request-id']), /^[0-9a-f-]{36}$/);
});

test('unknown route is 404 not_found in the error shape', async () => {
  const r = await s.request('GET', '/v1/public/nothing-here', { noSchemaCheck: true });
  assert.equal(r.status, 404);
  assert.equal(r.body.error.code, 'not_found');
  assert.ok(r.headers['x-request-id']);
});

test('known path with a wrong method is 405 with Allow', async () => {
  const r = await s.request('DELETE', '/healthz', { key: null });
  assert.equal(r.status, 405);
  assert.equal(r.body.error.code, 'method_not_allowed');
  assert.equal(r.headers['allow'], 'GET, HEAD');
});

test('GET and HEAD /v1/public/payouts/batch are 405 with Allow: POST, not a payout named "batch"', async () => {
  for (const method of ['GET', 'HEAD']) {
    const r = await s.request(method, '/v1/public/payouts/batch');
    assert.equal(r.status, 405, method);
    assert.equal(r.headers['allow'], 'POST', method);
    if (method === 'GET') assert.equal(r.body.error.code, 'method_not_allowed');
  }
});

test('JSON above a few KB is gzipped when the client accepts gzip, and only then; small bodies never', async () => {
  const plain = await s.request('GET', '/v1/openapi.json', { key: null });
  assert.equal(plain.headers['content-encoding'], undefined);
  assert.equal(plain.headers['vary'], 'Accept-Encoding');
  assert.ok(plain.text.length > 20_000);
  const gz = await s.request('GET', '/v1/openapi.json', { key: null, headers: { 'accept-encoding': 'br;q=1.0, gzip;q=0.8, *;q=0.1' } });
  assert.equal(gz.headers['content-encoding'], 'gzip');
  assert.ok(Number(gz.headers['content-length']) < plain.text.length / 4, `gzip body ${gz.headers['content-length']} bytes`);
  assert.equal(gz.text, plain.text);
  const refused = await s.request('GET', '/v1/openapi.json', { key: null, headers: { 'accept-encoding': 'gzip;q=0, identity' } });
  assert.equal(refused.headers['content-encoding'], undefined);
  const small = await s.request('GET', '/healthz', { key: null, headers: { 'accept-encoding': 'gzip' } });
  assert.equal(small.headers['content-encoding'], undefined);
  assert.equal(small.body.status, 'ok');
});

test('test clock advances per shop', async () => {
  const before = await s.request('GET', '/v1/test/clock');
  assert.equal(before.status, 200);
  const adv = await s.request('POST', '/v1/test/clock/advance', { body: { seconds: 3600 } });
  assert.equal(adv.status, 200);
  assert.equal(adv.body.offset_seconds, before.body.offset_seconds + 3600);
  assert.equal(typeof adv.body.jobs_run, 'number');
  // The clock reads an hour later, give or take the real time the two requests took.
  const moved = Date.parse(adv.body.now) - Date.parse(before.body.now);
  assert.ok(moved >= 3_600_000 && moved < 3_610_000, `clock moved ${moved} ms`);
  const other = await s.newShop();
  const o = await s.request('GET', '/v1/test/clock', { key: other.key });
  assert.equal(o.body.offset_seconds, 0);
});

test('POST /v1/test/reset keeps the shop\'s keys and settings and puts the clock back', async () => {
  const shop = await s.newShop({ shopScopes: 'api:reports:read' });
  const extra = await s.newKey(shop.shopId, 'test');
  await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: 600 } });
  const p = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 10000 } });
  assert.equal(p.status, 201, p.text);
  const r = await s.request('POST', '/v1/test/reset', { key: shop.key });
  assert.equal(r.status, 200);
  assert.equal(r.body.clock.offset_seconds, 0);
  assert.equal(r.body.deleted.payments, 1);
  assert.equal(r.body.deleted.api_keys, undefined);
  assert.equal((await s.request('GET', `/v1/public/payments/${p.body.payment.id}`, { key: shop.key })).status, 404);
  // Both keys still work, and the shop still lacks the scopes it never had.
  assert.equal((await s.request('GET', '/v1/test/clock', { key: shop.key })).status, 200);
  assert.equal((await s.request('GET', '/v1/test/clock', { key: extra.key })).status, 200);
  const scopes = (await s.store.get<{ scopes: string }>('SELECT scopes FROM shops WHERE id = ?', shop.shopId))!.scopes;
  assert.equal(scopes, 'api:reports:read');
});

test('POST /v1/test/reset with a body field is 400 and deletes nothing', async () => {
  const shop = await s.newShop();
  await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: 60 } });
  const p = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 10000 } });
  const r = await s.request('POST', '/v1/test/reset', { key: shop.key, body: { mode: 'live' } });
  assert.equal(r.status, 400);
  assert.deepEqual(r.body.error, { code: 'bad_request', message: 'Cannot POST /v1/test/reset: unknown field "mode"; this request takes no body fields', param: 'mode' });
  assert.equal((await s.request('GET', `/v1/public/payments/${p.body.payment.id}`, { key: shop.key })).status, 200);
  assert.equal((await s.request('GET', '/v1/test/clock', { key: shop.key })).body.offset_seconds, 60);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { startTestServer, type TestServer, type TestShop } from '../helpers/server';
import { rotateSigningSecret, setRequireSignature } from '../../src/money/shops/store';

let s: TestServer;
let shop: TestShop;
let secret: string;
before(async () => {
  s = await startTestServer();
  shop = await s.newShop();
  secret = await rotateSigningSecret(s.store, shop.shopId);
  await setRequireSignature(s.store, shop.shopId, true);
});
after(() => s.close());

const ADVANCE = '/v1/test/clock/advance';

function sign(body: string | Buffer, key = secret): string {
  return 'sha256=' + createHmac('sha256', key).update(body).digest('hex');
}

test('a request without X-PSP-Signature is 401 signature_required', async () => {
  const r = await s.request('POST', ADVANCE, { key: shop.key, body: '{"seconds":0}' });
  assert.equal(r.status, 401);
  assert.equal(r.body.error.code, 'signature_required');
  const empty = await s.request('GET', '/v1/test/clock', { key: shop.key, headers: { 'x-psp-signature': '' } });
  assert.equal(empty.body.error.code, 'signature_required');
});

test('a signature over the exact raw bytes is accepted', async () => {
  const body = '{ "seconds" : 60 }\n';
  const r = await s.request('POST', ADVANCE, { key: shop.key, body, headers: { 'x-psp-signature': sign(body) } });
  assert.equal(r.status, 200);
  assert.equal(r.body.offset_seconds, 60);
});

test('upper-case hex is the same signature', async () => {
  const body = '{"seconds":0}';
  const r = await s.request('POST', ADVANCE, { key: shop.key, body, headers: { 'x-psp-signature': sign(body).toUpperCase().replace('SHA256=', 'sha256=') } });
  assert.equal(r.status, 200);
});

test('a signature of the same JSON value with other bytes is 401 invalid_signature', async () => {
  const sent = '{ "seconds": 0 }';
  const r = await s.request('POST', ADVANCE, { key: shop.key, body: sent, headers: { 'x-psp-signature': sign('{"seconds":0}') } });
  assert.equal(r.status, 401);
  assert.equal(r.body.error.code, 'invalid_signature');
});

test('wrong secret, other prefix, truncated hex: 401 invalid_signature', async () => {
  const body = '{"seconds":0}';
  const good = sign(body);
  for (const header of [sign(body, 'thm_not-the-secret'), good.replace('sha256=', 'sha1='), good.slice(0, -2), 'garbage', good.slice(7)]) {
    const r = await s.request('POST', ADVANCE, { key: shop.key, body, headers: { 'x-psp-signature': header } });
    assert.equal(r.status, 401, header);
    assert.equal(r.body.error.code, 'invalid_signature', header);
  }
});

test('the HMAC key is the whole secret including its thm_ prefix', async () => {
  const body = '{"seconds":0}';
  assert.ok(secret.startsWith('thm_'));
  const r = await s.request('POST', ADVANCE, { key: shop.key, body, headers: { 'x-psp-signature': sign(body, secret.slice(4)) } });
  assert.equal(r.body.error.code, 'invalid_signature');
});

test('a GET signs the empty string', async () => {
  const ok = await s.request('GET', '/v1/test/clock', { key: shop.key, headers: { 'x-psp-signature': sign('') } });
  assert.equal(ok.status, 200);
  const wrong = await s.request('GET', '/v1/test/clock', { key: shop.key, headers: { 'x-psp-signature': sign('{}') } });
  assert.equal(wrong.body.error.code, 'invalid_signature');
});

test('a bodiless POST signs the empty string too', async () => {
  const r = await s.request('POST', '/v1/test/reset', { key: shop.key, headers: { 'x-psp-signature': sign('') } });
  assert.equal(r.status, 200);
});

test('rotating the secret invalidates the old one at once', async () => {
  const old = secret;
  secret = await rotateSigningSecret(s.store, shop.shopId);
  const r = await s.request('GET', '/v1/test/clock', { key: shop.key, headers: { 'x-psp-signature': sign('', old) } });
  assert.equal(r.body.error.code, 'invalid_signature');
  assert.equal((await s.request('GET', '/v1/test/clock', { key: shop.key, headers: { 'x-psp-signature': sign('') } })).status, 200);
});

test('shops that do not require a signature ignore the header', async () => {
  const other = await s.newShop();
  const r = await s.request('GET', '/v1/test/clock', { key: other.key, headers: { 'x-psp-signature': 'sha256=00' } });
  assert.equal(r.status, 200);
  await setRequireSignature(s.store, other.shopId, true);
  assert.equal((await s.request('GET', '/v1/test/clock', { key: other.key })).body.error.code, 'signature_required');
});

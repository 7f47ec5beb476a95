import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { startTestServer, type TestServer, type TestShop } from '../helpers/server';
import { rotateSigningSecret, setRequireSignature } from '../../src/money/shops/store';

// The request signature covers exactly the bytes received. A GET takes no body: one sent with a body is
// refused (400) before the signature is checked, whatever it signs, so no GET passes with a signature over
// bytes other than those sent. Only an empty body signs the empty string.

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

function sign(body: string): string {
  return 'sha256=' + createHmac('sha256', secret).update(body).digest('hex');
}

test('a GET with a body was signed against the empty string', async () => {
  for (const signed of ['', '{"x":1}']) {
    const r = await s.request('GET', '/v1/public/balance', { key: shop.key, body: '{"x":1}', headers: { 'x-psp-signature': sign(signed) } });
    assert.equal(r.status, 400, `body {"x":1} signed as ${JSON.stringify(signed)}`);
    assert.equal(r.body.error.code, 'bad_request');
    assert.match(r.body.error.message, /^Cannot GET \/v1\/public\/balance: a GET request takes no body \(got 7 bytes\)/);
  }
  const ok = await s.request('GET', '/v1/public/balance', { key: shop.key, headers: { 'x-psp-signature': sign('') } });
  assert.equal(ok.status, 200);
});

test('a GET with a body is refused for a shop that asks no signature too, and a keyless one is 401 before its body is read', async () => {
  const plain = await s.newShop();
  const r = await s.request('GET', '/v1/public/balance', { key: plain.key, body: '{"x":1}' });
  assert.equal(r.status, 400);
  const keyless = await s.request('GET', '/v1/public/balance', { key: null, body: '{"x":1}' });
  assert.equal(keyless.status, 401);
});

/** A raw GET with chunked transfer encoding; `chunks` are the body's pieces (none: an empty body). */
function chunkedGet(path: string, chunks: string[], signature: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(new URL(path, s.url), {
      method: 'GET',
      headers: { authorization: `Bearer ${shop.key}`, 'x-psp-signature': signature, 'transfer-encoding': 'chunked' },
      agent: false,
    }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    for (const c of chunks) req.write(c);
    req.end();
  });
}

test('a chunked GET body is read to the end: empty it signs the empty string, non-empty it is refused', async () => {
  assert.equal((await chunkedGet('/v1/public/balance', [], sign(''))).status, 200);
  const r = await chunkedGet('/v1/public/balance', ['{"x"', ':1}'], sign('{"x":1}'));
  assert.equal(r.status, 400);
  assert.equal(r.body.error.code, 'bad_request');
});

test('a POST is signed over exactly the bytes sent, and an empty POST over the empty string', async () => {
  const body = '{"seconds":0} ';
  assert.equal((await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body, headers: { 'x-psp-signature': sign(body) } })).status, 200);
  const other = await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body, headers: { 'x-psp-signature': sign('{"seconds":0}') } });
  assert.equal(other.body.error.code, 'invalid_signature');
  assert.equal((await s.request('POST', '/v1/test/reset', { key: shop.key, headers: { 'x-psp-signature': sign('') } })).status, 200);
});

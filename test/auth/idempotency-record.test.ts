import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { decodeRecord, encodeRecord, objectIdOf } from '../../src/auth/idempotency-record';

const PIECES = ['","status":"', '/pay/', '":"', 'http://', '.000Z"', '\u0007', '\u001f', '\n', '"', '\\', 'é', '𝄞', '{"id":"', '","amount":'];

function randomValue(depth: number, seed: { n: number }): unknown {
  const r = () => ((seed.n = (seed.n * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const text = () => Array.from({ length: Math.floor(r() * 6) }, () => PIECES[Math.floor(r() * PIECES.length)]).join('');
  if (depth > 2 || r() < 0.4) return r() < 0.5 ? text() : Math.floor(r() * 1e6);
  if (r() < 0.3) return Array.from({ length: Math.floor(r() * 3) }, () => randomValue(depth + 1, seed));
  const o: Record<string, unknown> = {};
  for (let i = 0; i < 1 + r() * 4; i++) o[text() || `k${i}`] = randomValue(depth + 1, seed);
  return o;
}

test('a record decodes to the exact text it was made from, whatever strings the answer holds', () => {
  const seed = { n: 7 };
  for (let i = 0; i < 3000; i++) {
    const shopId = randomUUID();
    const merchantId = randomUUID();
    const id = randomUUID();
    const json = JSON.stringify({ id, shop_id: shopId, merchant_id: merchantId, url: `http://127.0.0.1:8080/pay/${id}`, v: randomValue(0, seed) });
    const ids = { objectId: objectIdOf(json), shopId, merchantId };
    assert.equal(ids.objectId, id);
    const stored = encodeRecord(json, ids);
    assert.ok(stored.length < Buffer.byteLength(json));
    assert.equal(decodeRecord(stored, ids), json);
  }
});

test('an answer with nothing to mark is stored as its plain text, and plain text reads back as is', () => {
  const json = JSON.stringify({ results: [] });
  const ids = { objectId: objectIdOf(json), shopId: randomUUID(), merchantId: randomUUID() };
  assert.equal(ids.objectId, null);
  const stored = encodeRecord(json, ids);
  assert.equal(stored.toString('utf8'), json);
  assert.equal(decodeRecord(stored, ids), json);
});

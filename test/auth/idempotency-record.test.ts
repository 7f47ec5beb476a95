import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { decodeRecord, encodeRecord, objectIdOf } from '../../src/auth/idempotency-record';

const PIECES = ['","status":"', '","status":"pending","expires_at":"', '/v1/test/clock/advance"}}}', '/v1/test/', '/pay/', '":"', 'http://', '.000Z"', '\u0007', '\u001f', '\n', '"', '\\', 'é', '𝄞', '{"id":"', '","amount":'];

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

/**
 * The first encoder of this form, kept as the reference: the ids replaced in turn, then one regular expression over
 * the phrases, longest first. Records written by either are the same bytes.
 */
const PHRASES_V1 = ['","merchant_id":"', '","shop_id":"', '{"payment":{"id":"', '","public_id":"P-', '","order_id":"', '","currency":"RUB","method":"', '","status":"pending","expires_at":"', '","created_at":"', '","metadata":{', '"simulator_outcome":"', '","simulator_failure_code":"', '"}},"payment_url":"', '","mode":"test","simulator":{"outcome":"', '","failure_code":"', '","actions":{"pay_page":"', '/v1/test/payments/', '/simulate","clock_advance":"', '/v1/test/clock/advance"}}}', '/pay/', '","status":"', '","amount":', '{"id":"', '"payout":{"id":"', '","customer_ref":"', 'http://', '.000Z"', '":"'];
function referenceEncode(json: string, ids: { objectId: string | null; shopId: string; merchantId: string }): Buffer {
  let t = json;
  if (ids.objectId) t = t.replaceAll(ids.objectId, '\u0002');
  t = t.replaceAll(ids.shopId, '\u0003').replaceAll(ids.merchantId, '\u0004');
  const re = new RegExp([...PHRASES_V1].sort((a, b) => b.length - a.length).map((p) => p.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|'), 'g');
  t = t.replace(re, (p) => String.fromCharCode(5 + PHRASES_V1.indexOf(p)));
  return t.length === json.length ? Buffer.from(json) : Buffer.concat([Buffer.from([1]), Buffer.from(t)]);
}

test('the one-pass encoder writes the same bytes as the first encoder of the form (regex over the text)', () => {
  const seed = { n: 11 };
  for (let i = 0; i < 3000; i++) {
    const shopId = randomUUID();
    const merchantId = randomUUID();
    const id = randomUUID();
    const base = `http://127.0.0.1:${8000 + i}`;
    const json = JSON.stringify({
      payment: { id, public_id: `P-${i}`, merchant_id: merchantId, shop_id: shopId, order_id: `o-${i}`, amount: 100 + i, currency: 'RUB', method: 'any', status: 'pending', expires_at: '2026-11-25T10:55:40.000Z', created_at: '2026-11-24T10:55:40.081Z', metadata: { v: randomValue(0, seed) } },
      payment_url: `${base}/pay/${id}`,
      mode: 'test',
      simulator: { outcome: 'succeeded', failure_code: '', actions: { pay_page: `${base}/pay/${id}`, simulate: `${base}/v1/test/payments/${id}/simulate`, clock_advance: `${base}/v1/test/clock/advance` } },
      w: randomValue(0, seed),
    });
    const ids = { objectId: objectIdOf(json), shopId, merchantId };
    assert.deepEqual(encodeRecord(json, ids), referenceEncode(json, ids));
  }
  // Longer than the encoder's first scratch space, with characters of several bytes throughout.
  const id = randomUUID();
  const big = JSON.stringify({ id, items: Array.from({ length: 2_000 }, (_, k) => ({ id, note: `é𝄞 ${k}`, status: 'paid' })) });
  const ids = { objectId: id, shopId: randomUUID(), merchantId: randomUUID() };
  assert.deepEqual(encodeRecord(big, ids), referenceEncode(big, ids));
  assert.equal(decodeRecord(encodeRecord(big, ids), ids), big);
});

test('ids of several-byte characters, more bytes together than the encoder first keeps room for, are marked whole', () => {
  // 60 characters each, of two bytes: their first scratch space was sized by the longest id alone.
  const ids = { objectId: `obj-${'é'.repeat(56)}`, shopId: `shop-${'ж'.repeat(55)}`, merchantId: `m-${'é'.repeat(58)}` };
  const text = JSON.stringify({ id: ids.objectId, shop_id: ids.shopId, merchant_id: ids.merchantId, url: `http://h/pay/${ids.objectId}`, note: 'é𝄞ж' });
  assert.equal(objectIdOf(text), ids.objectId);
  assert.deepEqual(encodeRecord(text, ids), referenceEncode(text, ids));
  assert.equal(decodeRecord(encodeRecord(text, ids), ids), text);
});

test('an answer with nothing to mark is stored as its plain text, and plain text reads back as is', () => {
  const json = JSON.stringify({ results: [] });
  const ids = { objectId: objectIdOf(json), shopId: randomUUID(), merchantId: randomUUID() };
  assert.equal(ids.objectId, null);
  const stored = encodeRecord(json, ids);
  assert.equal(stored.toString('utf8'), json);
  assert.equal(decodeRecord(stored, ids), json);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer, type TestShop } from '../helpers/server';
import { createKey, createShop } from '../../src/money/shops/store';
import { paidPayment } from '../helpers/money';
import { activeToken } from '../helpers/recurrent';
import { cardBody, KNOWN_BANK, sbpBody } from '../helpers/payouts';
import { storedText } from '../helpers/stored-text';
import { tableColumns } from '../../src/platform/storage/dialect';

const sbpItem = (amount: number, phone: string) => ({ amount, phone, bank_id: KNOWN_BANK, full_name: 'Anna Ivanova' });

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

const PAYMENTS = '/v1/public/payments';

function create(key: string, idem: string | undefined, body: unknown) {
  return s.request('POST', PAYMENTS, { key, body, headers: idem === undefined ? {} : { 'idempotency-key': idem } });
}

async function paymentCount(shop: TestShop): Promise<number> {
  const r = await s.request('GET', `${PAYMENTS}?limit=200`, { key: shop.key });
  assert.equal(r.status, 200);
  return r.body.items.length;
}

test('a replay answers 200 with the stored body and "idempotent": true; nothing new is created', async () => {
  const shop = await s.newShop();
  const first = await create(shop.key, 'order-1', { amount: 10000, order_id: 'A-1' });
  assert.equal(first.status, 201);
  assert.equal(first.body.idempotent, undefined);
  const again = await create(shop.key, 'order-1', { order_id: 'A-1', amount: 10000 });
  assert.equal(again.status, 200);
  assert.equal(again.body.idempotent, true);
  assert.equal(again.body.payment.id, first.body.payment.id);
  assert.deepEqual(again.body.payment, first.body.payment);
  assert.equal(await paymentCount(shop), 1);
});

test('the same key with a different body is 409 idempotent_conflict quoting the key', async () => {
  const shop = await s.newShop();
  assert.equal((await create(shop.key, 'k-conflict', { amount: 10000 })).status, 201);
  const r = await create(shop.key, 'k-conflict', { amount: 10001 });
  assert.equal(r.status, 409);
  assert.equal(r.body.error.code, 'idempotent_conflict');
  assert.match(r.body.error.message, /"k-conflict"/);
  assert.equal(await paymentCount(shop), 1);
});

/** The canonical text of a body as records have always fingerprinted it: keys sorted at every level, by code unit. */
function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
    .join(',')}}`;
}

test('a record keeps the fingerprint of the canonical body (keys sorted at every level), so records of earlier versions still match', async () => {
  const shop = await s.newShop();
  const { createHash } = await import('node:crypto');
  // The first 16 bytes of the digest, as 32 hex digits.
  const fingerprint = (route: string, body: unknown) => createHash('sha256').update(`${shop.shopId} test POST ${route} {}\n${canonicalJson(body)}`).digest('hex').slice(0, 32);
  const stored = async (key: string) =>
    (await s.store.get<{ fingerprint: string }>('SELECT fingerprint FROM idempotency_keys WHERE merchant_id = ? AND key = ?', shop.merchantId, key))!.fingerprint;
  // Integer-like keys, which an object lists first and in numeric order, sort here as text.
  const payment = { metadata: { b: 'x', '10': 'ten', '9': 'nine', A: 'upper', é: 'accent' }, order_id: 'CANON-1', amount: 10000 };
  const first = await create(shop.key, 'k-canonical', payment);
  assert.equal(first.status, 201, first.text);
  assert.match(await stored('k-canonical'), /^[0-9a-f]{32}$/);
  assert.equal(await stored('k-canonical'), fingerprint(PAYMENTS, payment));
  const reordered = { amount: 10000, order_id: 'CANON-1', metadata: { '9': 'nine', é: 'accent', A: 'upper', '10': 'ten', b: 'x' } };
  const again = await create(shop.key, 'k-canonical', reordered);
  assert.equal(again.status, 200, again.text);
  assert.equal(again.body.idempotent, true);
  // Objects inside an array are sorted too; the array keeps its order.
  const items = [
    { phone: '+79000000004', amount: 1500, full_name: 'Anna Ivanova', bank_id: KNOWN_BANK },
    { full_name: 'Boris Petrov', amount: 1600, bank_id: KNOWN_BANK, phone: '+79000000005' },
  ];
  const batch = { items, method: 'payouts_sbp' };
  const headers = { 'idempotency-key': 'k-canonical-batch' };
  assert.equal((await s.request('POST', '/v1/public/payouts/batch', { key: shop.key, body: batch, headers })).status, 201);
  assert.equal(await stored('k-canonical-batch'), fingerprint('/v1/public/payouts/batch', batch));
  const sameItems = { method: 'payouts_sbp', items: items.map((i) => ({ bank_id: i.bank_id, amount: i.amount, phone: i.phone, full_name: i.full_name })) };
  assert.equal((await s.request('POST', '/v1/public/payouts/batch', { key: shop.key, body: sameItems, headers })).status, 200);
  assert.equal((await s.request('POST', '/v1/public/payouts/batch', { key: shop.key, body: { ...batch, items: [items[1], items[0]] }, headers })).status, 409);
});

test('Idempotency-Key: 64 characters are accepted, 65 are 400 naming the header, empty is 400', async () => {
  const shop = await s.newShop();
  assert.equal((await create(shop.key, 'k'.repeat(64), { amount: 10000 })).status, 201);
  const long = await create(shop.key, 'k'.repeat(65), { amount: 10000 });
  assert.equal(long.status, 400);
  assert.equal(long.body.error.code, 'bad_request');
  assert.equal(long.body.error.param, 'Idempotency-Key');
  const empty = await create(shop.key, '', { amount: 10000 });
  assert.equal(empty.status, 400);
  assert.equal(await paymentCount(shop), 1);
});

test('keys are scoped per merchant: the same key in two merchants makes two objects', async () => {
  const a = await s.newShop();
  const b = await s.newShop();
  const ra = await create(a.key, 'shared-key', { amount: 10000 });
  const rb = await create(b.key, 'shared-key', { amount: 10000 });
  assert.equal(ra.status, 201);
  assert.equal(rb.status, 201);
  assert.notEqual(ra.body.payment.id, rb.body.payment.id);
  assert.equal(rb.body.payment.shop_id, b.shopId);
});

test('another shop of the same merchant reusing a key gets a conflict, never the first shop\'s object', async () => {
  const a = await s.newShop();
  const shop2 = await createShop(s.store, a.merchantId, 'Second shop', undefined, Date.now());
  const key2 = (await createKey(s.store, shop2.id, 'test', undefined, Date.now())).secret;
  assert.equal((await create(a.key, 'merchant-wide', { amount: 10000 })).status, 201);
  const r = await create(key2, 'merchant-wide', { amount: 10000 });
  assert.equal(r.status, 409);
  assert.equal(r.body.error.code, 'idempotent_conflict');
});

test('a key used by a test key is free for the same shop\'s live key: test and live are separate namespaces, as separate books', async () => {
  const a = await s.newShop();
  await s.store.write(async (tx) => {
    await tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', a.merchantId);
  });
  const live = await s.newKey(a.shopId, 'live');
  const t = await create(a.key, 'order-77', { amount: 10000 });
  const l = await create(live.key, 'order-77', { amount: 10000 });
  assert.equal(t.status, 201);
  assert.equal(l.status, 201, 'not 409: the live book has never seen this key');
  assert.notEqual(l.body.payment.id, t.body.payment.id);
  assert.equal(l.body.mode, 'live');
  // Each mode replays its own object.
  assert.equal((await create(live.key, 'order-77', { amount: 10000 })).body.payment.id, l.body.payment.id);
  assert.equal((await create(a.key, 'order-77', { amount: 10000 })).body.payment.id, t.body.payment.id);
});

test('two different cards with the same last four digits under one key are two requests: the second is 409, never a replay of the first payout', async () => {
  const shop = await s.newShop();
  await paidPayment(s, shop.key, 50_000);
  const first = await s.request('POST', '/v1/public/payouts', { key: shop.key, body: cardBody(1_000, { card_pan: '4111111111111111' }), headers: { 'Idempotency-Key': 'card-key' } });
  assert.equal(first.status, 201, first.text);
  const replay = await s.request('POST', '/v1/public/payouts', { key: shop.key, body: cardBody(1_000, { card_pan: '4111111111111111' }), headers: { 'Idempotency-Key': 'card-key' } });
  assert.equal(replay.status, 200);
  assert.equal(replay.body.payout.id, first.body.payout.id);
  const other = await s.request('POST', '/v1/public/payouts', { key: shop.key, body: cardBody(1_000, { card_pan: '2200000000081111' }), headers: { 'Idempotency-Key': 'card-key' } });
  assert.equal(other.status, 409, 'another card is another request');
  assert.equal(other.body.error.code, 'idempotent_conflict');
  // Nothing stored reveals the number: not in clear, not as a plain SHA-256 of it.
  const { createHash } = await import('node:crypto');
  const bytes = await storedText(s);
  assert.ok(!bytes.includes('4111111111111111'));
  assert.ok(!bytes.includes(createHash('sha256').update('4111111111111111').digest('hex')));
});

test('a refused create stores no record: the key can be used again with a valid body', async () => {
  const shop = await s.newShop();
  const bad = await create(shop.key, 'k-retry', { amount: -5 });
  assert.equal(bad.status, 400);
  const good = await create(shop.key, 'k-retry', { amount: 10000 });
  assert.equal(good.status, 201);
});

test('a duplicate Idempotency-Key raced from 50 concurrent requests yields one object', async () => {
  const shop = await s.newShop();
  const N = 50;
  const results = await Promise.all(Array.from({ length: N }, () => create(shop.key, 'k-race', { amount: 25000 })));
  const created = results.filter((r) => r.status === 201);
  const replays = results.filter((r) => r.status === 200);
  assert.equal(created.length, 1, results.map((r) => r.status).join(' '));
  assert.equal(replays.length, N - 1, results.map((r) => r.status).join(' '));
  assert.equal(created[0].body.idempotent, undefined);
  for (const r of replays) {
    assert.equal(r.body.idempotent, true);
    assert.equal(r.text, created[0].text.slice(0, -1) + ',"failure_code":"","failure_message":"","idempotent":true}');
  }
  assert.equal(new Set(results.map((r) => r.body.payment.id)).size, 1);
  assert.deepEqual(await s.store.get('SELECT count(*) AS n FROM payments WHERE shop_id = ?', shop.shopId), { n: 1 });
  assert.deepEqual(await s.store.get('SELECT count(*) AS n FROM idempotency_keys WHERE merchant_id = ? AND key = ?', shop.merchantId, 'k-race'), { n: 1 });
  assert.equal(await paymentCount(shop), 1);
});

test('without an Idempotency-Key identical requests make separate objects', async () => {
  const shop = await s.newShop();
  const [x, y] = await Promise.all([create(shop.key, undefined, { amount: 10000 }), create(shop.key, undefined, { amount: 10000 })]);
  assert.equal(x.status, 201);
  assert.equal(y.status, 201);
  assert.notEqual(x.body.payment.id, y.body.payment.id);
  assert.equal(await paymentCount(shop), 2);
});

test('the record survives a restart', async () => {
  const shop = await s.newShop();
  const first = await create(shop.key, 'k-durable', { amount: 10000 });
  await s.restart();
  const again = await create(shop.key, 'k-durable', { amount: 10000 });
  assert.equal(again.status, 200);
  assert.equal(again.body.payment.id, first.body.payment.id);
});


test('records are kept in the order they are made; after a restart every key replays its own object', async () => {
  const shop = await s.newShop();
  const { randomUUID } = await import('node:crypto');
  const keys = Array.from({ length: 12 }, () => randomUUID());
  const firsts = [];
  for (const [i, k] of keys.entries()) {
    const r = await create(shop.key, k, { amount: 10_000 + i });
    assert.equal(r.status, 201, r.text);
    firsts.push(r);
  }
  const seqs: number[] = [];
  for (const k of keys) seqs.push((await s.store.get<{ seq: number }>('SELECT seq FROM idempotency_keys WHERE merchant_id = ? AND key = ?', shop.merchantId, k))!.seq);
  assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), 'random keys, records in the order made');
  await s.restart();
  for (const [i, k] of keys.entries()) {
    const again = await create(shop.key, k, { amount: 10_000 + i });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.text, firsts[i].text.slice(0, -1) + ',"failure_code":"","failure_message":"","idempotent":true}');
  }
  assert.equal((await create(shop.key, keys[0], { amount: 1 })).status, 409);
  assert.equal(await paymentCount(shop), keys.length);
});

test('the database itself refuses a second record of one key (merchant, mode, key): the first record is unchanged', async () => {
  const shop = await s.newShop();
  const first = await create(shop.key, 'k-unique', { amount: 10000 });
  assert.equal(first.status, 201);
  const record = () =>
    s.store.get<{ seq: number; fingerprint: string; answer: string; created_at: number }>(
      'SELECT seq, fingerprint, answer, created_at FROM idempotency_keys WHERE merchant_id = ? AND mode = ? AND key = ?',
      shop.merchantId,
      'test',
      'k-unique',
    );
  const before = (await record())!;
  assert.equal(before.answer, first.text);
  await assert.rejects(
    s.store.write((tx) =>
      tx.run(
        'INSERT INTO idempotency_keys (merchant_id, mode, key, fingerprint, answer, created_at) VALUES (?, ?, ?, ?, ?, ?)',
        shop.merchantId,
        'test',
        'k-unique',
        '0'.repeat(32),
        '{"forged":true}',
        Date.now(),
      ),
    ),
    s.store.engine === 'postgres'
      ? /duplicate key value violates unique constraint "idempotency_keys_merchant_id_mode_key_key"/
      : /UNIQUE constraint failed: idempotency_keys\.merchant_id, idempotency_keys\.mode, idempotency_keys\.key/,
  );
  assert.deepEqual(await record(), before);
  assert.deepEqual(await s.store.get('SELECT count(*) AS n FROM idempotency_keys WHERE merchant_id = ? AND key = ?', shop.merchantId, 'k-unique'), { n: 1 });
  const again = await create(shop.key, 'k-unique', { amount: 10000 });
  assert.equal(again.status, 200);
  assert.equal(again.text, first.text.slice(0, -1) + ',"failure_code":"","failure_message":"","idempotent":true}');
});

test('a replay is the first answer byte for byte, plus "idempotent": true, on every create route; the record keeps that text as sent', async () => {
  const shop = await s.newShop();
  const paid = await paidPayment(s, shop.key, 500_000);
  const token = await activeToken(s, { customer_ref: 'cust-bytes' }, shop.key);
  // A token charge's replay tells where the charge stands now: its first answer with the current status.
  const nowStatus = async (text: string) => {
    const id = JSON.parse(text).id as string;
    const status = (await s.request('GET', `${PAYMENTS}/${id}`, { key: shop.key })).body.status as string;
    return text.replace(/"status":"[a-z_]+"/, `"status":"${status}"`);
  };
  const routes: Array<{ path: string; body: Record<string, unknown>; more?: string; now?: (text: string) => Promise<string> }> = [
    // A payment replay also carries its current failure code and message, empty while it has none.
    { path: PAYMENTS, body: { amount: 10000, order_id: 'B-1', description: 'Bytes', metadata: { cart: '7' } }, more: ',"failure_code":"","failure_message":""' },
    { path: `${PAYMENTS}/${paid}/refund`, body: { amount: 100, reason: 'bytes' } },
    { path: '/v1/public/payouts', body: sbpBody(1000) },
    { path: '/v1/public/payouts', body: cardBody(1100) },
    { path: '/v1/public/payouts/batch', body: { method: 'payouts_sbp', items: [sbpItem(1200, '+79000000001'), sbpItem(1300, '+79000000002'), { amount: 1 }] } },
    { path: '/v1/public/tokens', body: { customer_ref: 'cust-bytes-2', customer_email: 'b@example.com' } },
    { path: '/v1/public/subscriptions', body: { amount: 49900, customer_ref: 'cust-bytes-3', period: 'month', plan_name: 'Pro' } },
    { path: `/v1/public/tokens/${token.id}/charge`, body: { amount: 2500, order_id: 'renewal-1' }, now: nowStatus },
  ];
  for (const [n, r] of routes.entries()) {
    const headers = { 'idempotency-key': `bytes-${n}` };
    const first = await s.request('POST', r.path, { key: shop.key, body: r.body, headers });
    assert.equal(first.status, 201, `${r.path}: ${first.text}`);
    // Let a charge settle first, so that the status the replay shows cannot change before it is compared.
    if (r.now) assert.equal((await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: 10 } })).status, 200);
    const again = await s.request('POST', r.path, { key: shop.key, body: r.body, headers });
    assert.equal(again.status, 200, `${r.path}: ${again.text}`);
    const answer = r.now ? await r.now(first.text) : first.text;
    assert.equal(again.text, answer.slice(0, -1) + (r.more ?? '') + ',"idempotent":true}', r.path);
    // The record keeps the first answer as the JSON text first sent, byte for byte, and the request's fingerprint
    // as 32 hex digits.
    const rec = (await s.store.get<{ fingerprint: string; answer: string; t: string }>(
      `SELECT fingerprint, answer, ${s.store.engine === 'postgres' ? 'pg_typeof(answer)::text' : 'typeof(answer)'} AS t FROM idempotency_keys WHERE merchant_id = ? AND mode = ? AND key = ?`,
      shop.merchantId,
      'test',
      headers['idempotency-key'],
    ))!;
    assert.equal(rec.t, 'text', r.path);
    assert.equal(rec.answer, first.text, r.path);
    assert.match(rec.fingerprint, /^[0-9a-f]{32}$/, r.path);
  }
  // No object's row keeps an answer any more.
  for (const table of ['payments', 'refunds', 'payouts', 'tokens', 'subscriptions']) {
    const cols = await tableColumns(s.store, table);
    assert.ok(cols.length > 0 && !cols.includes('answer'), table);
  }
});

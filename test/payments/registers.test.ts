import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer, type TestShop } from '../helpers/server';
import { advance, createPayment, succeededPayment } from '../helpers/payments';

let s: TestServer;
let shop: TestShop;
const dayA: string[] = [];
const dayB: string[] = [];
let dA = '';
let dB = '';

async function createMany(n: number, into: string[]): Promise<void> {
  for (let i = 0; i < n; i += 25) {
    const batch = await Promise.all(Array.from({ length: Math.min(25, n - i) }, (_, j) => createPayment(s, { amount: 100 + i + j, order_id: `o-${into.length + i + j}`, ttl_minutes: 10080 }, shop.key)));
    into.push(...batch.map((b) => b.payment.id));
  }
}

before(async () => {
  // The test bank answers only when the clock passes a minute, so the helpers drive each move.
  s = await startTestServer({ simDelaySeconds: 60 });
  shop = await s.newShop();
  // Day A and day B are two whole UTC days on the shop's test clock, each batch made around noon.
  const now = Date.parse((await s.request('GET', '/v1/test/clock', { key: shop.key })).body.now);
  const noon = Math.floor(now / 86_400_000) * 86_400_000 + 86_400_000 + 43_200_000;
  await advance(s, Math.ceil((noon - now) / 1000), shop.key);
  dA = new Date(noon).toISOString().slice(0, 10);
  await createMany(200, dayA);
  await advance(s, 86_400, shop.key);
  dB = new Date(noon + 86_400_000).toISOString().slice(0, 10);
  await createMany(300, dayB);
});
after(() => s.close());

async function pageAll(query: string, onPage?: (n: number) => Promise<void>): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | null = null;
  for (let n = 0; n < 100; n++) {
    const q = query + (cursor ? `&cursor=${cursor}` : '');
    const r = await s.request('GET', `/v1/public/payments?${q}`, { key: shop.key });
    assert.equal(r.status, 200, r.text);
    out.push(...r.body.items);
    cursor = r.body.next_cursor;
    if (!cursor) return out;
    await onPage?.(n);
  }
  throw new Error('too many pages');
}

test('500 payments page newest first with no row skipped or repeated, despite inserts between pages', async () => {
  const inserted: string[] = [];
  const items = await pageAll('limit=37', async (n) => {
    if (n === 1) inserted.push((await createPayment(s, { amount: 999 }, shop.key)).payment.id);
  });
  const ids = items.map((i) => i.id);
  assert.equal(new Set(ids).size, ids.length, 'no repeats');
  assert.deepEqual(new Set(ids), new Set([...dayA, ...dayB]));
  assert.ok(!ids.includes(inserted[0]), 'a row newer than the first page is not mixed into later pages');
  for (let i = 1; i < items.length; i++) assert.ok(items[i - 1].created_at >= items[i].created_at);
  assert.deepEqual(Object.keys(items[0]).sort(), ['amount', 'created_at', 'currency', 'id', 'method', 'mode', 'order_id', 'status']);
  // Clean up the extra row so the counts of other tests hold.
  await s.request('POST', `/v1/public/payments/${inserted[0]}/cancel`, { key: shop.key });
});

test('default limit is 50 and the last page has next_cursor null', async () => {
  const r = await s.request('GET', '/v1/public/payments', { key: shop.key });
  assert.equal(r.body.items.length, 50);
  assert.equal(typeof r.body.next_cursor, 'string');
  const all = await pageAll('limit=200&from=' + dA);
  assert.equal(all.length, 501);
});

test('from/to are inclusive UTC days', async () => {
  const a = await pageAll(`limit=200&to=${dA}`);
  assert.deepEqual(new Set(a.map((i) => i.id)), new Set(dayA));
  const b = await pageAll(`limit=200&from=${dB}&status=pending`);
  assert.deepEqual(new Set(b.map((i) => i.id)), new Set(dayB));
  const both = await pageAll(`limit=200&from=${dA}&to=${dB}&status=pending`);
  assert.equal(both.length, 500);
});

test('status accepts comma lists', async () => {
  for (const id of dayA.slice(0, 10)) {
    assert.equal((await s.request('POST', `/v1/public/payments/${id}/cancel`, { key: shop.key })).status, 200);
  }
  const c = await pageAll('limit=200&status=cancelled');
  assert.equal(c.length, 11);
  assert.ok(c.every((i) => i.status === 'cancelled'));
  const both = await pageAll('limit=200&status=pending,cancelled');
  assert.equal(both.length, 501);
  assert.equal((await pageAll('status=succeeded')).length, 0);
});

test('a comma list of statuses pages small pages in register order, merged from one seek per status', async () => {
  const all = (await pageAll('limit=200')).filter((i) => i.status === 'pending' || i.status === 'cancelled');
  const paged = await pageAll('limit=7&status=cancelled,pending');
  assert.deepEqual(paged.map((i) => i.id), all.map((i) => i.id));
  const window = await pageAll(`limit=9&status=cancelled,pending&from=${dA}&to=${dA}`);
  assert.deepEqual(new Set(window.map((i) => i.id)), new Set(dayA));
  assert.deepEqual(window.map((i) => i.id), all.filter((i) => dayA.includes(i.id)).map((i) => i.id));
});

test('invalid filters are 400 naming the parameter', async () => {
  const cases: Array<[string, string]> = [
    ['limit=0', 'limit'],
    ['limit=201', 'limit'],
    ['limit=ten', 'limit'],
    ['status=paid', 'status'],
    ['status=pending,', 'status'],
    ['from=2024-13-01', 'from'],
    ['to=yesterday', 'to'],
    ['from=2024-05-02&to=2024-05-01', 'to'],
    ['cursor=%%%', 'cursor'],
    ['cursor=bm90IGpzb24', 'cursor'],
    ['include_test=yes', 'include_test'],
    ['sort=asc', 'sort'],
  ];
  for (const [q, param] of cases) {
    const r = await s.request('GET', `/v1/public/payments?${q}`, { key: shop.key });
    assert.equal(r.status, 400, q);
    assert.equal(r.body.error.param, param, q);
  }
  const r = await s.request('GET', '/v1/public/refunds?status=cancelled', { key: shop.key });
  assert.equal(r.body.error.param, 'status');
});

test('registers need api:reports:read', async () => {
  const k = await s.newKey(shop.shopId, 'test', 'api:balance:read');
  for (const path of ['/v1/public/payments', '/v1/public/refunds']) {
    const r = await s.request('GET', path, { key: k.key });
    assert.equal(r.status, 403);
    assert.equal(r.body.error.code, 'scope_required');
  }
});

test('a live key sees live payments, and test ones too only with include_test=1', async () => {
  const live = await s.newShop({ mode: 'live' });
  await s.store.write(async (tx) => tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', live.merchantId));
  const test = await s.newKey(live.shopId, 'test');
  const l = await createPayment(s, { amount: 100 }, live.key);
  const t = await createPayment(s, { amount: 100 }, test.key);
  const ids = async (key: string, q = '') => (await s.request('GET', `/v1/public/payments${q}`, { key })).body.items.map((i: any) => i.id);
  assert.deepEqual(await ids(live.key), [l.payment.id]);
  assert.deepEqual(new Set(await ids(live.key, '?include_test=1')), new Set([l.payment.id, t.payment.id]));
  assert.deepEqual(await ids(test.key), [t.payment.id]);
  assert.deepEqual(await ids(test.key, '?include_test=1'), [t.payment.id]);
  const read = await s.request('GET', `/v1/public/payments/${t.payment.id}`, { key: live.key });
  assert.equal(read.status, 200, 'a live key reads the test payments its register shows');
  const cancel = await s.request('POST', `/v1/public/payments/${t.payment.id}/cancel`, { key: live.key });
  assert.equal(cancel.status, 404, 'but cannot act on them');
});

test('refund register pages newest first and filters by status', async () => {
  const p = await succeededPayment(s, 10000, shop.key);
  const made: string[] = [];
  for (let i = 0; i < 5; i++) {
    made.push((await s.request('POST', `/v1/public/payments/${p.id}/refund`, { key: shop.key, body: { amount: i === 0 ? 101 : i * 100, reason: `r${i}` } })).body.id);
  }
  await advance(s, 61, shop.key);
  const first = await s.request('GET', '/v1/public/refunds?limit=2', { key: shop.key });
  const second = await s.request('GET', `/v1/public/refunds?limit=2&cursor=${first.body.next_cursor}`, { key: shop.key });
  const third = await s.request('GET', `/v1/public/refunds?limit=2&cursor=${second.body.next_cursor}`, { key: shop.key });
  assert.equal(third.body.next_cursor, null);
  const ids = [...first.body.items, ...second.body.items, ...third.body.items].map((i: any) => i.id);
  assert.deepEqual(ids, [...made].reverse());
  assert.equal(first.body.items[0].reason, 'r4');
  const failed = await s.request('GET', '/v1/public/refunds?status=failed', { key: shop.key });
  assert.deepEqual(failed.body.items.map((i: any) => i.id), [made[0]]);
  const ok = await s.request('GET', '/v1/public/refunds?status=succeeded,pending', { key: shop.key });
  assert.equal(ok.body.items.length, 4);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { paidPayment } from '../helpers/money';
import { accountBody, cardBody, sbpBody } from '../helpers/payouts';

let s: TestServer;
const ids: Record<string, string[]> = { payouts_sbp: [], payouts_card: [], payouts_account: [] };
before(async () => {
  s = await startTestServer({ simDelaySeconds: 1 });
  await paidPayment(s, s.demo.key, 1_000_000);
  // Spread over the shop clock so created_at differs; every fifth fails (amount ending 01).
  for (let i = 0; i < 15; i++) {
    const body = [sbpBody, cardBody, accountBody][i % 3](1_000 + i * 100 + (i % 5 === 0 ? 1 : 0));
    const r = await s.request('POST', '/v1/public/payouts', { body });
    assert.equal(r.status, 201, r.text);
    ids[body.method as string].push(r.body.payout.id);
    if (i % 4 === 0) await s.request('POST', '/v1/test/clock/advance', { body: { seconds: 1 } });
  }
});
after(() => s.close());

async function pages(query: string, key = s.demo.key): Promise<any[]> {
  const all: any[] = [];
  let cursor: string | null = null;
  do {
    const r = await s.request('GET', `/v1/public/payouts?${query}${cursor ? `&cursor=${cursor}` : ''}`, { key });
    assert.equal(r.status, 200, r.text);
    all.push(...r.body.items);
    cursor = r.body.next_cursor;
  } while (cursor);
  return all;
}

test('the register pages newest first with stable cursors and the register item fields', async () => {
  const first = await s.request('GET', '/v1/public/payouts?limit=4');
  assert.equal(first.body.items.length, 4);
  assert.ok(first.body.next_cursor);
  assert.deepEqual(Object.keys(first.body.items[0]).sort(), ['amount', 'bank_ref', 'created_at', 'currency', 'id', 'method', 'shop_id', 'status']);
  const all = await pages('limit=4');
  assert.equal(all.length, 15);
  assert.equal(new Set(all.map((p) => p.id)).size, 15);
  const times = all.map((p) => p.created_at);
  assert.deepEqual(times, [...times].sort().reverse());
  // A payout made meanwhile does not shift the pages after a cursor.
  const next = await s.request('GET', `/v1/public/payouts?limit=4&cursor=${first.body.next_cursor}`);
  ids.payouts_sbp.push((await s.request('POST', '/v1/public/payouts', { body: sbpBody(500) })).body.payout.id);
  const again = await s.request('GET', `/v1/public/payouts?limit=4&cursor=${first.body.next_cursor}`);
  assert.deepEqual(again.body.items, next.body.items);
});

test('the method filter, the status filter and their combination', async () => {
  const card = await pages('method=payouts_card');
  assert.deepEqual(card.map((p) => p.id).sort(), [...ids.payouts_card].sort());
  await s.request('POST', '/v1/test/clock/advance', { body: { seconds: 5 } });
  const nowFailed = await pages('status=failed');
  assert.equal(nowFailed.length, 3);
  assert.ok(nowFailed.every((p) => p.status === 'failed' && p.amount % 100 === 1));
  assert.equal((await pages('status=pending')).length, 0);
  const both = await pages('status=succeeded,failed&method=payouts_sbp');
  assert.equal(both.length, ids.payouts_sbp.length);
});

test('invalid register parameters are 400 naming them; the register needs api:reports:read', async () => {
  for (const [q, param] of [['method=payouts_cash', 'method'], ['limit=0', 'limit'], ['limit=201', 'limit'], ['status=done', 'status'], ['from=2026-13-01', 'from'], ['cursor=%%%', 'cursor'], ['foo=1', 'foo']]) {
    const r = await s.request('GET', `/v1/public/payouts?${q}`);
    assert.equal(r.status, 400, q);
    assert.equal(r.body.error.param, param);
  }
  const k = await s.newKey(s.demo.shopId, 'test', 'api:payouts:sbp');
  const r = await s.request('GET', '/v1/public/payouts', { key: k.key });
  assert.equal(r.status, 403);
  assert.match(r.body.error.message, /api:reports:read/);
});

test("the register shows only the key's shop and mode", async () => {
  const other = await s.newShop();
  const r = await s.request('GET', '/v1/public/payouts', { key: other.key });
  assert.deepEqual(r.body, { items: [], next_cursor: null });
  await s.store.write(async (tx) => tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', s.demo.merchantId));
  const live = await s.newKey(s.demo.shopId, 'live', 'api:reports:read');
  const liveRegister = await s.request('GET', '/v1/public/payouts', { key: live.key });
  assert.deepEqual(liveRegister.body, { items: [], next_cursor: null }, 'the same shop in live mode has no test payouts');
});

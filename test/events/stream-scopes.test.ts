import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { openSse } from '../helpers/sse-client';
import { paidPayment } from '../helpers/money';
import { sbpBody } from '../helpers/payouts';
import { revokeKey } from '../../src/money/shops/store';
import { mayRead } from '../../src/money/events/events';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

/** Payment, payout, token and subscription events of one shop. */
async function everyKind(shop: { key: string }): Promise<void> {
  await paidPayment(s, shop.key, 30_000);
  assert.equal((await s.request('POST', '/v1/public/payouts', { key: shop.key, body: sbpBody(1_000) })).status, 201);
  assert.equal((await s.request('POST', '/v1/public/tokens', { key: shop.key, body: { customer_ref: 'c-1', method: 'cards' } })).status, 201);
  assert.equal((await s.request('POST', '/v1/public/subscriptions', { key: shop.key, body: { customer_ref: 'c-2', amount: 10_000 } })).status, 201);
}

const objects = (frames: Array<{ event?: string }>): string[] => [...new Set(frames.map((f) => f.event!.split('.')[0]))].sort();

test('the event stream carries only the kinds its key may read: a balance-only key never sees payouts, tokens or subscriptions', async () => {
  const shop = await s.newShop();
  const balanceOnly = await s.newKey(shop.shopId, 'test', 'api:balance:read');
  const full = await openSse(s.url, shop.key);
  const narrow = await openSse(s.url, balanceOnly.key);
  await everyKind(shop);
  const all = await full.waitEvents(1);
  // Everything the full key saw has arrived once the last subscription event is in.
  for (let i = 0; i < 200 && !full.events().some((f) => f.event?.startsWith('subscription.')); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(all.length > 0);
  assert.deepEqual(objects(full.events()), ['payment', 'payout', 'subscription', 'token']);
  assert.deepEqual(objects(narrow.events()), ['payment'], 'live: payments only');
  const replay = await openSse(s.url, balanceOnly.key, '0');
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(objects(replay.events()), ['payment'], 'replay: payments only');
  // Ids stay those of the log, so a resumed stream goes on where it stopped.
  const ids = replay.events().map((f) => Number(f.id));
  assert.deepEqual(ids, [...ids].sort((a, b) => a - b));
  for (const c of [full, narrow, replay]) c.close();
});

test('the mapping of scopes to kinds: payments and refunds for every key, the rest by the scope that reads them, unknown objects for none', () => {
  const none = new Set<string>();
  assert.ok(mayRead(none, 'payment.status_changed') && mayRead(none, 'refund.created'));
  assert.ok(!mayRead(none, 'payout.created') && !mayRead(none, 'token.status_changed') && !mayRead(none, 'subscription.charge_failed'));
  assert.ok(mayRead(new Set(['api:payouts:card']), 'payout.status_changed'));
  assert.ok(mayRead(new Set(['api:reports:read']), 'payout.created'));
  assert.ok(mayRead(new Set(['api:recurrent:bind']), 'subscription.status_changed'));
  assert.ok(!mayRead(new Set(['api:recurrent:charge']), 'token.status_changed'));
  assert.ok(!mayRead(new Set(['api:reports:read']), 'cabinet.anything'));
});

test('a revoked key\'s open stream ends within a second or so', async () => {
  const shop = await s.newShop();
  const c = await openSse(s.url, shop.key);
  const started = Date.now();
  await revokeKey(s.store, shop.keyId, Date.now());
  await Promise.race([c.ended, new Promise((_, reject) => setTimeout(() => reject(new Error('the stream outlived its key by 3 s')), 3000))]);
  assert.ok(Date.now() - started < 2500, `ended after ${Date.now() - started} ms`);
  const again = await s.request('GET', '/v1/public/events', { key: shop.key });
  assert.equal(again.status, 401);
});

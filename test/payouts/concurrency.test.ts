import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { balanceOf, ledgerCheck, paidPayment } from '../helpers/money';
import { sbpBody } from '../helpers/payouts';

let s: TestServer;
before(async () => {
  s = await startTestServer({ simDelaySeconds: 60 });
});
after(() => s.close());

test('100 concurrent payouts racing for a balance that covers only some: available never negative, sums exact', async () => {
  const shop = await s.newShop();
  await paidPayment(s, shop.key, 200_000);
  await paidPayment(s, shop.key, 100_000);
  const funded = 300_000;
  // Amounts 1 000 .. 10 900 in steps of 100 (all succeed in the simulator): 595 000 asked, 300 000 there.
  const amounts = Array.from({ length: 100 }, (_, i) => 1_000 + i * 100);
  const replies = await Promise.all(amounts.map((amount) => s.request('POST', '/v1/public/payouts', { key: shop.key, body: sbpBody(amount) })));
  const created = replies.filter((r) => r.status === 201);
  const refused = replies.filter((r) => r.status !== 201);
  assert.ok(created.length > 0 && refused.length > 0, `${created.length} created, ${refused.length} refused`);
  for (const r of refused) {
    assert.equal(r.status, 422, r.text);
    assert.equal(r.body.error.code, 'insufficient_funds');
  }
  const reserved = created.reduce((sum, r) => sum + (r.body.payout.amount as number), 0);
  const bal = await balanceOf(s, shop.key);
  assert.ok(bal.available >= 0);
  assert.equal(bal.available, funded - reserved);
  assert.equal(bal.balance, funded);
  // Requests ran one after another inside group commits: each refused one asked more than was left then,
  // and what was left only shrank.
  const smallestRefused = Math.min(...refused.map((r) => amounts[replies.indexOf(r)]));
  assert.ok(smallestRefused > bal.available, `refused ${smallestRefused} although ${bal.available} is left`);

  await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: 60 } });
  const settled = await balanceOf(s, shop.key);
  assert.deepEqual([settled.balance, settled.available], [funded - reserved, funded - reserved]);
  const c = await ledgerCheck(s.dbPath);
  assert.equal(c.code, 0, c.stdout);
  const book = c.json.books.find((b: any) => b.shop_id === shop.shopId);
  assert.deepEqual([book.balance, book.available, book.reserved], [funded - reserved, funded - reserved, 0]);
});

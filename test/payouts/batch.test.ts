import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { balanceOf, ledgerCheck, paidPayment } from '../helpers/money';
import { KNOWN_BANK, UNKNOWN_BANK } from '../helpers/payouts';

let s: TestServer;
before(async () => {
  s = await startTestServer({ simDelaySeconds: 2 });
});
after(() => s.close());

const item = (amount: number, phone = '+79001234567', extra: Record<string, unknown> = {}) => ({ amount, phone, bank_id: KNOWN_BANK, full_name: 'Anna Ivanova', ...extra });

test('a batch with valid, invalid, duplicate, unaffordable and refused items answers each on its own', async () => {
  const shop = await s.newShop();
  await paidPayment(s, shop.key, 100_000);
  const items = [
    item(30_000, '+79000000001'), // 0 created
    item(30_000, '+79000000001'), // 1 duplicate of 0
    item(30_000, '+79000000002'), // 2 created (same amount, other phone)
    { ...item(100), bank_id: '123' }, // 3 bad bank_id
    item(50_000, '+79000000003'), // 4 insufficient: 40 000 left
    { amount: 100, phone: '+79000000004', bank_id: KNOWN_BANK, full_name: 'X', extra: 1 }, // 5 unknown field
    item(10_003, '+79000000005'), // 6 router_error
    'not an object', // 7
    { phone: '+79000000006', bank_id: KNOWN_BANK, full_name: 'X' }, // 8 no amount
    item(20_000, '+79000000007', { bank_id: UNKNOWN_BANK }), // 9 created, fails bank_unknown at once
    item(40_000, '+79000000008'), // 10 created: bank_unknown released its reserve
    item(1, '+79000000009'), // 11 insufficient: nothing left
    item(30_000, '+79000000002'), // 12 duplicate of 2
  ];
  const r = await s.request('POST', '/v1/public/payouts/batch', { key: shop.key, body: { method: 'payouts_sbp', items } });
  assert.equal(r.status, 201, r.text);
  const statuses = r.body.results.map((x: any) => [x.index, x.status, x.code ?? null]);
  assert.deepEqual(statuses, [
    [0, 'created', null],
    [1, 'duplicate', 'duplicate'],
    [2, 'created', null],
    [3, 'failed', 'bad_request'],
    [4, 'failed', 'insufficient_funds'],
    [5, 'failed', 'bad_request'],
    [6, 'failed', 'router_error'],
    [7, 'failed', 'bad_request'],
    [8, 'failed', 'bad_request'],
    [9, 'created', null],
    [10, 'created', null],
    [11, 'failed', 'insufficient_funds'],
    [12, 'duplicate', 'duplicate'],
  ]);
  assert.deepEqual([r.body.created, r.body.failed, r.body.total, r.body.mode], [4, 9, 13, 'test']);
  for (const x of r.body.results) {
    assert.equal(x.method, 'payouts_sbp');
    if (x.status === 'created') assert.ok(x.payout_id);
    else assert.ok(x.error && !x.payout_id, JSON.stringify(x));
  }
  assert.equal(r.body.results[3].error.includes('bank_id'), true);
  assert.equal(r.body.results[8].amount, null);
  assert.equal(r.body.results[4].amount, 50_000);

  const held = await balanceOf(s, shop.key);
  assert.deepEqual([held.balance, held.available], [100_000, 0]);
  const unknown = await s.request('GET', `/v1/public/payouts/${r.body.results[9].payout_id}`, { key: shop.key });
  assert.equal(unknown.body.fail_reason, 'bank_unknown');

  await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: 2 } });
  const created = r.body.results.filter((x: any) => x.status === 'created');
  for (const x of created) {
    const final = await s.store.all<{ webhook_event: string }>(`SELECT webhook_event FROM events WHERE payout_id = ? AND kind = 'payout.status_changed'`, x.payout_id);
    assert.equal(final.length, 1, 'each created payout sends its own final event');
    assert.equal(final[0].webhook_event, x.index === 9 ? 'payout.failed' : 'payout.succeeded');
  }
  const after = await balanceOf(s, shop.key);
  assert.deepEqual([after.balance, after.available], [0, 0]);
  const c = await ledgerCheck(s.dbPath);
  assert.equal(c.code, 0, c.stdout);
});

test('whole-batch errors are 400: body, method, items not an array, empty, over 1000, unknown field', async () => {
  const cases: Array<[unknown, string | undefined]> = [
    [[], undefined],
    [{ items: [item(100)] }, 'method'],
    [{ method: 'payouts_cash', items: [item(100)] }, 'method'],
    [{ method: 'payouts_sbp' }, 'items'],
    [{ method: 'payouts_sbp', items: {} }, 'items'],
    [{ method: 'payouts_sbp', items: [] }, 'items'],
    [{ method: 'payouts_sbp', items: Array.from({ length: 1001 }, (_, i) => item(100 + i)) }, 'items'],
    [{ method: 'payouts_sbp', items: [item(100)], note: 'x' }, 'note'],
  ];
  for (const [body, param] of cases) {
    const r = await s.request('POST', '/v1/public/payouts/batch', { body });
    assert.equal(r.status, 400, `${JSON.stringify(body).slice(0, 80)} → ${r.text}`);
    assert.equal(r.body.error.code, 'bad_request');
    assert.equal(r.body.error.param, param);
  }
});

test('exactly 1000 items are accepted', async () => {
  const shop = await s.newShop();
  await paidPayment(s, shop.key, 1_000_000);
  const items = Array.from({ length: 1000 }, (_, i) => item(1_000, `+79${String(i).padStart(9, '0')}`));
  const r = await s.request('POST', '/v1/public/payouts/batch', { key: shop.key, body: { method: 'payouts_sbp', items } });
  assert.equal(r.status, 201);
  assert.deepEqual([r.body.created, r.body.failed, r.body.total], [1000, 0, 1000]);
  assert.equal((await balanceOf(s, shop.key)).available, 0);
});

test('a batch needs the scope of its method', async () => {
  const k = await s.newKey(s.demo.shopId, 'test', 'api:payouts:card');
  const r = await s.request('POST', '/v1/public/payouts/batch', { key: k.key, body: { method: 'payouts_sbp', items: [item(100)] } });
  assert.equal(r.status, 403);
  assert.match(r.body.error.message, /api:payouts:sbp/);
});

test('card and account batches validate their own fields and detect duplicates by recipient and amount', async () => {
  const shop = await s.newShop();
  await paidPayment(s, shop.key, 100_000);
  const card = await s.request('POST', '/v1/public/payouts/batch', {
    key: shop.key,
    body: { method: 'payouts_card', items: [{ amount: 1_000, card_pan: '2200700155559999' }, { amount: 1_000, card_pan: '2200700155559999' }, { amount: 1_000, card_pan: '2200700155558888' }, { amount: 1_000, card_pan: '12' }] },
  });
  assert.equal(card.status, 201, card.text);
  assert.deepEqual(card.body.results.map((x: any) => x.status), ['created', 'duplicate', 'created', 'failed']);
  const acc = { amount: 2_000, account_number: '40817810099910004312', bik: '044525225', full_name: 'Anna Ivanova' };
  const account = await s.request('POST', '/v1/public/payouts/batch', {
    key: shop.key,
    body: { method: 'payouts_account', items: [acc, { ...acc, inn: '7707083893' }, { ...acc }, { ...acc, bik: '1' }] },
  });
  assert.deepEqual(account.body.results.map((x: any) => x.status), ['created', 'created', 'duplicate', 'failed']);
});

test('Idempotency-Key makes the whole batch idempotent', async () => {
  const shop = await s.newShop();
  await paidPayment(s, shop.key, 10_000);
  const body = { method: 'payouts_sbp', items: [item(3_000, '+79000000001'), item(3_000, '+79000000002')] };
  const headers = { 'Idempotency-Key': 'batch-1' };
  const first = await s.request('POST', '/v1/public/payouts/batch', { key: shop.key, body, headers });
  assert.equal(first.status, 201);
  const again = await s.request('POST', '/v1/public/payouts/batch', { key: shop.key, body, headers });
  assert.equal(again.status, 200);
  assert.equal(again.body.idempotent, true);
  assert.deepEqual(again.body.results, first.body.results);
  assert.equal((await balanceOf(s, shop.key)).available, 4_000);
  const other = await s.request('POST', '/v1/public/payouts/batch', { key: shop.key, body: { ...body, items: [item(1_000)] }, headers });
  assert.equal(other.status, 409);
});

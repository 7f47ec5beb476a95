import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { paidPayment } from '../helpers/money';
import { accountBody, cardBody, sbpBody } from '../helpers/payouts';

let s: TestServer;
before(async () => {
  s = await startTestServer();
  await paidPayment(s, s.demo.key, 1_000_000);
});
after(() => s.close());

const bad: Array<{ name: string; body: unknown; param?: string }> = [
  { name: 'body not an object', body: [1, 2] },
  { name: 'method missing', body: { amount: 100 }, param: 'method' },
  { name: 'method unknown', body: { ...sbpBody(100), method: 'payouts_crypto' }, param: 'method' },
  { name: 'unknown field', body: sbpBody(100, { comment: 'x' }), param: 'comment' },
  { name: 'a field of another method', body: sbpBody(100, { card_pan: '2200700155559999' }), param: 'card_pan' },
  { name: 'amount missing', body: { ...sbpBody(100), amount: undefined }, param: 'amount' },
  { name: 'amount zero', body: sbpBody(0), param: 'amount' },
  { name: 'amount negative', body: sbpBody(-5), param: 'amount' },
  { name: 'amount a float', body: sbpBody(10.5), param: 'amount' },
  { name: 'amount a string', body: { ...sbpBody(100), amount: '100' }, param: 'amount' },
  { name: 'amount over 10^12', body: sbpBody(1_000_000_000_001), param: 'amount' },
  { name: 'currency not RUB', body: sbpBody(100, { currency: 'USD' }), param: 'currency' },
  { name: 'sbp phone missing', body: { ...sbpBody(100), phone: undefined }, param: 'phone' },
  { name: 'sbp phone without +7', body: sbpBody(100, { phone: '89001234567' }), param: 'phone' },
  { name: 'sbp phone too short', body: sbpBody(100, { phone: '+7900123456' }), param: 'phone' },
  { name: 'sbp bank_id missing', body: { ...sbpBody(100), bank_id: undefined }, param: 'bank_id' },
  { name: 'sbp bank_id 11 digits', body: sbpBody(100, { bank_id: '10000000000' }), param: 'bank_id' },
  { name: 'sbp bank_id 13 digits', body: sbpBody(100, { bank_id: '1000000000041' }), param: 'bank_id' },
  { name: 'sbp bank_id a number', body: sbpBody(100, { bank_id: 100000000004 }), param: 'bank_id' },
  { name: 'sbp bank_id with a letter', body: sbpBody(100, { bank_id: '10000000000a' }), param: 'bank_id' },
  { name: 'sbp full_name missing', body: { ...sbpBody(100), full_name: undefined }, param: 'full_name' },
  { name: 'sbp full_name blank', body: sbpBody(100, { full_name: '   ' }), param: 'full_name' },
  { name: 'sbp full_name too long', body: sbpBody(100, { full_name: 'x'.repeat(201) }), param: 'full_name' },
  { name: 'card_pan missing', body: { ...cardBody(100), card_pan: undefined }, param: 'card_pan' },
  { name: 'card_pan 15 digits', body: cardBody(100, { card_pan: '220070015555999' }), param: 'card_pan' },
  { name: 'card_pan 19 digits', body: cardBody(100, { card_pan: '2200700155559999123' }), param: 'card_pan' },
  { name: 'card_pan with spaces', body: cardBody(100, { card_pan: '2200 7001 5555 9999' }), param: 'card_pan' },
  { name: 'card_pan a number', body: cardBody(100, { card_pan: 2200700155559999 }), param: 'card_pan' },
  { name: 'card bank_id is not a card field', body: cardBody(100, { bank_id: '100000000004' }), param: 'bank_id' },
  { name: 'account_number 19 digits', body: accountBody(100, { account_number: '4081781009991000431' }), param: 'account_number' },
  { name: 'account_number missing', body: { ...accountBody(100), account_number: undefined }, param: 'account_number' },
  { name: 'bik 8 digits', body: accountBody(100, { bik: '04452522' }), param: 'bik' },
  { name: 'bik missing', body: { ...accountBody(100), bik: undefined }, param: 'bik' },
  { name: 'inn 11 digits', body: accountBody(100, { inn: '77070838931' }), param: 'inn' },
  { name: 'inn 9 digits', body: accountBody(100, { inn: '770708389' }), param: 'inn' },
  { name: 'account full_name missing', body: { ...accountBody(100), full_name: undefined }, param: 'full_name' },
];

/** What a refused payout must leave untouched: payout rows, ledger entries, payout events and settle jobs. */
async function payoutTrace(): Promise<number[]> {
  const count = async (sql: string) => (await s.store.get<{ n: number }>(sql))!.n;
  return [
    await count('SELECT COUNT(*) AS n FROM payouts'),
    await count(`SELECT COUNT(*) AS n FROM ledger_entries WHERE movement LIKE 'payout_%'`),
    await count(`SELECT COUNT(*) AS n FROM events WHERE kind LIKE 'payout.%'`),
    await count(`SELECT COUNT(*) AS n FROM jobs WHERE kind = 'payout.settle'`),
  ];
}

for (const c of bad) {
  test(`payout with ${c.name} is 400 bad_request${c.param ? ` naming ${c.param}` : ''} and writes nothing`, async () => {
    const before = await payoutTrace();
    const r = await s.request('POST', '/v1/public/payouts', { body: c.body });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error.code, 'bad_request');
    if (c.param) assert.equal(r.body.error.param, c.param);
    else assert.equal(r.body.error.param, undefined);
    assert.deepEqual(await payoutTrace(), before);
  });
}

test('accepted shapes: card 16 and 18 digits without full_name, account with INN of 10 and 12 digits and without', async () => {
  const ok = [
    cardBody(100),
    cardBody(200, { card_pan: '220070015555999912', full_name: 'Ivan Petrov' }),
    accountBody(300),
    accountBody(400, { inn: '7707083893' }),
    accountBody(500, { inn: '500100732259' }),
    sbpBody(600, { currency: 'RUB' }),
  ];
  for (const body of ok) {
    const r = await s.request('POST', '/v1/public/payouts', { body });
    assert.equal(r.status, 201, `${JSON.stringify(body)} → ${r.text}`);
  }
});

test('a bank_id that is not 12 digits is 400 before every other check: method, scope and other fields', async () => {
  const noScope = await s.newKey(s.demo.shopId, 'test', 'api:balance:read');
  const cases = [
    { body: { bank_id: '123', amount: -1, phone: 'nope', extra: true }, key: s.demo.key },
    { body: { method: 'payouts_card', bank_id: '123', card_pan: 'x' }, key: s.demo.key },
    { body: sbpBody(100, { bank_id: '12345' }), key: noScope.key },
  ];
  for (const c of cases) {
    const r = await s.request('POST', '/v1/public/payouts', { key: c.key, body: c.body });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error.param, 'bank_id');
  }
});

test('each method needs its own scope: 403 scope_required naming it', async () => {
  const bodies = { 'api:payouts:sbp': sbpBody(700), 'api:payouts:card': cardBody(700), 'api:payouts:account': accountBody(700) };
  const all = Object.keys(bodies);
  for (const [scope, body] of Object.entries(bodies)) {
    const others = all.filter((x) => x !== scope).join(',');
    const k = await s.newKey(s.demo.shopId, 'test', others);
    const r = await s.request('POST', '/v1/public/payouts', { key: k.key, body });
    assert.equal(r.status, 403, r.text);
    assert.equal(r.body.error.code, 'scope_required');
    assert.match(r.body.error.message, new RegExp(scope));
    const only = await s.newKey(s.demo.shopId, 'test', scope);
    const ok = await s.request('POST', '/v1/public/payouts', { key: only.key, body });
    assert.equal(ok.status, 201, ok.text);
  }
});

test('a scope the key has but its shop lacks is still 403', async () => {
  const shop = await s.newShop({ shopScopes: 'api:payouts:card,api:balance:read', keyScopes: 'api:payouts:sbp,api:payouts:card' });
  const r = await s.request('POST', '/v1/public/payouts', { key: shop.key, body: sbpBody(100) });
  assert.equal(r.status, 403);
  assert.equal(r.body.error.code, 'scope_required');
});

test('the scope is checked before the fields of the method', async () => {
  const k = await s.newKey(s.demo.shopId, 'test', 'api:payouts:sbp');
  const r = await s.request('POST', '/v1/public/payouts', { key: k.key, body: { method: 'payouts_card', card_pan: 'short' } });
  assert.equal(r.status, 403);
});

test('an error about card_pan never repeats the number', async () => {
  const pan = '22007001555599991234';
  const r = await s.request('POST', '/v1/public/payouts', { body: cardBody(100, { card_pan: pan }) });
  assert.equal(r.status, 400);
  assert.ok(!r.text.includes(pan), r.text);
  assert.match(r.body.error.message, /20 digits/);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { cabGet, cabPost, flashOf, makeUser, signIn } from '../helpers/cabinet';
import { runCli } from '../helpers/cli';
import { storedText } from '../helpers/stored-text';
import { createMerchant, createShop, getMerchant } from '../../src/money/shops/store';

// The cabinet's live pages make the same changes as `kopek shop acquirer` and `kopek merchant activate-live`.

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

const PASSWORD = 'terminal-password-7f3a-never-shown';

test('the cabinet sets a shop\'s T-Bank terminal, activates live mode and removes the acquirer, as the admin commands do', async () => {
  const m = await createMerchant(s.store, 'Live merchant', Date.now());
  const shop = await createShop(s.store, m.id, 'Live shop', undefined, Date.now());
  await makeUser(s, m.id, 'live@shop.example');
  const session = await signIn(s, 'live@shop.example');
  const base = `/cabinet/shops/${shop.id}`;
  const page = await cabGet(s, session, base);
  assert.equal(page.status, 200);
  assert.match(page.text, /No acquirer|Эквайер не подключён/);

  // Live mode needs a shop with an acquirer first: refused with the reason, nothing changes.
  const early = await cabPost(s, session, '/cabinet/activate-live', { back: base });
  assert.equal(early.status, 303);
  assert.match(flashOf((await cabGet(s, session, base)).text), /no shop of the merchant has an acquirer/);
  assert.equal((await getMerchant(s.store, m.id))!.live_enabled, 0);

  // A bad terminal is refused with the rule's own words; nothing is stored.
  await cabPost(s, session, `${base}/acquirer`, { terminal_key: '', password: PASSWORD, api_url: '' });
  assert.equal((await runCli(['shop', 'acquirer', '--shop', shop.id, '--db', s.dbPath])).code, 1);

  const set = await cabPost(s, session, `${base}/acquirer`, { terminal_key: '1700000000LIVE', password: PASSWORD, api_url: 'https://securepay.tinkoff.ru/v2' });
  assert.equal(set.status, 303);
  const shown = await runCli(['shop', 'acquirer', '--shop', shop.id, '--db', s.dbPath, '--json']);
  assert.equal(shown.code, 0, shown.err);
  assert.deepEqual(shown.json, { shop_id: shop.id, provider: 'tbank', terminal_key: '1700000000LIVE', api_url: 'https://securepay.tinkoff.ru/v2' });
  const after = await cabGet(s, session, base);
  assert.match(after.text, /1700000000LIVE/);
  assert.ok(!after.text.includes(PASSWORD), 'the password is never shown again');
  assert.ok(!(await storedText(s)).includes(PASSWORD), 'stored encrypted');

  assert.equal((await cabPost(s, session, '/cabinet/activate-live', { back: base })).status, 303);
  assert.equal((await getMerchant(s.store, m.id))!.live_enabled, 1);
  const live = await s.newKey(shop.id, 'live');
  assert.equal((await s.request('POST', '/v1/public/payments', { key: live.key, body: { amount: 10_000 } })).status, 201);

  assert.equal((await cabPost(s, session, `${base}/acquirer/remove`)).status, 303);
  const refused = await s.request('POST', '/v1/public/payments', { key: live.key, body: { amount: 10_000 } });
  assert.equal(refused.status, 403);
  assert.equal(refused.body.error.code, 'acquirer_not_configured');

  const audit = await cabGet(s, session, '/cabinet/audit');
  for (const action of ['shop.acquirer.set', 'merchant.activate_live', 'shop.acquirer.remove']) assert.match(audit.text, new RegExp(action.replace('.', '\\.')));
});

test("another merchant's shop cannot be given an acquirer through the cabinet", async () => {
  const m = await createMerchant(s.store, 'Other merchant', Date.now());
  await makeUser(s, m.id, 'other@shop.example');
  const session = await signIn(s, 'other@shop.example');
  const r = await cabPost(s, session, `/cabinet/shops/${s.demo.shopId}/acquirer`, { terminal_key: '1700000000X', password: PASSWORD, api_url: '' });
  assert.equal(r.status, 404);
  assert.equal((await runCli(['shop', 'acquirer', '--shop', s.demo.shopId, '--db', s.dbPath])).code, 1);
});

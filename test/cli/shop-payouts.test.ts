import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server';
import { runCli, type CliResult } from '../helpers/cli';
import { storedText } from '../helpers/stored-text';
import { decryptSecret, loadMasterKey } from '../../src/platform/secrets/at-rest';
import { checkPayoutProvider } from '../../src/web/cabinet/shops';

// kopek shop payouts, run beside a server on the same file: the credentials are checked at the provider (a
// local fake of YooKassa's GET /payouts/{id}) before anything is written, the secret key is read from a file,
// sealed under the master key and never printed; live mode and live keys need an acquirer or a payout provider.

const AGENT = '505000';
const SECRET = 'live_cli-payout-secret-9d1c';

let s: TestServer;
let fake: Server;
let apiUrl: string;
let secretFile: string;
/** The credentials checks the fake received: Authorization header and path. */
const seen: Array<{ auth: string; path: string; method: string }> = [];
/** What the fake answers a check with good credentials (404: the payout does not exist, so the credentials work). */
let okStatus = 404;

before(async () => {
  s = await startTestServer();
  secretFile = join(s.dir, 'yookassa.secret');
  writeFileSync(secretFile, SECRET + '\n', { mode: 0o600 });
  fake = createServer((req, res) => {
    seen.push({ auth: String(req.headers.authorization ?? ''), path: req.url ?? '', method: req.method ?? '' });
    const good = req.headers.authorization === `Basic ${Buffer.from(`${AGENT}:${SECRET}`).toString('base64')}`;
    const status = good ? okStatus : 401;
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ type: 'error', id: 'e-1', code: good ? 'not_found' : 'invalid_credentials', description: good ? 'Payout not found' : 'Authentication failed' }));
  });
  await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
  apiUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}/v3`;
});
after(async () => {
  await s.close();
  await new Promise((r) => fake.close(r));
});

function cli(...argv: string[]): Promise<CliResult> {
  return runCli([...argv, '--db', s.dbPath]);
}

function fails(r: CliResult, message: RegExp): void {
  assert.equal(r.code, 1, r.out + r.err);
  assert.equal(r.out, '');
  assert.match(r.err, message);
  assert.ok(!r.err.includes(SECRET), 'the secret is never printed');
}

async function merchantWithShop(): Promise<{ merchant: string; shop: string }> {
  const merchant = (await cli('merchant', 'create', '--name', 'Payout merchant', '--json')).json.id as string;
  const shop = (await cli('shop', 'create', '--merchant', merchant, '--name', 'Payout shop', '--json')).json.id as string;
  return { merchant, shop };
}

function set(shop: string, ...more: string[]): Promise<CliResult> {
  return cli('shop', 'payouts', '--shop', shop, '--provider', 'yookassa', '--agent-id', AGENT, '--secret-file', secretFile, '--api-url', apiUrl, ...more);
}

test('shop payouts sets YooKassa after a credentials check: --json prints shop_id, provider, agent_id, api_url, never the secret; the secret is sealed', async () => {
  const { shop } = await merchantWithShop();
  const before = seen.length;
  const r = await set(shop, '--json');
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(r.json, { shop_id: shop, provider: 'yookassa', agent_id: AGENT, api_url: apiUrl });
  assert.match(r.err, /note: the API address is the .*--webhook-allow/, 'a private address is the operator\'s, with the same note as the acquirer\'s');
  const check = seen.slice(before);
  assert.equal(check.length, 1, 'one request checks the credentials');
  assert.equal(check[0].method, 'GET', 'a request that changes nothing');
  assert.match(check[0].path, /^\/v3\/payouts\/[^/]+$/);
  assert.equal(check[0].auth, `Basic ${Buffer.from(`${AGENT}:${SECRET}`).toString('base64')}`, 'one trailing newline of the file is not part of the secret');

  const row = (await s.store.get<{ provider: string; agent_id: string; secret: string; api_url: string; created_at: number; updated_at: number }>('SELECT * FROM shop_payout_providers WHERE shop_id = ?', shop))!;
  assert.equal(row.provider, 'yookassa');
  assert.ok(!row.secret.includes(SECRET), 'not stored in clear');
  assert.equal(decryptSecret(loadMasterKey(s.dbPath), row.secret, `shop_payout_providers.secret:${shop}`), SECRET);
  assert.ok(row.created_at > 0 && row.updated_at >= row.created_at);
  assert.ok(!(await storedText(s)).includes(SECRET), 'not in the database');

  const shown = await cli('shop', 'payouts', '--shop', shop, '--json');
  assert.deepEqual(shown.json, r.json);
  const text = await cli('shop', 'payouts', '--shop', shop);
  assert.equal(text.code, 0, text.err);
  assert.match(text.out, /agent_id\s+505000/);
  assert.ok(!text.out.includes(SECRET) && !text.out.includes(row.secret));

  const trailing = await set(shop, '--json');
  assert.equal(trailing.json.api_url, apiUrl);
  assert.ok(!s.logs.join('\n').includes(SECRET), 'not in the server logs');
});

test('refused credentials and bad input change nothing and say why', async () => {
  const { shop } = await merchantWithShop();
  const wrong = join(s.dir, 'wrong.secret');
  writeFileSync(wrong, 'live_wrong-secret\n');
  const r = await cli('shop', 'payouts', '--shop', shop, '--provider', 'yookassa', '--agent-id', AGENT, '--secret-file', wrong, '--api-url', apiUrl);
  fails(r, /cannot set the payout provider: the credentials check failed: .*refused the credentials \(HTTP 401\)/);
  assert.ok(!r.err.includes('live_wrong-secret'));
  okStatus = 500;
  try {
    fails(await set(shop), /credentials check failed: .*HTTP 500/);
  } finally {
    okStatus = 404;
  }
  fails(await cli('shop', 'payouts', '--shop', shop, '--provider', 'acme', '--agent-id', AGENT, '--secret-file', secretFile), /--provider must be yookassa/);
  fails(await cli('shop', 'payouts', '--shop', shop, '--provider', 'yookassa', '--agent-id', AGENT, '--secret-file', join(s.dir, 'missing')), /cannot read the secret key file/);
  fails(await cli('shop', 'payouts', '--shop', shop, '--provider', 'yookassa', '--secret-file', secretFile), /--agent-id ID and --secret-file FILE are required/);
  fails(await set(shop, '--api-url', 'ftp://x'), /--api-url must be an http\(s\) URL/);
  fails(await cli('shop', 'payouts', '--shop', 'no-such-shop', '--provider', 'yookassa', '--agent-id', AGENT, '--secret-file', secretFile), /shop "no-such-shop" not found/);
  fails(await cli('shop', 'payouts', '--shop', shop, '--remove', '--agent-id', AGENT), /--remove takes no other option/);
  fails(await cli('shop', 'payouts', '--shop', shop), /none is set/);
  assert.equal(await s.store.get('SELECT 1 FROM shop_payout_providers WHERE shop_id = ?', shop), undefined);
  // Without --api-url the provider's production address is the one checked: the default is the published one.
  assert.equal(checkPayoutProvider({ provider: 'yookassa', agentId: AGENT, secret: SECRET }).apiUrl, 'https://api.yookassa.ru/v3');
});

test('a shop with only a payout provider: live mode activates, its live key passes authentication, its payments get 403 acquirer_not_configured; --remove takes it away', async () => {
  const { merchant, shop } = await merchantWithShop();
  const key = (await cli('key', 'create', '--shop', shop, '--mode', 'live', '--json')).json.key as string;
  assert.match((await cli('merchant', 'activate-live', merchant)).err, /no shop of the merchant has an acquirer .*or a payout provider/);
  assert.equal((await set(shop)).code, 0);
  const on = await cli('merchant', 'activate-live', merchant, '--json');
  assert.equal(on.code, 0, on.err);
  assert.deepEqual(on.json, { id: merchant, live_enabled: true, shops_with_acquirer: [], shops_with_payout_provider: [shop] });

  const warned = await cli('key', 'create', '--shop', shop, '--mode', 'live', '--json');
  assert.equal(warned.json.warnings.length, 1);
  assert.match(warned.json.warnings[0], /no acquirer: live payments.*403 acquirer_not_configured.*payouts go to yookassa/);

  const list = await s.request('GET', '/v1/public/payouts', { key });
  assert.equal(list.status, 200, 'not refused at authentication: ' + list.text);
  const pay = await s.request('POST', '/v1/public/payments', { key, body: { amount: 10_000 } });
  assert.equal(pay.status, 403, pay.text);
  assert.equal(pay.body.error.code, 'acquirer_not_configured');
  const account = await s.request('POST', '/v1/public/payouts', { key, body: { method: 'payouts_account', amount: 1000, account_number: '40817810099910004312', bik: '044525225', full_name: 'Ivan Petrov' } });
  assert.equal(account.status, 403, account.text);
  assert.equal(account.body.error.code, 'payout_method_not_supported');

  const removed = await cli('shop', 'payouts', '--shop', shop, '--remove', '--json');
  assert.deepEqual(removed.json, { shop_id: shop, removed: true });
  assert.deepEqual((await cli('shop', 'payouts', '--shop', shop, '--remove', '--json')).json, { shop_id: shop, removed: false });
  const gone = await s.request('GET', '/v1/public/payouts', { key });
  assert.equal(gone.status, 403, 'with neither, the key is refused as before');
  assert.equal(gone.body.error.code, 'acquirer_not_configured');
});

test('kopek shop --help names the payouts command', async () => {
  const r = await runCli(['shop', '--help']);
  assert.match(r.out, /kopek shop payouts --shop SHOP --provider yookassa --agent-id ID --secret-file FILE \[--api-url URL\]/);
});

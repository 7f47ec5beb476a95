import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestServer, TestShop } from '../helpers/server';
import { postForm } from '../helpers/pay-page';
import { cabGet, cabPost, flashOf, makeUser, signIn, type CabinetSession } from '../helpers/cabinet';
import { runCli } from '../helpers/cli';
import { tbankSuite } from '../helpers/tbank';
import type { FakeTBank } from './fake-tbank';
import { TBANK_API_URL, TBANK_TEST_API_URL } from '../../src/banks/tbank/protocol';
import { UrlPolicy, type Resolver } from '../../src/money/webhooks/url-safety';

// Regression: a merchant could make kopek call any address. The acquirer's api_url was free in the cabinet
// (http://127.0.0.1:PORT/..., http://169.254.169.254/... taken), and the next live payment POSTed Init with the
// terminal key and a Token there. The cabinet now offers the bank's published addresses only; another address
// is the operator's (kopek shop acquirer --api-url), and even then a private, loopback or link-local one is
// called only when the server runs with --webhook-allow covering it.

const TERMINAL = '1700000000ADDRESS';
const PASSWORD = 'acquirer-address-pass-0d4b';
const SYNC_AFTER_S = 60;
// This server's operator opened nothing: the fake bank on 127.0.0.1 is a loopback address it must not call.
const suite = tbankSuite({ terminalKey: TERMINAL, password: PASSWORD }, { acquirerSyncAfterSeconds: SYNC_AFTER_S, acquirerTimeoutSeconds: 0.5, webhookAllow: [] });
const { pass, get } = suite;
let s: TestServer;
let fake: FakeTBank;
let shop: TestShop;
let session: CabinetSession;
before(async () => {
  ({ s, fake, shop } = await suite.ready);
  await makeUser(s, shop.merchantId, 'address@shop.example');
  session = await signIn(s, 'address@shop.example');
});

async function apiUrlOf(shopId: string): Promise<string> {
  const r = await runCli(['shop', 'acquirer', '--shop', shopId, '--db', s.dbPath, '--json']);
  assert.equal(r.code, 0, r.err);
  return r.json.api_url;
}

async function payOnPage(amount: number): Promise<string> {
  const c = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount, method: 'cards' } });
  assert.equal(c.status, 201, c.text);
  const id = c.body.payment.id as string;
  assert.equal((await postForm(s, `/pay/${id}/method`, { method: 'cards' })).status, 303);
  await pass();
  return id;
}

test('a shop set at a loopback address (the operator set it, but opened no range): Init never leaves, the payment waits', async () => {
  assert.match(await apiUrlOf(shop.shopId), /^http:\/\/127\.0\.0\.1:\d+\/v2$/);
  const id = await payOnPage(21_000);
  assert.equal(fake.calls('Init').length, 0, 'nothing reached the address');
  const rec = await s.store.all<{ state: string; answer: string }>('SELECT state, answer FROM bank_requests WHERE subject_id = ?', id);
  assert.equal(rec.length, 1);
  assert.equal(rec[0].state, 'unknown');
  const reason = JSON.parse(rec[0].answer).reason as string;
  assert.match(reason, /^not sent: the acquirer address is refused: refused "127\.0\.0\.1": resolves to loopback address 127\.0\.0\.1/);
  assert.match(reason, /--webhook-allow/);
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'processing', 'unknown fails nothing');
  assert.ok(s.logs.some((l) => l.includes('the acquirer address is refused')), 'the operator is told in the log');

  // The operator opens the range: the status check reaches the bank (no order there) and the session opens anew.
  await s.restart({ webhookAllow: ['127.0.0.1/32'] });
  await pass(SYNC_AFTER_S);
  assert.equal(fake.calls('CheckOrder').length, 1);
  assert.equal(fake.calls('Init').length, 1, 'a new attempt reached the bank');
  assert.equal((await fake.settle(fake.last(), 'CONFIRMED'))?.text, 'OK');
  assert.equal((await get(`/v1/public/payments/${id}`)).status, 'succeeded');
  await s.restart({ webhookAllow: [] });
});

test('a link-local (cloud metadata) api_url set by the operator is never called either', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-acq-'));
  try {
    const passFile = join(dir, 'pass');
    writeFileSync(passFile, `${PASSWORD}\n`, { mode: 0o600 });
    const set = await runCli(['shop', 'acquirer', '--shop', shop.shopId, '--provider', 'tbank', '--terminal-key', TERMINAL, '--password-file', passFile, '--api-url', 'http://169.254.169.254/v2', '--db', s.dbPath, '--json']);
    assert.equal(set.code, 0, set.err);
    assert.equal(set.json.api_url, 'http://169.254.169.254/v2', 'the operator may set it');
    assert.match(set.err, /note: the API address is the link-local or metadata address 169\.254\.169\.254: the server calls it only when started with --webhook-allow/);
    const id = await payOnPage(22_000);
    const rec = await s.store.get<{ state: string; sent_at: number | null; answer: string }>('SELECT state, sent_at, answer FROM bank_requests WHERE subject_id = ?', id);
    assert.equal(rec?.state, 'unknown');
    assert.equal(rec?.sent_at, null, 'never marked sent');
    assert.match(rec!.answer, /link-local or metadata address 169\.254\.169\.254/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the cabinet offers only the bank's published addresses; any other is refused and nothing changes", async () => {
  const base = `/cabinet/shops/${shop.shopId}`;
  const page = await cabGet(s, session, base);
  assert.equal(page.status, 200);
  const select = /<select id="acq-url" name="api_url">([\s\S]*?)<\/select>/.exec(page.text);
  assert.ok(select, 'a choice, not a free field');
  const offered = [...select[1].matchAll(/<option value="([^"]+)"/g)].map((m) => m[1]);
  // The operator's current address (set above) is kept on offer so a new password does not move the shop.
  assert.deepEqual(offered, [TBANK_API_URL, TBANK_TEST_API_URL, 'http://169.254.169.254/v2']);
  assert.ok(!/<input[^>]+name="api_url"/.test(page.text), 'no free address field');

  for (const url of ['http://127.0.0.1:9/v2', 'http://169.254.169.254/latest', 'https://attacker.example/v2']) {
    const r = await cabPost(s, session, `${base}/acquirer`, { terminal_key: 'HIJACK', password: 'x', api_url: url });
    assert.equal(r.status, 303);
    assert.match(flashOf((await cabGet(s, session, base)).text), /the API address must be one of https:\/\/securepay\.tinkoff\.ru\/v2, https:\/\/rest-api-test\.tinkoff\.ru\/v2/);
    assert.equal(await apiUrlOf(shop.shopId), 'http://169.254.169.254/v2', `${url}: nothing changed`);
  }
  const test = await cabPost(s, session, `${base}/acquirer`, { terminal_key: TERMINAL, password: PASSWORD, api_url: TBANK_TEST_API_URL });
  assert.equal(test.status, 303);
  assert.equal(await apiUrlOf(shop.shopId), TBANK_TEST_API_URL);
  // Once off the operator's address, the cabinet offers the bank's two only.
  const after = await cabGet(s, session, base);
  assert.deepEqual([...after.text.matchAll(/<option value="([^"]+)"/g)].map((m) => m[1]).filter((u) => u.includes('/v2')), [TBANK_API_URL, TBANK_TEST_API_URL]);
  const r = await cabPost(s, session, `${base}/acquirer`, { terminal_key: TERMINAL, password: PASSWORD, api_url: 'http://169.254.169.254/v2' });
  assert.equal(r.status, 303);
  assert.equal(await apiUrlOf(shop.shopId), TBANK_TEST_API_URL, 'the old operator address is not on offer any more');
});

test('the rule for a bank API address is the webhooks\' one: every resolved address checked, the operator\'s ranges open', async () => {
  const names: Record<string, string[]> = { 'bank.example': ['203.0.113.7'], 'rebound.example': ['203.0.113.8', '10.0.0.9'], 'meta.example': ['169.254.169.254'] };
  const resolve: Resolver = async (host) => (names[host] ?? []).map((address) => ({ address, family: 4 }));
  const closed = new UrlPolicy([], resolve);
  assert.deepEqual(await closed.checkProvider(new URL('https://bank.example/v2')), { address: '203.0.113.7', family: 4 });
  assert.deepEqual(await closed.checkProvider(new URL('http://bank.example/v2')), { address: '203.0.113.7', family: 4 }, 'the operator may use http');
  await assert.rejects(closed.checkProvider(new URL('https://rebound.example/v2')), /resolves to private address 10\.0\.0\.9/);
  await assert.rejects(closed.checkProvider(new URL('https://meta.example/v2')), /link-local or metadata/);
  await assert.rejects(closed.checkProvider(new URL('http://[::1]:8080/v2')), /loopback address ::1/);
  await assert.rejects(closed.checkProvider(new URL('ftp://bank.example/v2')), /needs http or https/);
  const open = new UrlPolicy(['10.0.0.0/8'], resolve);
  assert.deepEqual(await open.checkProvider(new URL('https://rebound.example/v2')), { address: '203.0.113.8', family: 4 });
  await assert.rejects(open.checkProvider(new URL('https://meta.example/v2')), /link-local/);
});

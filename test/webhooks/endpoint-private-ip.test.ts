import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { runCli } from '../helpers/cli';
import { cabGet, cabPost, makeUser, signIn, type CabinetSession } from '../helpers/cabinet';

// Regression: a webhook endpoint at a private or link-local IP address was accepted by `kopek webhook add` and
// the cabinet's form, and refused only at each delivery. Such an address is refused where the endpoint is
// added, naming the reason; loopback stays (test mode's developer receiver), host names are checked at
// delivery, and the operator's --webhook-allow opens a range (on the command, as on the server).

let s: TestServer;
let session: CabinetSession;
before(async () => {
  s = await startTestServer({ webhookAllow: [] });
  await makeUser(s, s.demo.merchantId, 'hooks@shop.example');
  session = await signIn(s, 'hooks@shop.example');
});
after(() => s.close());

async function endpointUrls(): Promise<string[]> {
  return (await s.store.all<{ url: string }>('SELECT url FROM webhook_endpoints WHERE shop_id = ? ORDER BY created_at', s.demo.shopId)).map((r) => r.url);
}

function add(url: string, ...more: string[]) {
  return runCli(['webhook', 'add', '--shop', s.demo.shopId, '--url', url, '--db', s.dbPath, '--json', ...more]);
}

test('kopek webhook add took a private or link-local IP endpoint: refused naming the reason, nothing added', async () => {
  const cases: Array<[string, RegExp]> = [
    ['http://169.254.169.254/latest/meta-data', /link-local or metadata address 169\.254\.169\.254/],
    ['https://10.0.0.1/hook', /private address 10\.0\.0\.1/],
    ['https://[fe80::1]/hook', /link-local address fe80::1/],
  ];
  for (const [url, why] of cases) {
    const r = await add(url);
    assert.equal(r.code, 1, url);
    assert.match(r.err, /cannot use webhook URL/);
    assert.match(r.err, why);
  }
  assert.deepEqual(await endpointUrls(), []);
});

test('kopek webhook add: loopback, public addresses and host names are taken; --webhook-allow opens a range', async () => {
  for (const url of ['http://127.0.0.1:4000/hook', 'https://8.8.8.8/hook', 'https://hooks.internal.example/x']) {
    const r = await add(url);
    assert.equal(r.code, 0, `${url}: ${r.err}`);
  }
  const allowed = await add('https://10.0.0.1/hook', '--webhook-allow', '10.0.0.0/8');
  assert.equal(allowed.code, 0, allowed.err);
  assert.equal(allowed.json.url, 'https://10.0.0.1/hook');
  const outside = await add('https://192.168.0.1/hook', '--webhook-allow', '10.0.0.0/8');
  assert.equal(outside.code, 1);
  assert.match(outside.err, /private address 192\.168\.0\.1/);
  const bad = await add('https://10.0.0.1/hook', '--webhook-allow', '10.0.0.0/99');
  assert.equal(bad.code, 1);
  assert.match(bad.err, /bad allow-list entry "10\.0\.0\.0\/99"/);
  assert.equal((await endpointUrls()).length, 4);
});

test("the cabinet's webhook form took a link-local IP endpoint: 400 with the reason, nothing added", async () => {
  const before = await endpointUrls();
  const r = await cabPost(s, session, '/cabinet/webhooks', { shop: s.demo.shopId, url: 'http://169.254.169.254/x', signature: 'v2' });
  assert.equal(r.status, 400, r.text.slice(0, 300));
  assert.match(r.text, /link-local or metadata address 169\.254\.169\.254/);
  assert.deepEqual(await endpointUrls(), before);
  const ok = await cabPost(s, session, '/cabinet/webhooks', { shop: s.demo.shopId, url: 'http://127.0.0.1:4001/hook', signature: 'v2' });
  assert.equal(ok.status, 200, ok.text.slice(0, 300));
  assert.ok((await endpointUrls()).includes('http://127.0.0.1:4001/hook'));
  assert.equal((await cabGet(s, session, '/cabinet/webhooks')).status, 200);
});

test("the cabinet follows the server's --webhook-allow", async () => {
  await s.restart({ webhookAllow: ['10.20.0.0/16'] });
  const r = await cabPost(s, session, '/cabinet/webhooks', { shop: s.demo.shopId, url: 'https://10.20.1.2/hook', signature: 'v2' });
  assert.equal(r.status, 200, r.text.slice(0, 300));
  assert.ok((await endpointUrls()).includes('https://10.20.1.2/hook'));
  await s.restart({ webhookAllow: [] });
});

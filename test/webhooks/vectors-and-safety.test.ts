import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import { webhookHeaders } from '../../src/money/webhooks/delivery';
import { allowListOf, refusalOf, UrlPolicy } from '../../src/money/webhooks/url-safety';
import { addEndpoint } from '../../src/money/webhooks/store';
import { startTestServer, type TestServer } from '../helpers/server';
import { appendWebhookEvent, startReceiver } from '../helpers/webhooks';

const doc = readFileSync(join(__dirname, '..', '..', 'docs', 'webhooks.md'), 'utf8');
const vectors = JSON.parse(/```json vectors\n([\s\S]*?)```/.exec(doc)![1]);
const blockedReason = (address: string) => refusalOf(address, allowListOf([]));
const signatureHeader = (v: 'v1' | 'v2', secrets: string[], t_s: number, body: string) => webhookHeaders('evt_1', v, secrets, t_s, body)['X-PSP-Signature'];

test('the published test vectors match the signer and an independent node:crypto computation', () => {
  const { secret, old_secret, timestamp, body } = vectors;
  assert.equal(signatureHeader('v2', [secret], timestamp, body), vectors.v2);
  assert.equal(signatureHeader('v2', [secret, old_secret], timestamp, body), vectors.v2_overlap);
  assert.equal(signatureHeader('v1', [secret], timestamp, body), vectors.v1);
  const h = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
  assert.equal(vectors.v2, `t=${timestamp},v1=${h},v2=${h}`);
  assert.equal(vectors.v1, `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`);
});

const readme = readFileSync(join(__dirname, '..', '..', 'README.md'), 'utf8');

for (const [name, text] of [['docs/webhooks.md', doc], ['README.md', readme]]) test(`the receiver example in ${name} accepts the vector and refuses a stale or altered one`, () => {
  const code = /```js\n([\s\S]*?)```/.exec(text)![1];
  const verifySrc = /function verify[\s\S]*?\n}\n/.exec(code)![0];
  // eslint-disable-next-line no-new-func
  const verify = new Function('createHmac', 'timingSafeEqual', 'SECRET', `${verifySrc}; return verify;`)(
    createHmac,
    require('node:crypto').timingSafeEqual,
    vectors.secret,
  ) as (h: string, b: string, now?: number) => boolean;
  assert.equal(verify(vectors.v2, vectors.body, vectors.timestamp + 10), true);
  assert.equal(verify(vectors.v2_overlap, vectors.body, vectors.timestamp), true);
  assert.equal(verify(vectors.v2, vectors.body, vectors.timestamp + 301), false);
  assert.equal(verify(vectors.v2, vectors.body.replace('15000', '15001'), vectors.timestamp), false);
});

/** A resolver of fixed answers, for the policy's tests. */
const fake = (map: Record<string, string[]>) => async (host: string) => (map[host] ?? []).map((a) => ({ address: a, family: a.includes(':') ? 6 : 4 }));

test('address classes live webhooks refuse', () => {
  for (const [addr, why] of [
    ['127.0.0.1', 'loopback'],
    ['10.2.3.4', 'private'],
    ['172.20.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local or metadata'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['0.0.0.0', 'unspecified'],
    ['::1', 'loopback'],
    ['fd00::1', 'unique-local'],
    ['fe80::1', 'link-local'],
    ['::ffff:127.0.0.1', 'loopback'],
  ]) {
    assert.equal(blockedReason(addr), why, addr);
  }
  for (const addr of ['8.8.8.8', '93.184.216.34', '2a00:1450:4001:80b::200e']) assert.equal(blockedReason(addr), null, addr);
});

test('IPv6 forms that embed an IPv4 address, and site-local, are refused like the address they could reach', () => {
  for (const [addr, why] of [
    ['::169.254.169.254', 'IPv4-compatible'],
    ['::a9fe:a9fe', 'IPv4-compatible'],
    ['::10.0.0.1', 'IPv4-compatible'],
    ['2002:a9fe:a9fe::1', '6to4'],
    ['64:ff9b::a9fe:a9fe', 'NAT64'],
    ['64:ff9b:1::a9fe:a9fe', 'NAT64 local-use'],
    ['fec0::1', 'site-local'],
  ]) {
    assert.equal(blockedReason(addr), why, addr);
  }
});

test('test-mode webhooks reach loopback and follow the live rule everywhere else; --webhook-allow opens a range for both modes', async () => {
  const policy = new UrlPolicy([], fake({ 'internal.corp': ['10.0.0.7'], 'dev.local': ['127.0.0.1'] }));
  assert.deepEqual(await policy.check(new URL('http://127.0.0.1:3000/hook'), 'test'), { address: '127.0.0.1', family: 4 });
  assert.deepEqual(await policy.check(new URL('http://dev.local/hook'), 'test'), { address: '127.0.0.1', family: 4 });
  await assert.rejects(policy.check(new URL('http://169.254.169.254/latest/meta-data'), 'test'), /metadata/);
  await assert.rejects(policy.check(new URL('http://10.0.0.1/'), 'test'), /private/);
  await assert.rejects(policy.check(new URL('http://internal.corp/'), 'test'), /private address 10\.0\.0\.7/);
  await assert.rejects(policy.check(new URL('http://[::169.254.169.254]/'), 'test'), /IPv4-compatible/);
  await assert.rejects(policy.check(new URL('http://127.0.0.1/'), 'live'), /need https/);
  const allowing = new UrlPolicy(['10.0.0.0/8'], fake({ 'internal.corp': ['10.0.0.7'] }));
  assert.deepEqual(await allowing.check(new URL('http://internal.corp/'), 'test'), { address: '10.0.0.7', family: 4 });
});

test('the live policy: https only, every resolved address checked, allowed ranges pass, the checked address is used', async () => {
  const policy = new UrlPolicy([], fake({ 'rebind.example': ['93.184.216.34', '10.0.0.5'], 'ok.example': ['93.184.216.34'], 'meta.example': ['169.254.169.254'] }));
  await assert.rejects(policy.check(new URL('http://ok.example/')), /need https/);
  await assert.rejects(policy.check(new URL('https://rebind.example/')), /private address 10\.0\.0\.5/);
  await assert.rejects(policy.check(new URL('https://meta.example/')), /metadata/);
  await assert.rejects(policy.check(new URL('https://[::1]/')), /loopback/);
  await assert.rejects(policy.check(new URL('https://nowhere.example/')), /cannot resolve/);
  assert.deepEqual(await policy.check(new URL('https://ok.example/x')), { address: '93.184.216.34', family: 4 });
  const allowing = new UrlPolicy(['10.0.0.0/8'], fake({ 'internal.example': ['10.1.2.3'] }));
  assert.deepEqual(await allowing.check(new URL('https://internal.example/')), { address: '10.1.2.3', family: 4 });
});

let s: TestServer;
let tls: Server;
let tlsAllowed: Server;
let tlsConnections = 0;
before(async () => {
  // Stand in for https receivers on loopback (127.0.0.1, and 127.0.0.2 that the operator allows): they
  // count connections (the TLS handshake then fails).
  const counting = (): Server =>
    createServer((sock) => {
      tlsConnections++;
      sock.destroy();
    });
  tls = counting();
  tlsAllowed = counting();
  await new Promise<void>((r) => tls.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => tlsAllowed.listen(0, '127.0.0.2', r));
  s = await startTestServer({ webhookAllow: ['127.0.0.2/32'] });
});
after(async () => {
  await s.close();
  await new Promise((r) => tls.close(r));
  await new Promise((r) => tlsAllowed.close(r));
});

test('a live-enabled merchant: loopback and http are refused before any connection; an allowed range is connected to', async () => {
  const shop = await s.newShop({ mode: 'live' });
  await s.store.write(async (tx) => {
    await tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', shop.merchantId);
  });
  const plain = await startReceiver();
  const port = (tls.address() as { port: number }).port;
  try {
    await addEndpoint(s.store, { shopId: shop.shopId, url: plain.url }, Date.now() - 3);
    await addEndpoint(s.store, { shopId: shop.shopId, url: `https://127.0.0.1:${port}/hook` }, Date.now() - 2);
    await addEndpoint(s.store, { shopId: shop.shopId, url: `https://localhost:${port}/hook` }, Date.now() - 1);
    const ev = await appendWebhookEvent(s, shop, { mode: 'live' });
    const rows = await waitAttempts(ev.id, 3);
    const byUrl = Object.fromEntries(rows.map((r) => [r.url, r.error]));
    assert.match(String(byUrl[plain.url + '/']), /need https/);
    assert.match(String(byUrl[`https://127.0.0.1:${port}/hook`]), /loopback address 127\.0\.0\.1/);
    assert.match(String(byUrl[`https://localhost:${port}/hook`]), /loopback/);
    assert.equal(plain.received.length, 0);
    assert.equal(tlsConnections, 0, 'nothing refused was connected to');
    // The operator allows 127.0.0.2: the delivery connects to that checked address.
    const allowedPort = (tlsAllowed.address() as { port: number }).port;
    await addEndpoint(s.store, { shopId: shop.shopId, url: `https://127.0.0.2:${allowedPort}/hook` }, Date.now());
    const ev2 = await appendWebhookEvent(s, shop, { mode: 'live' });
    const rows2 = await waitAttempts(ev2.id, 4);
    const allowed = rows2.find((r) => r.url.startsWith('https://127.0.0.2'))!;
    assert.doesNotMatch(String(allowed.error), /refused/);
    assert.equal(tlsConnections, 1);
  } finally {
    await plain.close();
  }
});

async function waitAttempts(eventId: string, n: number): Promise<Array<{ url: string; error: string | null }>> {
  const until = Date.now() + 5000;
  for (;;) {
    const rows = await s.store.all<{ url: string; error: string | null }>(
      'SELECT a.url, a.error FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.event_id = ?',
      eventId,
    );
    if (rows.length >= n) return rows;
    if (Date.now() > until) throw new Error(`only ${rows.length} attempts for ${eventId}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('test-mode webhook_url to the metadata address is refused at creation, and at delivery for one stored before that check', async () => {
  const refused = await s.request('POST', '/v1/public/payments', { body: { amount: 10_000, method: 'sbp', webhook_url: 'http://169.254.169.254/latest/meta-data' } });
  assert.equal(refused.status, 400, refused.text);
  assert.equal(refused.body.error.param, 'webhook_url');
  // A payment whose webhook_url an older kopek took: its deliveries are still refused before any connection,
  // and the log says why, not what answered.
  const c = await s.request('POST', '/v1/public/payments', { body: { amount: 10_000, method: 'sbp', webhook_url: 'http://127.0.0.1:9/hook' } });
  assert.equal(c.status, 201, c.text);
  const id = c.body.payment.id as string;
  await s.store.write(async (tx) => {
    await tx.run(`UPDATE payments SET webhook_url = 'http://169.254.169.254/latest/meta-data' WHERE id = ?`, id);
  });
  await s.request('POST', `/v1/test/payments/${id}/simulate`, { body: { action: 'open_session' } });
  await s.request('POST', `/v1/test/payments/${id}/simulate`, { body: { action: 'succeed' } });
  let items: any[] = [];
  // The delivery may be listed as pending before its first attempt is recorded: wait for the attempt.
  for (let i = 0; i < 200 && items.length === 0; i++) {
    items = (await s.request('GET', `/v1/test/webhooks/deliveries?payment_id=${id}`)).body.items.filter((x: any) => x.status !== 'pending');
    if (items.length === 0) await new Promise((r) => setTimeout(r, 10));
  }
  assert.ok(items.length > 0, 'an attempt was recorded');
  assert.equal(items[0].response_code, null);
  assert.match(items[0].error, /refused "169\.254\.169\.254": resolves to link-local or metadata address/);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer, type TestShop } from '../helpers/server';

// Regression: a private or link-local address in a test-mode webhook_url was accepted at creation
// (http://169.254.169.254/x and http://10.0.0.1/x answered 201) and refused only at delivery. An IP literal in
// a blocked range is refused at creation in both modes: 400 bad_request, param webhook_url, the reason named,
// nothing created. Host names keep the check at delivery (their addresses may change); test mode may still
// reach loopback; the operator's --webhook-allow opens a range.

let s: TestServer;
let live: TestShop;
before(async () => {
  s = await startTestServer({ webhookAllow: [] });
  live = await s.newShop({ mode: 'live' });
  await s.store.write(async (tx) => {
    await tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', live.merchantId);
  });
});
after(() => s.close());

async function paymentCount(): Promise<number> {
  return (await s.store.get<{ n: number }>('SELECT count(*) AS n FROM payments'))!.n;
}

async function refused(key: string | undefined, url: string, reason: RegExp): Promise<void> {
  const before = await paymentCount();
  const r = await s.request('POST', '/v1/public/payments', { key, body: { amount: 10_000, webhook_url: url }, headers: { 'Idempotency-Key': `private-${url}` } });
  assert.equal(r.status, 400, `${url}: ${r.text}`);
  assert.equal(r.body.error.code, 'bad_request');
  assert.equal(r.body.error.param, 'webhook_url');
  assert.match(r.body.error.message, /^Cannot use webhook_url "/);
  assert.match(r.body.error.message, reason, url);
  assert.equal(await paymentCount(), before, `${url}: nothing created`);
}

test('a private or link-local webhook_url IP was accepted at creation in test mode: now 400 naming the reason', async () => {
  await refused(undefined, 'http://169.254.169.254/latest/meta-data', /link-local or metadata address 169\.254\.169\.254/);
  await refused(undefined, 'http://10.0.0.1/x', /private address 10\.0\.0\.1/);
  await refused(undefined, 'http://192.168.1.10:8080/hook', /private address 192\.168\.1\.10/);
  await refused(undefined, 'http://100.64.0.1/x', /carrier-grade NAT/);
  await refused(undefined, 'http://0.0.0.0/x', /unspecified/);
  await refused(undefined, 'http://[fe80::1]/x', /link-local address fe80::1/);
  await refused(undefined, 'http://[fd00::5]/x', /unique-local/);
  // Forms that hide an IPv4 address: mapped, and the shorthand URL parsers expand.
  await refused(undefined, 'http://[::ffff:169.254.169.254]/x', /link-local or metadata address 169\.254\.169\.254/);
  await refused(undefined, 'http://0xa9.254.169.254/x', /link-local or metadata/);
  await refused(undefined, 'http://2852039166/x', /link-local or metadata/);
});

test('the same request with the same Idempotency-Key after a refusal is refused again: nothing was stored', async () => {
  await refused(undefined, 'http://10.0.0.1/x', /private/);
});

test('a live key: loopback is refused too, as are private addresses', async () => {
  await refused(live.key, 'https://127.0.0.1/hook', /loopback address 127\.0\.0\.1/);
  await refused(live.key, 'https://[::1]/hook', /loopback address ::1/);
  await refused(live.key, 'https://10.1.2.3/hook', /private address 10\.1\.2\.3/);
});

test('what stays accepted: loopback in test mode, public addresses, and host names (checked at delivery)', async () => {
  for (const url of ['http://127.0.0.1:9/hook', 'http://[::1]:9/hook', 'http://localhost:9/hook', 'http://8.8.8.8/hook', 'http://internal.example/hook']) {
    const r = await s.request('POST', '/v1/public/payments', { body: { amount: 10_000, webhook_url: url } });
    assert.equal(r.status, 201, `${url}: ${r.text}`);
    assert.equal(r.body.payment.metadata.webhook_url, url);
  }
  const l = await s.request('POST', '/v1/public/payments', { key: live.key, body: { amount: 10_000, webhook_url: 'https://shop.example/hook' } });
  assert.equal(l.status, 201, l.text);
});

test("the operator's --webhook-allow opens a range at creation as it does at delivery", async () => {
  await s.restart({ webhookAllow: ['10.0.0.0/8'] });
  const r = await s.request('POST', '/v1/public/payments', { body: { amount: 10_000, webhook_url: 'http://10.0.0.1/x' } });
  assert.equal(r.status, 201, r.text);
  await refused(undefined, 'http://192.168.0.1/x', /private address 192\.168\.0\.1/);
  await refused(undefined, 'http://169.254.169.254/x', /link-local or metadata/);
  await s.restart({ webhookAllow: [] });
});

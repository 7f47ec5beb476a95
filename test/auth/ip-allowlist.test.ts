import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, doRequest, type TestServer, type TestShop } from '../helpers/server';
import { setIpAllowlist } from '../../src/money/shops/store';
import { compileAllowList } from '../../src/platform/auth/ip-allowlist';
import { unmapIp } from '../../src/platform/http/server';

// Listening on '::' makes the server dual-stack: a 127.0.0.1 client arrives as ::ffff:127.0.0.1, a real mapped address.
let s: TestServer;
let shop: TestShop;
before(async () => {
  s = await startTestServer({ host: '::', trustProxy: true });
  shop = await s.newShop();
});
after(() => s.close());

const CLOCK = '/v1/test/clock';

/** A request from `from` (simulated through X-Forwarded-For, the server trusting its proxy). */
async function from(address: string): Promise<number> {
  return (await s.request('GET', CLOCK, { key: shop.key, headers: { 'x-forwarded-for': address } })).status;
}

async function allow(entries: string): Promise<void> {
  await setIpAllowlist(s.store, shop.shopId, entries);
}

test('an empty allow-list lets any address in', async () => {
  await allow('');
  assert.equal(await from('198.51.100.1'), 200);
  assert.equal(await from('2001:db8::1'), 200);
});

test('IPv4 addresses and CIDR ranges', async () => {
  await allow('203.0.113.7, 10.0.0.0/8');
  assert.equal(await from('203.0.113.7'), 200);
  assert.equal(await from('10.200.1.1'), 200);
  assert.equal(await from('203.0.113.8'), 403);
  assert.equal(await from('11.0.0.1'), 403);
  const r = await s.request('GET', CLOCK, { key: shop.key, headers: { 'x-forwarded-for': '203.0.113.8' } });
  assert.equal(r.body.error.code, 'ip_not_allowed');
  assert.match(r.body.error.message, /"203\.0\.113\.8"/);
});

test('IPv6 addresses (in any spelling) and CIDR ranges', async () => {
  await allow('2001:db8::1,2001:db8:abcd::/48');
  assert.equal(await from('2001:db8:0:0:0:0:0:1'), 200);
  assert.equal(await from('2001:DB8::1'), 200);
  assert.equal(await from('2001:db8:abcd:12::1'), 200);
  assert.equal(await from('2001:db8::2'), 403);
  assert.equal(await from('2001:db8:abce::1'), 403);
});

test('an IPv4-mapped IPv6 client address matches IPv4 entries', async () => {
  await allow('203.0.113.0/24');
  assert.equal(await from('::ffff:203.0.113.9'), 200);
  assert.equal(await from('::ffff:cb00:7109'), 200);
  assert.equal(await from('::ffff:198.51.100.1'), 403);
});

test('an IPv4-mapped IPv6 entry (address or CIDR) matches the plain IPv4 client', async () => {
  await allow('::ffff:198.51.100.0/120,::ffff:192.0.2.5');
  assert.equal(await from('198.51.100.77'), 200);
  assert.equal(await from('192.0.2.5'), 200);
  assert.equal(await from('198.51.101.1'), 403);
  assert.equal(await from('192.0.2.6'), 403);
});

test('real loopback connections: 127.0.0.1 arrives mapped and matches 127.0.0.1; ::1 matches only ::1', async () => {
  const port = new URL(s.url).port;
  const viaV4 = () => doRequest(`http://127.0.0.1:${port}`, 'GET', CLOCK, {}, shop.key);
  const viaV6 = () => doRequest(`http://[::1]:${port}`, 'GET', CLOCK, {}, shop.key);
  await allow('127.0.0.1');
  assert.equal((await viaV4()).status, 200);
  assert.equal((await viaV6()).status, 403);
  await allow('::1');
  assert.equal((await viaV4()).status, 403);
  assert.equal((await viaV6()).status, 200);
  await allow('::ffff:127.0.0.0/104');
  assert.equal((await viaV4()).status, 200);
});

test('behind a trusted proxy the last X-Forwarded-For entry counts; earlier ones may be forged', async () => {
  await allow('203.0.113.7');
  assert.equal(await from('198.51.100.1, 203.0.113.7'), 200);
  assert.equal(await from('203.0.113.7, 198.51.100.1'), 403);
  assert.equal(await from('not-an-ip'), 403);
});

test('without --trust-proxy, X-Forwarded-For is ignored and the socket address counts', async () => {
  await s.restart({ trustProxy: false });
  try {
    await allow('203.0.113.7');
    assert.equal(await from('203.0.113.7'), 403);
    await allow('127.0.0.1');
    assert.equal(await from('203.0.113.99'), 200);
  } finally {
    await s.restart({ trustProxy: true });
  }
});

test('allow-list entries are validated', () => {
  for (const bad of ['300.1.1.1', '1.2.3.4/33', '2001:db8::/129', '::ffff:1.2.3.4/64', 'fe80::1%eth0', 'example.com', '1.2.3.4/x']) {
    assert.throws(() => compileAllowList(bad), /bad allow-list entry/, bad);
  }
  assert.equal(unmapIp('fe80::1%eth0'), 'fe80::1');
  assert.equal(unmapIp('0:0:0:0:0:ffff:a00:1'), '10.0.0.1');
  assert.equal(unmapIp('::ffff:1:2:3'), '::ffff:1:2:3');
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { startTestServer, type TestServer, type TestShop } from '../helpers/server';
import { receiverPool } from '../helpers/webhooks';
import { addEndpoint } from '../../src/webhooks/store';
import { TRIGGER_EVENT_NAMES } from '../../src/simulator/trigger-events';

// `kopek trigger` as a developer runs it: its own process (real exit codes and output) against a real server.

const ROOT = join(__dirname, '..', '..');
let s: TestServer;
let shop: TestShop;
const pool = receiverPool();

before(async () => {
  s = await startTestServer({ simDelaySeconds: 600 });
  shop = await s.newShop();
  const rcv = await pool.receiver();
  await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url + '/hook' }, Date.now());
});
after(async () => {
  await pool.closeAll();
  await s.close();
});

/** Run `node --import tsx src/main.ts trigger …` without blocking this process, whose server must keep answering. */
function kopek(argv: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  const base = { ...process.env };
  delete base.KOPEK_URL;
  delete base.KOPEK_KEY;
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'main.ts'), 'trigger', ...argv], { cwd: ROOT, env: { ...base, ...env }, timeout: 60_000 }, (err, out, errText) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out, err: errText });
    });
  });
}

async function deliveriesOf(eventId: string): Promise<any[]> {
  const r = await s.request('GET', `/v1/test/webhooks/deliveries?event_id=${eventId}`, { key: shop.key });
  assert.equal(r.status, 200, r.text);
  return r.body.items;
}

async function paymentsOf(shopId: string): Promise<number> {
  return (await s.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM payments WHERE shop_id = ?', shopId))!.n;
}

/** A local port nothing listens on: taken from the system, then released. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as AddressInfo).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

test('--list prints one line per event, and one JSON object per line with --json, without a server', async () => {
  const [text, json] = await Promise.all([kopek(['--list']), kopek(['--list', '--json'])]);
  assert.equal(text.code, 0, text.err);
  const lines = text.out.trimEnd().split('\n');
  assert.deepEqual(lines.map((l) => l.split(/\s+/)[0]), TRIGGER_EVENT_NAMES);
  assert.ok(lines.every((l) => l.length > 40), text.out);
  assert.equal(json.code, 0, json.err);
  assert.deepEqual(json.out.trimEnd().split('\n').map((l) => JSON.parse(l).event), TRIGGER_EVENT_NAMES);
});

test('an event is triggered on the running server: the event id is printed and its delivery is logged, the clock stays', async () => {
  const r = await kopek(['payment.refunded', '--url', s.url, '--key', shop.key]);
  assert.equal(r.code, 0, r.err);
  assert.equal(r.err, '');
  const m = new RegExp(
    [
      '^triggered payment\\.refunded  (evt_[0-9A-Z]{26})',
      '  payment       [0-9a-f-]{36}  refunded  amount 10000',
      '  refund        [0-9a-f-]{36}  succeeded  amount 10000',
      '  webhook sent  payment\\.succeeded  evt_[0-9A-Z]{26}',
      '  webhook sent  payment\\.refunded   \\1\n$',
    ].join('\n'),
  ).exec(r.out);
  assert.ok(m, r.out);
  const items = await deliveriesOf(m[1]);
  assert.ok(items.length > 0 && items.every((i) => i.event === 'payment.refunded'), JSON.stringify(items));
  const clock = await s.request('GET', '/v1/test/clock', { key: shop.key });
  assert.equal(clock.body.offset_seconds, 0);
});

test('--json prints the answer as one line; KOPEK_URL and KOPEK_KEY stand for the flags', async () => {
  const r = await kopek(['subscription.past_due', '--json'], { KOPEK_URL: s.url + '/', KOPEK_KEY: shop.key });
  assert.equal(r.code, 0, r.err);
  const lines = r.out.trimEnd().split('\n');
  assert.equal(lines.length, 1, r.out);
  const answer = JSON.parse(lines[0]);
  assert.equal(answer.event, 'subscription.past_due');
  assert.equal(answer.subscription.status, 'past_due');
  const items = await deliveriesOf(answer.event_id);
  assert.ok(items.length > 0 && items.every((i) => i.event === 'subscription.past_due'), JSON.stringify(items));
});

test('errors a developer acts on: one line each, naming what to do, exit 1, nothing changed', async () => {
  const live = await s.newShop({ mode: 'live' });
  const before = await paymentsOf(live.shopId);
  const notKopek = await pool.receiver();
  const port = await closedPort();
  const [liveKey, unknown, down, wrong, malformed, noKey, badKey] = await Promise.all([
    kopek(['payment.succeeded', '--url', s.url, '--key', live.key]),
    kopek(['payment.teleported', '--url', s.url, '--key', shop.key]),
    kopek(['payment.succeeded', '--url', `http://127.0.0.1:${port}`, '--key', shop.key]),
    kopek(['payment.succeeded', '--url', notKopek.url, '--key', shop.key]),
    kopek(['payment.succeeded', '--url', 'localhost:8080', '--key', shop.key]),
    kopek(['payment.succeeded', '--url', s.url]),
    kopek(['payment.succeeded', '--url', s.url, '--key', 'sk_test_not_a_key_of_this_server']),
  ]);
  const expected: Array<[typeof liveKey, string]> = [
    [liveKey, 'kopek trigger: cannot trigger payment.succeeded with a live key: the trigger works in test mode only; pass a test key (sk_test_…)\n'],
    [unknown, 'kopek trigger: cannot trigger "payment.teleported": kopek sends no such event; kopek trigger --list shows the events\n'],
    [down, `kopek trigger: cannot trigger payment.succeeded: nothing answers at http://127.0.0.1:${port} (connection refused); start the server (kopek serve) or pass --url\n`],
    [wrong, `kopek trigger: cannot trigger payment.succeeded: ${notKopek.url} does not answer as a kopek server (HTTP 200 to POST /v1/test/trigger); check --url or KOPEK_URL\n`],
    [malformed, 'kopek trigger: cannot trigger payment.succeeded: --url "localhost:8080" is not an http:// or https:// address; pass one like http://127.0.0.1:8080\n'],
    [noKey, 'kopek trigger: cannot trigger payment.succeeded: no API key; pass --key sk_test_… or set KOPEK_KEY\n'],
  ];
  for (const [r, err] of expected) {
    assert.equal(r.err, err);
    assert.equal(r.code, 1);
    assert.equal(r.out, '');
  }
  assert.equal(badKey.code, 1);
  assert.match(badKey.err, /^kopek trigger: cannot .* \(401 \w+\); check --key or KOPEK_KEY: a key belongs to one server and its database\n$/);
  // The live key's secret never appears in what the command printed.
  assert.ok(!liveKey.err.includes(live.key));
  assert.equal(await paymentsOf(live.shopId), before);
  assert.equal(notKopek.received.length, 1);
});

test('an error the server answers is printed with its code and a hint: a key without the scope', async () => {
  const narrow = await s.newShop({ keyScopes: 'api:reports:read' });
  const r = await kopek(['payout.succeeded', '--url', s.url, '--key', narrow.key]);
  assert.equal(r.code, 1);
  assert.equal(
    r.err,
    'kopek trigger: cannot trigger payout.succeeded: the key needs scope "api:payouts:sbp" (403 scope_required); give the key that scope (kopek key create --scopes …) or use another key\n',
  );
  assert.equal(await paymentsOf(narrow.shopId), 0);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { startTestServer, type TestServer, type TestShop } from '../helpers/server';
import { receiverPool, type Receiver } from '../helpers/webhooks';
import { addEndpoint } from '../../src/money/webhooks/store';
import { TRIGGER_EVENT_NAMES } from '../../src/banks/simulator/trigger-events';

// `kopek trigger` as a developer runs it: its own process (real exit codes and output) against a real server.

const ROOT = join(__dirname, '..', '..');
let s: TestServer;
let shop: TestShop;
let rcv: Receiver;
const pool = receiverPool();

before(async () => {
  s = await startTestServer({ simDelaySeconds: 600 });
  shop = await s.newShop();
  rcv = await pool.receiver();
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

test('--set gives the triggered object its fields: amount and order_id parsed from the words, metadata.KEY=VALUE one key each', async () => {
  const r = await kopek(['payment.succeeded', '--url', s.url, '--key', shop.key, '--set', 'amount=25000', '--set=order_id=A-1001', '--set', 'metadata.cart=42', '--set', 'metadata.note=a=b', '--json']);
  assert.equal(r.code, 0, r.err);
  const answer = JSON.parse(r.out);
  const p = answer.payment;
  assert.deepEqual([p.status, p.amount, p.order_id, p.metadata.cart, p.metadata.note], ['succeeded', 25000, 'A-1001', '42', 'a=b']);
  const got = await s.request('GET', `/v1/public/payments/${p.id}`, { key: shop.key });
  assert.deepEqual([got.body.amount, got.body.order_id, got.body.metadata.cart], [25000, 'A-1001', '42']);
  // The webhook the endpoint gets carries them too.
  const deadline = Date.now() + 10_000;
  let hook: any;
  while (!(hook = rcv.received.map((x) => JSON.parse(x.body)).find((b) => b.id === answer.event_id)) && Date.now() < deadline) await new Promise((res) => setTimeout(res, 20));
  assert.ok(hook, 'no delivery of the triggered event');
  assert.deepEqual([hook.data.amount, hook.data.order_id, hook.data.metadata.cart], [25000, 'A-1001', '42']);
  // The human lines show the amount set.
  const text = await kopek(['payout.succeeded', '--url', s.url, '--key', shop.key, '--set', 'amount=4200', '--set', 'full_name=Ivan Petrov']);
  assert.equal(text.code, 0, text.err);
  assert.match(text.out, /\n  payout        [0-9a-f-]{36}  succeeded  amount 4200\n/);
});

test('--set refusals: a field the object does not take and a bad value are the server\'s 400 by name, a malformed word is refused before sending; nothing is made', async () => {
  const fresh = await s.newShop();
  const before = await paymentsOf(fresh.shopId);
  const run = (...set: string[]) => kopek(['payment.succeeded', '--url', s.url, '--key', fresh.key, ...set.flatMap((w) => ['--set', w])]);
  const [unknown, range, text, refused, malformed, twice, noKey] = await Promise.all([
    run('currency=USD'),
    run('amount=0'),
    run('amount=lots'),
    run('amount=10001'),
    run('amount'),
    run('amount=100', 'amount=200'),
    run('metadata=x'),
  ]);
  const expected: Array<[typeof unknown, string]> = [
    [unknown, 'kopek trigger: cannot trigger payment.succeeded with "currency" set: the payment it makes takes amount, order_id, description, metadata (400 bad_request); check --set currency\n'],
    [range, 'kopek trigger: cannot POST /v1/test/trigger: field "amount" must be between 1 and 1000000000000, got 0 (400 bad_request); check --set amount\n'],
    [text, 'kopek trigger: cannot POST /v1/test/trigger: field "amount" must be an integer of minor units, got "lots" (400 bad_request); check --set amount\n'],
    [
      refused,
      'kopek trigger: cannot trigger payment.succeeded with amount 10001: its kopeck part is 01 and the test bank refuses it (do_not_honor); give an amount whose kopeck part is 00 or 05 to 99 (400 bad_request); check --set amount\n',
    ],
    [malformed, 'kopek trigger: cannot trigger payment.succeeded: --set "amount" is not FIELD=VALUE; write it like --set amount=25000 or --set metadata.cart=42\n'],
    [twice, 'kopek trigger: cannot trigger payment.succeeded: --set amount is given twice; give each field once\n'],
    [noKey, 'kopek trigger: cannot trigger payment.succeeded: --set metadata=… names no metadata key; write --set metadata.KEY=VALUE\n'],
  ];
  const listing = await kopek(['--list', '--set', 'amount=100']);
  expected.push([listing, 'kopek trigger: cannot list events with --set: --set gives a field of a triggered event, kopek trigger EVENT --set FIELD=VALUE\n']);
  for (const [r, err] of expected) {
    assert.equal(r.err, err);
    assert.equal(r.code, 1);
    assert.equal(r.out, '');
  }
  assert.equal(await paymentsOf(fresh.shopId), before);
});

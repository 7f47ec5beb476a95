import { validSecrets } from '../../src/money/webhooks/store';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { startTestServer, type TestServer } from '../helpers/server';
import { runCli } from '../helpers/cli';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

function kopek(...args: string[]): { code: number | null; out: any; err: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts', 'webhook', ...args, '--db', s.dbPath], { encoding: 'utf8' });
  let out: any = r.stdout;
  try {
    out = JSON.parse(r.stdout);
  } catch {
    // human output
  }
  return { code: r.status, out, err: r.stderr };
}

test('kopek webhook add / list / rotate / delete / deliveries against a running server', async () => {
  const shop = await s.newShop();
  const added = kopek('add', '--shop', shop.shopId, '--url', 'https://shop.example/hook', '--events', 'payment.succeeded,payout.failed', '--signature', 'v1', '--json');
  assert.equal(added.code, 0, added.err);
  assert.match(added.out.secret, /^whs_/);
  assert.deepEqual(added.out.events, ['payment.succeeded', 'payout.failed']);
  const listed = kopek('list', '--shop', shop.shopId, '--json');
  assert.equal(listed.out.items.length, 1);
  assert.equal(listed.out.items[0].signature, 'v1');
  assert.equal(listed.out.items[0].disabled_at, null);
  assert.ok(!JSON.stringify(listed.out).includes(added.out.secret), 'list never shows a secret');
  const rotated = kopek('rotate', added.out.id, '--overlap', '24', '--json');
  assert.equal(rotated.code, 0, rotated.err);
  assert.notEqual(rotated.out.secret, added.out.secret);
  const badEvent = kopek('add', '--shop', shop.shopId, '--url', 'https://x.example/', '--events', 'payment.sucseeded');
  assert.notEqual(badEvent.code, 0);
  assert.match(badEvent.err, /payment\.sucseeded/);
  assert.equal(badEvent.err.trim().split('\n').length, 1, 'a failure is one line on stderr');
  const badUrl = kopek('add', '--shop', shop.shopId, '--url', 'ftp://x.example/');
  assert.match(badUrl.err, /scheme/);
  const help = kopek('--help');
  assert.match(help.out, /Usage:[\s\S]*Examples:/);
  const deliveries = kopek('deliveries', '--shop', shop.shopId, '--json');
  assert.deepEqual(deliveries.out.items, []);
  assert.equal(kopek('delete', added.out.id).code, 0);
  assert.equal(kopek('list', '--shop', shop.shopId, '--json').out.items.length, 0);
  const missing = kopek('resend', 'evt_00000000000000000000000000');
  assert.notEqual(missing.code, 0);
  assert.match(missing.err, /no such event/);
});

test('webhook list and deliveries with an unknown --shop fail naming it instead of showing an empty list', async () => {
  for (const [sub, action] of [['list', 'list webhook endpoints'], ['deliveries', 'show webhook deliveries']]) {
    const r = await runCli(['webhook', sub, '--shop', 'no-such-shop', '--db', s.dbPath]);
    assert.equal(r.code, 1, r.out);
    assert.equal(r.out, '');
    assert.equal(r.err.trim(), `kopek webhook: cannot ${action}: shop "no-such-shop" not found`);
  }
  const known = await runCli(['webhook', 'list', '--shop', s.demo.shopId, '--db', s.dbPath, '--json']);
  assert.equal(known.code, 0, known.err);
});

test('webhook rotate ID 24 (a stray word, not --overlap) is refused and the old secret keeps working', async () => {
  const shop = await s.newShop();
  const added = await runCli(['webhook', 'add', '--shop', shop.shopId, '--url', 'https://shop.example/hook', '--db', s.dbPath, '--json']);
  assert.equal(added.code, 0, added.err);
  const r = await runCli(['webhook', 'rotate', added.json.id, '24', '--db', s.dbPath]);
  assert.equal(r.code, 1);
  assert.equal(r.err.trim(), 'kopek webhook: unexpected argument "24"; usage: kopek webhook rotate ENDPOINT_ID [--overlap HOURS]');
  const rows = await s.store.all('SELECT expires_at FROM webhook_secrets WHERE endpoint_id = ?', added.json.id);
  assert.deepEqual(rows, [{ expires_at: null }]);
  assert.deepEqual(await validSecrets(s.store, added.json.id, Date.now()), [added.json.secret]);
});

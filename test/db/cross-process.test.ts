import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server';
import { createPayment, getPayment, simulate } from '../helpers/payments';
import { startReceiver, type Receiver } from '../helpers/webhooks';

// The server keeps what it reads often in memory (key lookups with their scopes and allow-list, payment answers).
// Admin commands change the same file from processes of their own; each change must be in force at the server
// without a restart. The key cache follows Store.keyTablesVersion (src/platform/storage/store.ts); these tests poll
// with a generous deadline, and scripts/bench-staleness.ts measures how soon a change is seen.

const ROOT = join(__dirname, '..', '..');
const DEADLINE_MS = 10_000;

let s: TestServer;
let receiver: Receiver;
before(async () => {
  s = await startTestServer();
  receiver = await startReceiver();
});
after(async () => {
  await receiver.close();
  await s.close();
});

/** `kopek ARGS --db FILE` in a process of its own; resolves with its exit code and output. */
function kopek(...args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'main.ts'), ...args, '--db', s.dbPath], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  return new Promise((resolve) => proc.on('exit', (code) => resolve({ code, out, err })));
}

/** A test payment driven to `succeeded` by the simulator (its default outcome), over HTTP. */
async function paid(key: string): Promise<string> {
  const id = (await createPayment(s, { amount: 10_000 }, key)).payment.id as string;
  assert.equal((await simulate(s, id, { action: 'open_session', method: 'sbp' }, key)).status, 200);
  await until('the payment to succeed', async () => ((await getPayment(s, id, key)).status === 'succeeded' ? 1 : 0), 1);
  return id;
}

/** Poll `probe` until it answers `want`, or fail naming the last answer. */
async function until(what: string, probe: () => Promise<number>, want: number): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS;
  let last = -1;
  while (Date.now() < deadline) {
    last = await probe();
    if (last === want) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail(`${what}: still ${last} after ${DEADLINE_MS} ms, expected ${want}`);
}

const list = (key: string) => async () => (await s.request('GET', '/v1/public/payments', { key, noSchemaCheck: true })).status;

test('scopes and the IP allow-list set by admin commands in other processes are in force at the server', async () => {
  const shop = await s.newShop();
  assert.equal(await list(shop.key)(), 200, 'the key is read, and held');
  const scopes = await kopek('shop', 'scopes', shop.shopId, 'api:balance:read');
  assert.equal(scopes.code, 0, scopes.err);
  await until('listing without api:reports:read', list(shop.key), 403);
  const restored = await kopek('shop', 'scopes', shop.shopId, 'api:balance:read,api:reports:read');
  assert.equal(restored.code, 0, restored.err);
  await until('listing with the scope back', list(shop.key), 200);
  const allow = await kopek('shop', 'ip-allowlist', shop.shopId, '203.0.113.7');
  assert.equal(allow.code, 0, allow.err);
  await until('a request from an address off the allow-list', list(shop.key), 403);
  const open = await kopek('shop', 'ip-allowlist', shop.shopId);
  assert.equal(open.code, 0, open.err);
  await until('a request once the allow-list is empty again', list(shop.key), 200);
});

test('a key revoked by an admin command in another process is refused by the server', async () => {
  const shop = await s.newShop();
  assert.equal(await list(shop.key)(), 200);
  const r = await kopek('key', 'revoke', shop.keyId);
  assert.equal(r.code, 0, r.err);
  await until('a request with the revoked key', list(shop.key), 401);
});

test('a webhook endpoint added and deleted by admin commands in another process is in force for the next event', async () => {
  const shop = await s.newShop();
  const added = await kopek('webhook', 'add', '--shop', shop.shopId, '--url', `${receiver.url}/hook`, '--events', 'payment.succeeded', '--json');
  assert.equal(added.code, 0, added.err);
  const endpoint = JSON.parse(added.out) as { id: string };
  const first = await paid(shop.key);
  const delivered = await receiver.waitFor(1, DEADLINE_MS);
  assert.match(delivered.body, new RegExp(first));
  const deleted = await kopek('webhook', 'delete', endpoint.id);
  assert.equal(deleted.code, 0, deleted.err);
  const second = await paid(shop.key);
  const rows = await s.store.all<{ endpoint_id: string | null }>(
    `SELECT d.endpoint_id FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE e.payment_id = ? AND e.webhook_event = 'payment.succeeded'`,
    second,
  );
  assert.deepEqual(rows.filter((r) => r.endpoint_id === endpoint.id), [], 'no delivery to the deleted endpoint');
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer, type TestShop } from '../helpers/server';
import { onceApplied, postgresOnly } from '../helpers/pg';
import { keyFilePath } from '../../src/platform/secrets/at-rest';

// The key commands read no secret sealed under the master key (keys are stored as hashes), so they run without
// it on either engine: on PostgreSQL with KOPEK_MASTER_KEY unset, on SQLite without the key file beside the
// database. Each command is its own process, so no master key this process holds can help it. A command that
// seals a secret still asks for the key.

const ROOT = join(__dirname, '..', '..');
let s: TestServer;
let shop: TestShop;

before(async () => {
  s = await startTestServer();
  shop = await s.newShop();
});
after(() => s.close());

/** Run `kopek ARGV --db DB` in its own process with no master key in its environment. */
function kopek(...argv: string[]): Promise<{ code: number; out: string; err: string; json: any }> {
  const env = { ...process.env };
  for (const k of ['KOPEK_MASTER_KEY', 'KOPEK_DB', 'KOPEK_DATABASE_URL']) delete env[k];
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'main.ts'), ...argv, '--db', s.dbPath], { cwd: ROOT, env, timeout: 120_000 }, (err, out, errText) => {
      let json: unknown;
      try {
        json = JSON.parse(out);
      } catch {
        json = undefined;
      }
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out, err: errText, json });
    });
  });
}

/** Run `fn` with the SQLite database's key file moved aside (on PostgreSQL there is none), and put it back. */
async function withoutKeyFile<T>(fn: () => Promise<T>): Promise<T> {
  const file = keyFilePath(s.dbPath);
  const had = s.store.engine === 'sqlite' && existsSync(file);
  if (had) renameSync(file, `${file}.aside`);
  try {
    return await fn();
  } finally {
    if (had) renameSync(`${file}.aside`, file);
  }
}

test('key create, list and revoke run without the master key (regression: key list demanded KOPEK_MASTER_KEY on PostgreSQL)', async () => {
  await withoutKeyFile(async () => {
    const [created, live, shown] = await Promise.all([
      kopek('key', 'create', '--shop', shop.shopId, '--mode', 'test', '--json'),
      kopek('key', 'create', '--shop', shop.shopId, '--mode', 'live', '--json'),
      kopek('shop', 'show', shop.shopId, '--json'),
    ]);
    assert.equal(created.code, 0, created.err);
    assert.match(created.json.key, /^sk_test_/);
    // A live key's warnings read the shop's settings, never its secrets.
    assert.equal(live.code, 0, live.err);
    assert.ok(live.json.warnings.length > 0, live.out);
    assert.equal(shown.code, 0, shown.err);
    assert.equal(shown.json.id, shop.shopId);

    const list = await kopek('key', 'list', '--shop', shop.shopId, '--json');
    assert.equal(list.code, 0, list.err);
    const mine = list.json.items.find((k: { id: string }) => k.id === created.json.id);
    assert.ok(mine, list.out);
    // The new key works on the running server, until revoked by the prefix the list shows.
    assert.equal((await s.request('GET', '/v1/public/payments', { key: created.json.key })).status, 200);
    const revoked = await kopek('key', 'revoke', `${mine.prefix}…`, '--shop', shop.shopId, '--json');
    assert.equal(revoked.code, 0, revoked.err);
    assert.deepEqual(revoked.json, { id: created.json.id, revoked: true });
    assert.equal((await onceApplied(() => s.request('GET', '/v1/public/payments', { key: created.json.key }), (r) => r.status === 401)).status, 401);
    // On SQLite none of them made a key file of its own (a new key would seal nothing the server can read).
    assert.equal(existsSync(keyFilePath(s.dbPath)), false);
  });
});

test('a command that seals a secret still asks for KOPEK_MASTER_KEY on PostgreSQL, with its clear message', { skip: postgresOnly() }, async () => {
  const [signing, hook] = await Promise.all([
    kopek('shop', 'signing-secret', shop.shopId),
    kopek('webhook', 'add', '--shop', shop.shopId, '--url', 'https://example.com/hook'),
  ]);
  for (const [r, command] of [
    [signing, 'shop'],
    [hook, 'webhook'],
  ] as const) {
    assert.equal(r.code, 1, r.out);
    assert.equal(r.out, '');
    assert.equal(r.err, `kopek ${command}: cannot find the master key: a PostgreSQL database needs KOPEK_MASTER_KEY (the same on every node)\n`);
  }
  assert.equal((await s.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM webhook_endpoints WHERE shop_id = ?', shop.shopId))!.n, 0);
});

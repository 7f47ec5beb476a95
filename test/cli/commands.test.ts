import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server';
import { runCli, type CliResult } from '../helpers/cli';
import { onceApplied } from '../helpers/pg';
import { cliCommands } from '../../src/cli';
import { startApp } from '../../src/app';
import { createKey } from '../../src/money/shops/store';

/** Every command as the root wires them (serve starts the server with startApp). */
const COMMANDS = cliCommands(startApp);

// The server runs on the same file the commands change: every command here also proves it works alongside it.
let s: TestServer;
let db: string;
before(async () => {
  s = await startTestServer();
  db = s.dbPath;
});
after(() => s.close());

/** GET `path` with `key` once a command's change applies (at once on SQLite; see onceApplied). */
function applied(path: string, key: string, status: number): ReturnType<TestServer['request']> {
  return onceApplied(() => s.request('GET', path, { key }), (r) => r.status === status);
}

function cli(...argv: string[]): Promise<CliResult> {
  return runCli([...argv, '--db', db]);
}

/** A failed command: exit code 1, nothing on stdout, exactly one line on stderr that matches `message`. */
function assertFails(r: CliResult, message: RegExp): void {
  assert.equal(r.code, 1, r.out + r.err);
  assert.equal(r.out, '');
  assert.equal(r.err.split('\n').filter(Boolean).length, 1, r.err);
  assert.match(r.err, message);
}

async function count(table: string): Promise<number> {
  return (await s.store.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`))!.n;
}

async function newMerchant(): Promise<string> {
  const r = await cli('merchant', 'create', '--name', 'CLI merchant', '--json');
  assert.equal(r.code, 0, r.err);
  return r.json.id;
}

async function newShop(merchantId: string, ...more: string[]): Promise<{ id: string; webhook_secret: string; signing_secret: string }> {
  const r = await cli('shop', 'create', '--merchant', merchantId, '--name', 'CLI shop', ...more, '--json');
  assert.equal(r.code, 0, r.err);
  return r.json;
}

test('every command has --help with its usage and examples', async () => {
  for (const c of COMMANDS) {
    const r = await runCli([c.name, '--help']);
    assert.equal(r.code, 0, c.name);
    assert.match(r.out, /Usage/, c.name);
    assert.match(r.out, /Examples:\n\s+kopek /, c.name);
    assert.equal(r.err, '');
  }
  const top = await runCli(['--help']);
  assert.equal(top.code, 0);
  for (const c of COMMANDS) assert.match(top.out, new RegExp(`\\n  ${c.name} `));
});

test('an unknown command exits 2 with one line', async () => {
  const r = await runCli(['frobnicate']);
  assert.equal(r.code, 2);
  assert.equal(r.err, 'kopek: unknown command "frobnicate"; run \'kopek --help\'\n');
});

test('merchant create prints the id; --json prints one object', async () => {
  const text = await cli('merchant', 'create', '--name', 'Tea shop LLC');
  assert.equal(text.code, 0);
  assert.match(text.out, /^[0-9a-f-]{36}\n$/);
  const json = await cli('merchant', 'create', '--name', 'Acme', '--json');
  assert.deepEqual(Object.keys(json.json).sort(), ['id', 'name']);
  assert.equal(json.json.name, 'Acme');
});

test('merchant create without a name fails and creates nothing', async () => {
  const before = await count('merchants');
  assertFails(await cli('merchant', 'create'), /--name NAME is required/);
  assertFails(await cli('merchant', 'create', '--name', '  '), /must not be empty/);
  assert.equal(await count('merchants'), before);
});

test('merchant activate-live is refused with the reason while no shop has an acquirer; live keys keep answering 403', async () => {
  const m = await newMerchant();
  const shop = await newShop(m);
  const key = (await cli('key', 'create', '--shop', shop.id, '--mode', 'live', '--json')).json.key;
  assertFails(await cli('merchant', 'activate-live', m), /no shop of the merchant has an acquirer/);
  assertFails(await cli('merchant', 'activate-live', 'no-such-merchant'), /"no-such-merchant": not found/);
  const r = await s.request('GET', '/v1/public/payments', { key });
  assert.equal(r.body.error.code, 'live_mode_not_activated');
});

test('shop create prints the id and both secrets once; show never prints a secret', async () => {
  const m = await newMerchant();
  const shop = await newShop(m, '--scopes', 'api:reports:read,api:balance:read');
  assert.match(shop.webhook_secret, /^whs_/);
  assert.match(shop.signing_secret, /^thm_/);
  const show = await cli('shop', 'show', shop.id, '--json');
  assert.equal(show.code, 0);
  assert.deepEqual(show.json, {
    id: shop.id,
    merchant_id: m,
    name: 'CLI shop',
    scopes: ['api:reports:read', 'api:balance:read'],
    ip_allowlist: [],
    require_signature: false,
    test_clock_offset_seconds: 0,
  });
  const text = await cli('shop', 'show', shop.id);
  assert.doesNotMatch(text.out + show.out, /thm_|whs_/);
});

test('shop create refuses an unknown scope or merchant and creates nothing', async () => {
  const m = await newMerchant();
  const before = await count('shops');
  assertFails(await cli('shop', 'create', '--merchant', m, '--name', 'X', '--scopes', 'api:everything'), /unknown scope "api:everything"/);
  assertFails(await cli('shop', 'create', '--merchant', 'nobody', '--name', 'X'), /merchant "nobody" not found/);
  assertFails(await cli('shop', 'create', '--name', 'X'), /--merchant ID and --name NAME are required/);
  assert.equal(await count('shops'), before);
});

test('shop scopes replaces the scopes; the running server applies them at once', async () => {
  const m = await newMerchant();
  const shop = await newShop(m);
  const key = (await cli('key', 'create', '--shop', shop.id, '--mode', 'test', '--json')).json.key;
  assert.equal((await s.request('GET', '/v1/public/payments', { key })).status, 200);
  const r = await cli('shop', 'scopes', shop.id, 'api:balance:read', '--json');
  assert.deepEqual(r.json, { id: shop.id, scopes: ['api:balance:read'] });
  assert.equal((await applied('/v1/public/payments', key, 403)).body.error.code, 'scope_required');
  assertFails(await cli('shop', 'scopes', shop.id, 'api:nope'), /unknown scope "api:nope"/);
  assertFails(await cli('shop', 'scopes', shop.id), /give the scope list/);
  assert.deepEqual((await cli('shop', 'show', shop.id, '--json')).json.scopes, ['api:balance:read']);
});

test('shop ip-allowlist sets, validates and clears the list; the running server applies it at once', async () => {
  const m = await newMerchant();
  const shop = await newShop(m);
  const key = (await cli('key', 'create', '--shop', shop.id, '--mode', 'test', '--json')).json.key;
  const set = await cli('shop', 'ip-allowlist', shop.id, '203.0.113.0/24,2001:db8::/32', '--json');
  assert.deepEqual(set.json, { id: shop.id, ip_allowlist: ['203.0.113.0/24', '2001:db8::/32'] });
  assert.equal((await applied('/v1/test/clock', key, 403)).body.error.code, 'ip_not_allowed');
  assertFails(await cli('shop', 'ip-allowlist', shop.id, '203.0.113.0/24,300.0.0.1'), /bad allow-list entry "300\.0\.0\.1"/);
  assert.deepEqual((await cli('shop', 'show', shop.id, '--json')).json.ip_allowlist, ['203.0.113.0/24', '2001:db8::/32']);
  const cleared = await cli('shop', 'ip-allowlist', shop.id);
  assert.match(cleared.out, /cleared/);
  assert.equal((await applied('/v1/test/clock', key, 200)).status, 200);
});

test('shop signing-secret and require-signature: requests must then be signed with the new secret', async () => {
  const m = await newMerchant();
  const shop = await newShop(m);
  const key = (await cli('key', 'create', '--shop', shop.id, '--mode', 'test', '--json')).json.key;
  const rotated = await cli('shop', 'signing-secret', shop.id, '--json');
  assert.match(rotated.json.secret, /^thm_/);
  assert.notEqual(rotated.json.secret, shop.signing_secret);
  const on = await cli('shop', 'require-signature', shop.id, 'on', '--json');
  assert.deepEqual(on.json, { id: shop.id, require_signature: true });
  assert.equal((await applied('/v1/test/clock', key, 401)).body.error.code, 'signature_required');
  const sig = (secret: string) => 'sha256=' + createHmac('sha256', secret).update('').digest('hex');
  assert.equal((await s.request('GET', '/v1/test/clock', { key, headers: { 'x-psp-signature': sig(shop.signing_secret) } })).body.error.code, 'invalid_signature');
  assert.equal((await s.request('GET', '/v1/test/clock', { key, headers: { 'x-psp-signature': sig(rotated.json.secret) } })).status, 200);
  assertFails(await cli('shop', 'require-signature', shop.id, 'yes'), /give on or off, got "yes"/);
  await cli('shop', 'require-signature', shop.id, 'off');
  assert.equal((await applied('/v1/test/clock', key, 200)).status, 200);
});

test('shop subcommands need an existing shop', async () => {
  for (const argv of [['show', 'nope'], ['scopes', 'nope', 'api:reports:read'], ['ip-allowlist', 'nope'], ['signing-secret', 'nope'], ['require-signature', 'nope', 'on']]) {
    assertFails(await cli('shop', ...argv), /"nope"/);
  }
  assertFails(await cli('shop', 'show'), /SHOP_ID is required/);
  assertFails(await cli('shop', 'paint', 'x'), /unknown subcommand "paint"/);
});

test('key create / list / revoke, against the running server', async () => {
  const m = await newMerchant();
  const shop = await newShop(m, '--scopes', 'api:reports:read,api:balance:read');
  const created = await cli('key', 'create', '--shop', shop.id, '--mode', 'test', '--json');
  assert.equal(created.code, 0);
  assert.match(created.json.key, /^sk_test_[A-Za-z0-9_-]{43}$/);
  assert.deepEqual(created.json.scopes, ['api:reports:read', 'api:balance:read']);
  // Usable at once by the server holding the same file open.
  assert.equal((await s.request('GET', '/v1/public/payments', { key: created.json.key })).status, 200);

  const narrow = await cli('key', 'create', '--shop', shop.id, '--mode', 'live', '--scopes', 'api:balance:read', '--json');
  assert.match(narrow.json.key, /^sk_live_/);
  assert.deepEqual(narrow.json.scopes, ['api:balance:read']);

  const list = await cli('key', 'list', '--shop', shop.id, '--json');
  assert.equal(list.json.items.length, 2);
  for (const k of list.json.items) {
    assert.deepEqual(Object.keys(k).sort(), ['created_at', 'id', 'mode', 'prefix', 'revoked_at', 'scopes']);
    assert.equal(k.revoked_at, null);
  }
  assert.ok(!list.out.includes(created.json.key), 'list printed a whole key');
  assert.ok(created.json.key.startsWith(list.json.items.find((k: { id: string }) => k.id === created.json.id).prefix));

  const revoked = await cli('key', 'revoke', created.json.id, '--json');
  assert.deepEqual(revoked.json, { id: created.json.id, revoked: true });
  assert.equal((await applied('/v1/public/payments', created.json.key, 401)).body.error.code, 'unauthorized');
  assertFails(await cli('key', 'revoke', created.json.id), /already revoked/);
  const after = await cli('key', 'list', '--shop', shop.id, '--json');
  assert.match(after.json.items.find((k: { id: string }) => k.id === created.json.id).revoked_at, /^\d{4}-\d\d-\d\dT.*Z$/);
});

test('key commands refuse bad input and change nothing', async () => {
  const m = await newMerchant();
  const shop = await newShop(m);
  const before = await count('api_keys');
  assertFails(await cli('key', 'create', '--shop', shop.id, '--mode', 'prod'), /--mode must be test or live, got "prod"/);
  assertFails(await cli('key', 'create', '--shop', shop.id), /--mode test\|live are required/);
  assertFails(await cli('key', 'create', '--shop', 'nope', '--mode', 'test'), /shop "nope" not found/);
  assertFails(await cli('key', 'create', '--shop', shop.id, '--mode', 'test', '--scopes', 'api:x'), /unknown scope "api:x"/);
  assertFails(await cli('key', 'create', '--shop', shop.id, '--mode', 'test', '--colour', 'red'), /unknown option --colour/);
  assertFails(await cli('key', 'revoke'), /KEY is required: its id, the key itself or its prefix/);
  assertFails(await cli('key', 'revoke', 'a', 'b'), /unexpected argument "b"/);
  assertFails(await cli('key', 'revoke', 'no-such-key'), /cannot revoke key "no-such-key": not found/);
  assertFails(await cli('key', 'list'), /--shop ID is required/);
  assertFails(await cli('key', 'create', '--shop'), /option --shop needs a value/);
  assert.equal(await count('api_keys'), before);
});

test('key revoke takes the id, the key itself or the prefix key list shows; a shared prefix is refused naming both; --shop finds only its keys', async () => {
  const m = await newMerchant();
  const a = (await newShop(m)).id;
  const b = (await newShop(m)).id;
  const key = async (shop: string) => (await cli('key', 'create', '--shop', shop, '--mode', 'test', '--json')).json as { id: string; key: string };
  const [bySecret, byShown, byBare, ofB] = [await key(a), await key(a), await key(a), await key(b)];
  const listed = await cli('key', 'list', '--shop', a);
  const shown = (k: { id: string }) => listed.out.split('\n').find((l) => l.startsWith(k.id))!.split(/\s+/)[2];
  assert.match(shown(byShown), /^sk_test_.{4}…$/);

  const secret = await cli('key', 'revoke', bySecret.key, '--json');
  assert.deepEqual(secret.json, { id: bySecret.id, revoked: true });
  assert.ok(!secret.out.includes(bySecret.key));
  assert.deepEqual((await cli('key', 'revoke', shown(byShown))).out, `revoked ${byShown.id}\n`);
  assert.deepEqual((await cli('key', 'revoke', '--key', shown(byBare).replace('…', ''), '--shop', a, '--json')).json, { id: byBare.id, revoked: true });
  for (const k of [bySecret, byShown, byBare]) assert.equal((await applied('/v1/public/payments', k.key, 401)).status, 401);

  // Another shop's key, by any of its names, is not found with --shop; nothing is revoked.
  const prefixB = ofB.key.slice(0, 12);
  for (const ref of [ofB.id, ofB.key, prefixB, `${prefixB}…`]) {
    assertFails(await cli('key', 'revoke', ref, '--shop', a), new RegExp(`cannot revoke key "${prefixB.length < ref.length && ref !== ofB.id ? `${prefixB}…` : ref}": not found in shop "${a}"; give its id, the key itself, or the prefix kopek key list shows`));
  }
  assert.equal((await s.request('GET', '/v1/public/payments', { key: ofB.key })).status, 200);
  // A key that is no key of this database is not found, and the error never repeats it past its prefix.
  const stranger = 'sk_test_' + 'Q'.repeat(43);
  const unknown = await cli('key', 'revoke', stranger);
  assertFails(unknown, /cannot revoke key "sk_test_QQQQ…": not found;/);
  assert.ok(!unknown.err.includes(stranger));

  // Two keys whose shown prefixes are the same: the prefix is refused naming both, --shop picks one.
  const twinA = (await createKey(s.store, a, 'test', undefined, Date.now(), 'sk_test_Twin' + 'a'.repeat(39))).key;
  const twinB = (await createKey(s.store, b, 'test', undefined, Date.now(), 'sk_test_Twin' + 'b'.repeat(39))).key;
  const both = await cli('key', 'revoke', 'sk_test_Twin…');
  assertFails(both, /^kopek key: cannot revoke key "sk_test_Twin…": the prefix is that of 2 keys: .*; give the id of the one to revoke\n$/);
  assert.ok(both.err.includes(`${twinA.id} (shop ${a})`) && both.err.includes(`${twinB.id} (shop ${b})`), both.err);
  assert.deepEqual((await cli('key', 'revoke', 'sk_test_Twin', '--shop', b, '--json')).json, { id: twinB.id, revoked: true });
  const after = (await cli('key', 'list', '--shop', a, '--json')).json.items.find((k: { id: string }) => k.id === twinA.id);
  assert.equal(after.revoked_at, null);
});

test('demo creates a merchant, a shop with every scope and a working test key', async () => {
  const r = await cli('demo', '--json');
  assert.equal(r.code, 0);
  assert.deepEqual(Object.keys(r.json).sort(), ['base_url', 'email', 'key', 'key_id', 'merchant_id', 'password', 'shop_id']);
  assert.match(r.json.key, /^sk_test_/);
  const show = await cli('shop', 'show', r.json.shop_id, '--json');
  assert.equal(show.json.scopes.length, 7);
  assert.equal((await s.request('GET', '/v1/public/payments', { key: r.json.key })).status, 200);
  const text = await cli('demo');
  assert.match(text.out, /test key  sk_test_\S+   \(shown once; keep it\)/);
});

test('a database path that does not exist is an error (nothing is created), except for demo and merchant create', async () => {
  const missing = join(s.dir, 'nowhere', 'x.db');
  assertFails(await runCli(['key', 'list', '--shop', 'x', '--db', missing]), /cannot open database ".*x\.db": no such file/);
  assert.equal(existsSync(missing), false);
  const made = await runCli(['demo', '--json', '--db', missing]);
  assert.equal(made.code, 0);
  assert.equal(existsSync(missing), true);
  const list = await runCli(['key', 'list', '--shop', made.json.shop_id, '--db', missing, '--json']);
  assert.equal(list.json.items.length, 1);
});

test('a database that is not kopek\'s is refused and left untouched; a file that is not SQLite is one quoted line', async () => {
  const Database = (await import('better-sqlite3')).default;
  const other = join(s.dir, 'other.sqlite');
  const o = new Database(other);
  o.exec('CREATE TABLE notes (x)');
  o.close();
  for (const argv of [['jobs'], ['ledger', 'check'], ['webhook', 'list', '--shop', 'x'], ['key', 'list', '--shop', 'x']]) {
    assertFails(await runCli([...argv, '--db', other]), /cannot open database ".*other\.sqlite": it is not a kopek database/);
  }
  const after = new Database(other, { readonly: true });
  assert.deepEqual(after.prepare(`SELECT name FROM sqlite_master`).all(), [{ name: 'notes' }], 'no kopek table was created in it');
  assert.equal(after.pragma('journal_mode', { simple: true }), 'delete', 'its journal mode is unchanged');
  after.close();
  const junk = join(s.dir, 'junk.db');
  writeFileSync(junk, 'this is not a database, only some text long enough to look like a header....................................');
  assertFails(await runCli(['jobs', '--db', junk]), /^kopek jobs: cannot open database ".*junk\.db": file is not a database/);
});

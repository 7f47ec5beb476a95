import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server';
import { runCli, type CliResult } from '../helpers/cli';
import { TBANK_API_URL } from '../../src/banks/tbank/protocol';
import { decryptSecret, loadMasterKey, masterKeySource } from '../../src/platform/secrets/at-rest';
import { sqliteOnly } from '../helpers/pg';

// kopek shop acquirer and kopek merchant activate-live, run beside a server on the same file: the password
// is read from a file, encrypted under the master key and never printed; live mode needs a shop with one.

let s: TestServer;
let passFile: string;
const PASSWORD = 'cli-terminal-password-3e9a';

before(async () => {
  s = await startTestServer();
  passFile = join(s.dir, 'tbank.pass');
  writeFileSync(passFile, PASSWORD + '\n', { mode: 0o600 });
});
after(() => s.close());

function cli(...argv: string[]): Promise<CliResult> {
  return runCli([...argv, '--db', s.dbPath]);
}

function fails(r: CliResult, message: RegExp): void {
  assert.equal(r.code, 1, r.out + r.err);
  assert.equal(r.out, '');
  assert.match(r.err, message);
  assert.ok(!r.err.includes(PASSWORD));
}

async function merchantWithShop(): Promise<{ merchant: string; shop: string }> {
  const merchant = (await cli('merchant', 'create', '--name', 'Live merchant', '--json')).json.id as string;
  const shop = (await cli('shop', 'create', '--merchant', merchant, '--name', 'Live shop', '--json')).json.id as string;
  return { merchant, shop };
}

test('shop acquirer sets a T-Bank terminal: --json prints shop_id, provider, terminal_key and api_url, never the password', async () => {
  const { shop } = await merchantWithShop();
  const r = await cli('shop', 'acquirer', '--shop', shop, '--provider', 'tbank', '--terminal-key', '1700000000CLI', '--password-file', passFile, '--json');
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(r.json, { shop_id: shop, provider: 'tbank', terminal_key: '1700000000CLI', api_url: TBANK_API_URL });
  const row = (await s.store.get<{ provider: string; settings: string }>('SELECT provider, settings FROM shop_acquirers WHERE shop_id = ?', shop))!;
  assert.equal(row.provider, 'tbank');
  assert.ok(!row.settings.includes(PASSWORD), 'the password is not stored in clear');
  const enc = JSON.parse(row.settings).password_enc as string;
  assert.equal(decryptSecret(loadMasterKey(s.dbPath), enc, `tbank.password:${shop}`), PASSWORD, 'one trailing newline of the file is not part of it');
  // PostgreSQL takes the key from KOPEK_MASTER_KEY alone: nothing is written beside a URL.
  if (s.store.engine === 'postgres') assert.equal(masterKeySource(s.dbPath).kind, 'env');
  else assert.equal(statSync(`${s.dbPath}.key`).mode & 0o777, 0o600, 'the key file beside the database is 0600');

  const shown = await cli('shop', 'acquirer', '--shop', shop, '--json');
  assert.deepEqual(shown.json, r.json);
  const text = await cli('shop', 'acquirer', '--shop', shop);
  assert.match(text.out, /terminal_key\s+1700000000CLI/);
  assert.ok(!text.out.includes(PASSWORD) && !text.out.includes(enc));

  const moved = await cli('shop', 'acquirer', '--shop', shop, '--provider', 'tbank', '--terminal-key', '1700000000CLI', '--password-file', passFile, '--api-url', 'http://127.0.0.1:9/v2/', '--json');
  assert.equal(moved.json.api_url, 'http://127.0.0.1:9/v2');
});

test('bad input changes nothing and says what is wrong', async () => {
  const { shop } = await merchantWithShop();
  fails(await cli('shop', 'acquirer', '--shop', shop, '--provider', 'acme', '--terminal-key', 'K', '--password-file', passFile), /--provider must be tbank/);
  fails(await cli('shop', 'acquirer', '--shop', shop, '--provider', 'tbank', '--terminal-key', 'K', '--password-file', join(s.dir, 'missing')), /cannot read the password file/);
  fails(await cli('shop', 'acquirer', '--shop', shop, '--provider', 'tbank', '--password-file', passFile), /--terminal-key KEY and --password-file FILE are required/);
  fails(await cli('shop', 'acquirer', '--shop', shop, '--provider', 'tbank', '--terminal-key', 'K', '--password-file', passFile, '--api-url', 'ftp://x'), /--api-url must be an http\(s\) URL/);
  fails(await cli('shop', 'acquirer', '--shop', 'no-such-shop', '--provider', 'tbank', '--terminal-key', 'K', '--password-file', passFile), /shop "no-such-shop" not found/);
  fails(await cli('shop', 'acquirer', '--shop', shop), /none is set/);
  assert.equal(await s.store.get('SELECT 1 FROM shop_acquirers WHERE shop_id = ?', shop), undefined);
});

test('merchant activate-live succeeds once a shop has an acquirer; --remove takes it away again', async () => {
  const { merchant, shop } = await merchantWithShop();
  const key = (await cli('key', 'create', '--shop', shop, '--mode', 'live', '--json')).json.key as string;
  fails(await cli('merchant', 'activate-live', merchant), /no shop of the merchant has an acquirer/);
  assert.equal((await cli('shop', 'acquirer', '--shop', shop, '--provider', 'tbank', '--terminal-key', '1700000000LIVE', '--password-file', passFile)).code, 0);
  const on = await cli('merchant', 'activate-live', merchant, '--json');
  assert.equal(on.code, 0, on.err);
  assert.deepEqual(on.json, { id: merchant, live_enabled: true, shops_with_acquirer: [shop] });
  const ok = await s.request('GET', '/v1/public/payments', { key });
  assert.equal(ok.status, 200, ok.text);

  const removed = await cli('shop', 'acquirer', '--shop', shop, '--remove', '--json');
  assert.deepEqual(removed.json, { shop_id: shop, removed: true });
  const r = await s.request('GET', '/v1/public/payments', { key });
  assert.equal(r.status, 403);
  assert.equal(r.body.error.code, 'acquirer_not_configured');
});

test('KOPEK_MASTER_KEY is used instead of a key file, and a wrong one is refused without printing it', async () => {
  const { shop } = await merchantWithShop();
  const dir = join(s.dir, 'other');
  const key = Buffer.alloc(32, 7).toString('base64');
  const prev = process.env.KOPEK_MASTER_KEY;
  try {
    process.env.KOPEK_MASTER_KEY = key;
    assert.deepEqual(loadMasterKey(join(dir, 'x.db')), Buffer.alloc(32, 7));
    assert.equal(existsSync(join(dir, 'x.db.key')), false);
    process.env.KOPEK_MASTER_KEY = 'c2hvcnQ=';
    const r = await cli('shop', 'acquirer', '--shop', shop, '--provider', 'tbank', '--terminal-key', 'K1', '--password-file', passFile);
    fails(r, /master key from KOPEK_MASTER_KEY: it must be 32 bytes in base64/);
    assert.ok(!r.err.includes('c2hvcnQ='));
  } finally {
    if (prev === undefined) delete process.env.KOPEK_MASTER_KEY;
    else process.env.KOPEK_MASTER_KEY = prev;
  }
  if (s.store.engine === 'sqlite') assert.ok(readFileSync(`${s.dbPath}.key`, 'utf8').trim().length > 0);
});

test('kopek backup refuses a PostgreSQL database in one line naming its own tools, and touches nothing', async () => {
  const dest = join(s.dir, 'pg-backup.db');
  const r = await runCli(['backup', dest, '--db', 'postgres://kopek@127.0.0.1:1/nowhere']);
  assert.equal(r.code, 1);
  assert.equal(r.out, '');
  assert.match(r.err, /^kopek backup: cannot back up a PostgreSQL database with kopek backup: .*pg_dump.*pg_basebackup.*point-in-time recovery\)\n$/);
  assert.equal(existsSync(dest), false);
});

test('kopek backup says the master key is not in the copy; a copy without its key cannot read the password', { skip: sqliteOnly('a backup of the SQLite file') }, async () => {
  const { shop } = await merchantWithShop();
  assert.equal((await cli('shop', 'acquirer', '--shop', shop, '--provider', 'tbank', '--terminal-key', '1700000000BACKUP', '--password-file', passFile)).code, 0);
  const dest = join(s.dir, 'backup-copy.db');
  const text = await cli('backup', dest);
  assert.equal(text.code, 0, text.err);
  assert.match(text.out, new RegExp(`master key: not in the copy; keep ${s.dbPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.key with this backup`));
  const json = await cli('backup', dest, '--force', '--json');
  assert.equal(json.json.master_key, `${s.dbPath}.key`);
  assert.equal(existsSync(`${dest}.key`), false, 'the key is not copied beside the backup');
  const { openDatabase } = await import('../../src/platform/storage/sqlite/open');
  const copy = openDatabase(dest, { readonly: true });
  const settings = JSON.parse((copy.prepare('SELECT settings FROM shop_acquirers WHERE shop_id = ?').get(shop) as { settings: string }).settings);
  copy.close();
  const otherKey = Buffer.alloc(32, 9);
  assert.throws(() => decryptSecret(otherKey, settings.password_enc, `tbank.password:${shop}`), /the master key is not the one it was encrypted with/);
});

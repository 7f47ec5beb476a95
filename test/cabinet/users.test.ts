import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { doRequest, startTestServer, type TestServer } from '../helpers/server';
import { spawnServer } from '../helpers/child-server';
import { runCli, type CliResult } from '../helpers/cli';
import { cabGet, postLogin, setCookie, signIn } from '../helpers/cabinet';
import { base32, fromBase32, otpauthUri, totpCode } from '../../src/web/cabinet/users';
import { openDatabase, SCHEMA_VERSION } from '../../src/platform/storage/sqlite/open';
import { sqliteOnly } from '../helpers/pg';
import { upgradeOldSqlite } from '../../src/platform/storage/sqlite/migrations-old';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

function cli(...argv: string[]): Promise<CliResult> {
  return runCli([...argv, '--db', s.dbPath]);
}

function passwordFile(name: string, text: string): string {
  const path = join(s.dir, name);
  writeFileSync(path, text, { mode: 0o600 });
  return path;
}

test('TOTP codes match the RFC 6238 SHA-1 test vectors (last six digits), and base32 round-trips', () => {
  const secret = base32(Buffer.from('12345678901234567890'));
  assert.equal(secret, 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ');
  assert.equal(fromBase32(secret).toString(), '12345678901234567890');
  for (const [t, code] of [[59, '287082'], [1111111109, '081804'], [1234567890, '005924'], [2000000000, '279037']] as const) {
    assert.equal(totpCode(secret, t * 1000), code, `T=${t}`);
  }
  assert.equal(otpauthUri(secret, 'a@b.example'), `otpauth://totp/kopek%3Aa%40b.example?secret=${secret}&issuer=kopek&algorithm=SHA1&digits=6&period=30`);
});

test('kopek admin create --json prints {id, email, merchant_id}; the user signs in; list shows them; disable ends their sessions', async () => {
  const file = passwordFile('owner.pw', 'a long enough password\n');
  const r = await cli('admin', 'create', '--merchant', s.demo.merchantId, '--email', 'Owner@Shop.Example', '--password-file', file, '--json');
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(Object.keys(r.json).sort(), ['email', 'id', 'merchant_id']);
  assert.equal(r.json.email, 'owner@shop.example');
  assert.equal(r.json.merchant_id, s.demo.merchantId);
  const stored = (await s.store.get<{ password_hash: string }>('SELECT password_hash FROM cabinet_users WHERE id = ?', r.json.id))!;
  assert.match(stored.password_hash, /^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
  assert.doesNotMatch(stored.password_hash, /a long enough/);

  const session = await signIn(s, 'owner@shop.example', 'a long enough password');
  const list = await cli('admin', 'list', '--merchant', s.demo.merchantId, '--json');
  assert.equal(list.code, 0, list.err);
  assert.deepEqual(list.json.items.map((u: { email: string; totp: boolean; disabled_at: null }) => [u.email, u.totp, u.disabled_at]), [['owner@shop.example', false, null]]);

  const off = await cli('admin', 'disable', 'owner@shop.example', '--json');
  assert.equal(off.code, 0, off.err);
  assert.equal((await cabGet(s, session, '/cabinet/overview')).status, 303, 'the open session ended');
  assert.equal((await postLogin(s, { email: 'owner@shop.example', password: 'a long enough password' })).status, 401);
  const again = await cli('admin', 'disable', r.json.id);
  assert.equal(again.code, 1);
  assert.match(again.err, /already disabled/);
});

test('kopek admin create refuses a short password, a taken email, an unknown merchant and a missing file, creating nothing', async () => {
  const before = (await s.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM cabinet_users'))!.n;
  const short = await cli('admin', 'create', '--merchant', s.demo.merchantId, '--email', 'x@shop.example', '--password-file', passwordFile('short.pw', 'short'));
  assert.equal(short.code, 1);
  assert.match(short.err, /^kopek admin: cannot create cabinet user: the password must have at least 10 characters, got 5\n$/);
  const ok = passwordFile('ok.pw', 'another fine password');
  const unknown = await cli('admin', 'create', '--merchant', '00000000-0000-4000-8000-000000000000', '--email', 'x@shop.example', '--password-file', ok);
  assert.match(unknown.err, /merchant "00000000-0000-4000-8000-000000000000" not found/);
  const missing = await cli('admin', 'create', '--merchant', s.demo.merchantId, '--email', 'x@shop.example', '--password-file', join(s.dir, 'nope.pw'));
  assert.match(missing.err, /cannot read password file ".*nope\.pw": ENOENT/);
  const bad = await cli('admin', 'create', '--merchant', s.demo.merchantId, '--email', 'not-an-email', '--password-file', ok);
  assert.match(bad.err, /"not-an-email" is not an email address/);
  assert.equal((await cli('admin', 'create', '--merchant', s.demo.merchantId, '--email', 'dup@shop.example', '--password-file', ok)).code, 0);
  const dup = await cli('admin', 'create', '--merchant', s.demo.merchantId, '--email', 'DUP@shop.example', '--password-file', ok);
  assert.match(dup.err, /"dup@shop.example" already has a user/);
  const after = (await s.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM cabinet_users'))!.n;
  assert.equal(after, before + 1);
});

test('a database of schema version 3 gains the cabinet tables on start', { skip: sqliteOnly('a migration from an old SQLite schema version') }, async () => {
  await s.store.tx(async (tx) => {
    await tx.run('PRAGMA foreign_keys = OFF');
    for (const t of ['cabinet_audit', 'cabinet_login_failures', 'cabinet_sessions', 'cabinet_recovery_codes', 'cabinet_users', 'api_key_usage']) await tx.run(`DROP TABLE ${t}`);
    await tx.run('PRAGMA user_version = 3');
  });
  upgradeOldSqlite(s.dbPath);
  await s.restart();
  const db = openDatabase(s.dbPath, { readonly: true });
  try {
    assert.equal(db.pragma('user_version', { simple: true }), SCHEMA_VERSION);
    const names = (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND (name LIKE 'cabinet_%' OR name = 'api_key_usage') ORDER BY name`).all() as Array<{ name: string }>).map((r) => r.name);
    assert.deepEqual(names, ['api_key_usage', 'cabinet_audit', 'cabinet_login_failures', 'cabinet_recovery_codes', 'cabinet_sessions', 'cabinet_users']);
  } finally {
    db.close();
  }
});

test('kopek serve on an empty database prints a cabinet user for the demo merchant, whose password signs in', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-serve-'));
  const child = await spawnServer(['--db', join(dir, 'k.db')]);
  try {
    const banner = child.stderr();
    const m = /cabinet {3}(http:\/\/\S+\/cabinet\/login) {3}email (\S+) {3}password (\S+) {3}\(shown once; keep it\)/.exec(banner);
    assert.ok(m, banner);
    assert.equal(m[1], `${child.url}/cabinet/login`);
    const base = child.url;
    const form = await doRequest(base, 'GET', '/cabinet/login', { key: null }, '');
    const token = setCookie(form, 'kopek_cabinet_login')!;
    const r = await doRequest(
      base,
      'POST',
      '/cabinet/login',
      {
        key: null,
        body: new URLSearchParams({ _csrf: token, email: m[2], password: m[3] }).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `kopek_cabinet_login=${token}` },
      },
      '',
    );
    assert.equal(r.status, 303, r.text.slice(0, 300));
    assert.equal(r.headers.location, '/cabinet/overview');
  } finally {
    child.proc.kill('SIGTERM');
    await child.exited;
    rmSync(dir, { recursive: true, force: true });
  }
});

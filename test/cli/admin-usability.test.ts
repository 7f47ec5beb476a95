import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server';
import { runCli, type CliResult } from '../helpers/cli';
import { OPTIONS } from '../../src/platform/config';
import { SCHEMA_VERSION } from '../../src/platform/storage/sqlite/open';

// What an operator tripped over in the admin commands: one way to name a shop, merchant or key; help for a
// typo; key list's columns; ledger check and doctor in the same words; serve --help's defaults; warnings for
// a live key that cannot work yet; and the full sign-in address of a new cabinet user.

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

function cli(...argv: string[]): Promise<CliResult> {
  return runCli([...argv, '--db', s.dbPath]);
}

async function ok(r: Promise<CliResult>): Promise<CliResult> {
  const x = await r;
  assert.equal(x.code, 0, x.out + x.err);
  return x;
}

async function newShop(): Promise<{ merchant: string; shop: string }> {
  const merchant = (await ok(cli('merchant', 'create', '--name', 'Usability', '--json'))).json.id;
  const shop = (await ok(cli('shop', 'create', '--merchant', merchant, '--name', 'Usability shop', '--json'))).json.id;
  return { merchant, shop };
}

test('shop show --shop X answered "unknown option": every shop, merchant and key id takes its flag, and the positional form stays', async () => {
  const { merchant, shop } = await newShop();
  assert.equal((await ok(cli('shop', 'show', '--shop', shop, '--json'))).json.id, shop);
  assert.equal((await ok(cli('shop', 'show', shop, '--json'))).json.id, shop);
  assert.deepEqual((await ok(cli('shop', 'scopes', '--shop', shop, 'api:reports:read', '--json'))).json.scopes, ['api:reports:read']);
  assert.deepEqual((await ok(cli('shop', 'ip-allowlist', '--shop', shop, '203.0.113.0/24', '--json'))).json.ip_allowlist, ['203.0.113.0/24']);
  assert.deepEqual((await ok(cli('shop', 'ip-allowlist', '--shop', shop, '--json'))).json.ip_allowlist, []);
  assert.match((await ok(cli('shop', 'signing-secret', '--shop', shop, '--json'))).json.secret, /^thm_/);
  assert.equal((await ok(cli('shop', 'require-signature', '--shop', shop, 'off', '--json'))).json.require_signature, false);
  const key = (await ok(cli('key', 'create', '--shop', shop, '--mode', 'test', '--json'))).json.id;
  assert.equal((await ok(cli('key', 'revoke', '--key', key, '--json'))).json.revoked, true);
  const refused = await cli('merchant', 'activate-live', '--merchant', merchant);
  assert.match(refused.err, new RegExp(`merchant "${merchant}": no shop of the merchant has an acquirer`), 'the flag reached the command');
  // An id given both ways is one too many, not silently one of them.
  const twice = await cli('shop', 'show', shop, '--shop', shop);
  assert.equal(twice.code, 1);
  assert.match(twice.err, /unexpected argument/);
  assert.match((await cli('shop', 'show')).err, /SHOP_ID is required \(or --shop SHOP_ID\)/);
});

test('a mistyped command or subcommand gets "did you mean" (webhooks, jobs lsit); jobs list lists', async () => {
  const cmd = await cli('webhooks', 'list');
  assert.equal(cmd.code, 2);
  assert.equal(cmd.err, `kopek: unknown command "webhooks"; did you mean "kopek webhook"?; run 'kopek --help'\n`);
  for (const [argv, near] of [
    [['jobs', 'lsit'], 'jobs list'],
    [['key', 'lst', '--shop', 'x'], 'key list'],
    [['shop', 'shwo', 'x'], 'shop show'],
    [['webhook', 'delivery'], 'webhook deliveries'],
    [['ledger', 'chek'], 'ledger check'],
    [['merchant', 'activate'], 'merchant activate-live'],
    [['admin', 'lists'], 'admin list'],
  ] as const) {
    const r = await cli(...argv);
    assert.equal(r.code, 1, argv.join(' '));
    assert.match(r.err, new RegExp(`unknown subcommand "${argv[1]}"; did you mean "${near}"\\?; see kopek ${argv[0]} --help`), argv.join(' '));
  }
  assert.doesNotMatch((await cli('key', 'paint')).err, /did you mean/, 'no guess for a word that is not close');
  const jobs = await ok(cli('jobs', 'list', '--json'));
  assert.deepEqual(Object.keys(jobs.json).sort(), ['counts', 'failing']);
});

test('key list printed no header and no created column: a header row and the columns its help promises, aligned', async () => {
  const { shop } = await newShop();
  await ok(cli('key', 'create', '--shop', shop, '--mode', 'test', '--scopes', 'api:reports:read'));
  const revoked = (await ok(cli('key', 'create', '--shop', shop, '--mode', 'test', '--json'))).json.id;
  await ok(cli('key', 'revoke', revoked));
  const help = (await ok(runCli(['key', '--help']))).out;
  assert.match(help, /lists the shop's keys under a header: id, mode, prefix, scopes, created, revoked/);
  const lines = (await ok(cli('key', 'list', '--shop', shop))).out.trimEnd().split('\n');
  assert.match(lines[0], /^ID +MODE +PREFIX +SCOPES +CREATED +REVOKED$/);
  assert.equal(lines.length, 3);
  const col = (name: string) => lines[0].indexOf(name);
  for (const line of lines.slice(1)) {
    assert.match(line.slice(col('MODE')), /^test /);
    assert.match(line.slice(col('PREFIX')), /^sk_test_\S+… /);
    assert.match(line.slice(col('CREATED')), /^\d{4}-\d\d-\d\dT/);
  }
  assert.ok(lines.some((l) => /^\d{4}-\d\d-\d\dT/.test(l.slice(col('REVOKED')))), 'the revoked key shows when');
  assert.ok(lines.some((l) => l.slice(col('REVOKED')) === '-'), 'the active key shows -');
  assert.ok(lines.some((l) => l.slice(col('SCOPES')).startsWith('api:reports:read ')));
});

test('ledger check and doctor word the ledger the same way', async () => {
  const ledger = (await ok(cli('ledger', 'check'))).out;
  const doctor = (await ok(cli('doctor'))).out;
  const verdict = /^ok: (.+)$/m.exec(ledger)?.[1];
  assert.ok(verdict && /^\d+ books? balances?$/.test(verdict), ledger);
  assert.match(doctor, new RegExp(`^ok +ledger: ${verdict}$`, 'm'));
  const proof = /balances equal their postings, nothing overdrawn, every movement in place/;
  assert.match((await ok(runCli(['ledger', '--help']))).out, proof);
  assert.match((await ok(runCli(['doctor', '--help']))).out, proof);
});

test("doctor checks the database on either engine: SQLite's file checks, or on PostgreSQL a line saying they are skipped", async () => {
  const r = await ok(cli('doctor', '--json'));
  const checks = r.json.findings.map((f: { check: string }) => f.check);
  const schema = r.json.findings.find((f: { check: string }) => f.check === 'schema');
  assert.match(schema.detail, new RegExp(`^version ${SCHEMA_VERSION}$`), 'the schema version is read from the database');
  for (const c of ['database', 'dead jobs', 'disabled endpoints', 'failing endpoints', 'bank amounts', 'card payouts', 'ledger']) assert.ok(checks.includes(c), c);
  if (s.store.engine === 'postgres') {
    assert.ok(!checks.includes('integrity') && !checks.includes('journal'));
    assert.match((await ok(cli('doctor'))).out, /^ok +sqlite file: skipped on PostgreSQL \(permissions, integrity and journal/m);
  } else {
    assert.ok(checks.includes('integrity') && checks.includes('journal') && !checks.includes('sqlite file'));
  }
  // A PostgreSQL server that does not answer is one finding with what to check, never a stack.
  const down = await runCli(['doctor', '--db', 'postgres://kopek:hunter2@127.0.0.1:1/kopek']);
  assert.equal(down.code, 1);
  assert.match(down.out, /^ACTION  database: .*\n +→ check --db \(or KOPEK_DATABASE_URL\), that the PostgreSQL server runs/);
  assert.ok(!down.out.includes('hunter2'), 'the password is not printed');
});

test("serve --help showed no defaults: each option's default, in one aligned column", async () => {
  const help = (await ok(runCli(['serve', '--help']))).out;
  const lines = help.split('\n');
  const header = lines.find((l) => /^ {2}option +default +meaning/.test(l));
  assert.ok(header, help);
  const at = header.indexOf('default');
  for (const o of OPTIONS) {
    const line = lines.find((l) => l.startsWith(`  ${o.flag} `) || l.startsWith(`  ${o.flag},`));
    assert.ok(line, o.flag);
    const shown = o.def === null ? '-' : Array.isArray(o.def) ? (o.def.length ? o.def.join(',') : '(empty)') : String(o.def);
    assert.equal(line.slice(at, at + shown.length + 1), `${shown} `, `${o.flag} shows its default ${shown} in the column`);
    assert.ok(line.includes(`[${o.env}]`), o.flag);
  }
});

test('key create --mode live succeeded silently for a shop that cannot take live calls: it warns, naming the next step', async () => {
  const { merchant, shop } = await newShop();
  const r = await ok(cli('key', 'create', '--shop', shop, '--mode', 'live'));
  assert.match(r.out, /^key +sk_live_/m, 'the key is still made');
  assert.match(r.err, new RegExp(`warning: live mode is not activated for merchant ${merchant}: .*kopek merchant activate-live ${merchant}`));
  assert.match(r.err, new RegExp(`warning: shop ${shop} has no acquirer: .*403 acquirer_not_configured until kopek shop acquirer --shop ${shop} --provider tbank`));
  const json = await ok(cli('key', 'create', '--shop', shop, '--mode', 'live', '--json'));
  assert.equal(json.json.warnings.length, 2);
  const pass = join(s.dir, 'usability-tbank.pass');
  writeFileSync(pass, 'terminal-password\n', { mode: 0o600 });
  await ok(cli('shop', 'acquirer', '--shop', shop, '--provider', 'tbank', '--terminal-key', '1700000000USE', '--password-file', pass));
  await ok(cli('merchant', 'activate-live', merchant));
  const ready = await ok(cli('key', 'create', '--shop', shop, '--mode', 'live', '--json'));
  assert.equal(ready.json.warnings.length, 1);
  assert.match(ready.json.warnings[0], /no payout provider .*403 payouts_not_configured/);
  const test_ = await ok(cli('key', 'create', '--shop', shop, '--mode', 'test', '--json'));
  assert.equal(test_.json.warnings, undefined);
  assert.equal(test_.err, '');
});

test('admin create printed "sign in at /cabinet/login": the full address, from --base-url or the default', async () => {
  const pw = join(s.dir, 'usability.pw');
  writeFileSync(pw, 'a long enough password\n', { mode: 0o600 });
  const saved = { base: process.env.KOPEK_BASE_URL, host: process.env.KOPEK_HOST, port: process.env.KOPEK_PORT };
  delete process.env.KOPEK_BASE_URL;
  delete process.env.KOPEK_HOST;
  delete process.env.KOPEK_PORT;
  try {
    const byDefault = await ok(cli('admin', 'create', '--merchant', s.demo.merchantId, '--email', 'default@shop.example', '--password-file', pw));
    assert.match(byDefault.out, /^sign in +http:\/\/127\.0\.0\.1:8080\/cabinet\/login$/m);
    const given = await ok(cli('admin', 'create', '--merchant', s.demo.merchantId, '--email', 'given@shop.example', '--password-file', pw, '--base-url', 'https://pay.shop.example/'));
    assert.match(given.out, /^sign in +https:\/\/pay\.shop\.example\/cabinet\/login$/m);
    const bad = await cli('admin', 'create', '--merchant', s.demo.merchantId, '--email', 'bad@shop.example', '--password-file', pw, '--base-url', 'pay.shop.example');
    assert.equal(bad.code, 1);
    assert.match(bad.err, /--base-url must be an http\(s\) URL, got "pay\.shop\.example"/);
    assert.equal(await s.store.get('SELECT 1 FROM cabinet_users WHERE email = ?', 'bad@shop.example'), undefined, 'nothing was made');
  } finally {
    for (const [k, v] of [['KOPEK_BASE_URL', saved.base], ['KOPEK_HOST', saved.host], ['KOPEK_PORT', saved.port]] as const) if (v !== undefined) process.env[k] = v;
  }
});

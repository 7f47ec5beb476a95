import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnServer, type ChildServer } from '../helpers/child-server';
import { dropPgDatabase, freshPgDatabase, postgresOnly } from '../helpers/pg';
import { randomBytes } from 'node:crypto';

// `kopek demo` and the server's demo on an empty database, as an operator runs them: processes, real HTTP.
// `kopek demo` once printed a key and no cabinet user or `export` line, and a node on an empty PostgreSQL database
// (where no demo data is made) said nothing about how to get a key.

const ROOT = join(__dirname, '..', '..');

/** The environment of an operator's shell: no KOPEK_ settings from whoever runs the suite, and those given. */
function shellEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('KOPEK_') && k !== 'NODE_OPTIONS') env[k] = v;
  return { ...env, ...extra };
}

/** Run `kopek ARGS` to its end (bounded); its exit code and output. */
function kopek(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | string; out: string; err: string }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'main.ts'), ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const kill = setTimeout(() => proc.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    proc.on('exit', (code, signal) => {
      clearTimeout(kill);
      resolve({ code: code ?? signal ?? -1, out, err });
    }),
  );
}

/** What the `shell` line exports, and the cabinet line's email and password. */
interface Printed {
  B: string;
  MERCHANT: string;
  SHOP: string;
  KEY: string;
  email: string;
  password: string;
}

/** Read the demo lines a reader reads: the `export` line and the cabinet's sign-in. */
function printed(text: string): Printed {
  const shell = /^ {2}shell {5}export B=(\S+) MERCHANT=(\S+) SHOP=(\S+) KEY=(\S+)$/m.exec(text);
  const cabinet = /^ {2}cabinet {3}(\S+)\/cabinet\/login {3}email (\S+) {3}password (\S+) {3}\(shown once; keep it\)$/m.exec(text);
  assert.ok(shell && cabinet, text);
  assert.equal(cabinet[1], shell[1], 'the sign-in address is on the server the export line names');
  return { B: shell[1], MERCHANT: shell[2], SHOP: shell[3], KEY: shell[4], email: cabinet[2], password: cabinet[3] };
}

/** The demo lines with what differs per demo (ids, key, email, password, address) taken out: their form. */
function form(text: string): string[] {
  const lines = text.split('\n');
  const from = lines.findIndex((l) => l.startsWith('  merchant  '));
  const to = lines.findIndex((l) => l.startsWith('Try: '));
  assert.ok(from > 0 && to > from, text);
  return lines.slice(from, to + 1).map((l) =>
    l
      .replace(/http:\/\/127\.0\.0\.1:\d+/g, 'BASE')
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, 'ID')
      .replace(/sk_test_[A-Za-z0-9_-]+/g, 'KEY')
      .replace(/demo(-\d+)?@kopek\.test/g, 'EMAIL')
      .replace(/password \S+/g, 'password PW'),
  );
}

/** Sign in to the cabinet at `base` as a browser does (the login form's token, then the POST); the status. */
async function signIn(base: string, email: string, password: string): Promise<number> {
  const page = await fetch(`${base}/cabinet/login`);
  const token = /kopek_cabinet_login=([^;]+)/.exec(page.headers.get('set-cookie') ?? '')?.[1];
  assert.ok(token, 'the login page sets its form token');
  const res = await fetch(`${base}/cabinet/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `kopek_cabinet_login=${token}` },
    body: new URLSearchParams({ _csrf: token, email, password }).toString(),
  });
  await res.arrayBuffer();
  return res.status;
}

/** What a key reads of its balance: 200 when the key works on that server. */
async function balanceStatus(base: string, key: string): Promise<number> {
  const res = await fetch(`${base}/v1/public/balance`, { headers: { Authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return res.status;
}

/** What `npm start` prints on an empty database file, up to its demo lines; then it is stopped (its whole process group). */
async function npmStartLines(db: string): Promise<string> {
  const npm = spawn('npm', ['start', '--', '--port', '0', '--db', db], { cwd: ROOT, env: shellEnv(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  npm.stdout.on('data', (d) => (out += d));
  npm.stderr.on('data', (d) => (out += d));
  const exited = new Promise<void>((r) => npm.once('exit', () => r()));
  try {
    const end = Date.now() + 120_000;
    while (!/^Try: /m.test(out)) {
      if (Date.now() > end || npm.exitCode !== null) throw new Error(`npm start printed no demo lines: ${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return out;
  } finally {
    process.kill(-npm.pid!, 'SIGTERM');
    await exited;
  }
}

async function stop(s: ChildServer): Promise<void> {
  s.proc.kill('SIGTERM');
  assert.equal(await s.exited, 0, s.stderr());
}

test('kopek demo prints the cabinet user and the export line as npm start does on an empty database (it printed only a key)', { timeout: 240_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-demo-lines-'));
  try {
    const served = await npmStartLines(join(dir, 'served.db'));
    assert.match(served, /^Created a demo merchant and shop on the empty database\.$/m);

    // A server on a database with no merchant (--no-demo) says how to get a key; the demo made beside it works there.
    const db = join(dir, 'k.db');
    const s = await spawnServer(['--db', db, '--no-demo'], shellEnv());
    try {
      const hint = `  kopek demo --db ${db} --base-url ${s.url}`;
      assert.ok(s.stderr().split('\n').includes(hint), s.stderr());
      assert.match(s.stderr(), /^The database has no merchant yet, so no API key works\./m);
      const made = await kopek(['demo', '--db', db, '--base-url', s.url], shellEnv());
      assert.equal(made.code, 0, made.err);
      assert.deepEqual(form(made.out), form(served), 'one set of lines, from one piece of code');
      const p = printed(made.out);
      assert.equal(p.B, s.url);
      assert.equal(p.email, 'demo@kopek.test');
      assert.equal(await balanceStatus(p.B, p.KEY), 200);
      assert.equal(await signIn(p.B, p.email, p.password), 303, 'the printed sign-in works');
      // A second demo on the same database is another merchant with a cabinet user of its own.
      const again = await kopek(['demo', '--db', db, '--base-url', s.url, '--json'], shellEnv());
      assert.equal(again.code, 0, again.err);
      const j = JSON.parse(again.out);
      assert.deepEqual(Object.keys(j).sort(), ['base_url', 'email', 'key', 'key_id', 'merchant_id', 'password', 'shop_id']);
      assert.equal(j.email, 'demo-2@kopek.test');
      assert.notEqual(j.merchant_id, p.MERCHANT);
      assert.equal(await signIn(s.url, j.email, j.password), 303);
      assert.equal(await signIn(s.url, j.email, p.password), 401, 'not with the first demo user\'s password');
    } finally {
      await stop(s);
    }
    const refused = await kopek(['demo', '--db', db, '--base-url', 'ftp://x'], shellEnv());
    assert.deepEqual([refused.code, refused.err, refused.out], [1, 'kopek demo: cannot create the demo data: --base-url must be an http(s) URL, got "ftp://x"\n', '']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a node on an empty PostgreSQL database says how to make the first key, and kopek demo makes one that works there', { skip: postgresOnly(), timeout: 180_000 }, async () => {
  const url = await freshPgDatabase();
  const env = shellEnv({ KOPEK_DATABASE_URL: url, KOPEK_MASTER_KEY: randomBytes(32).toString('base64') });
  try {
    const node = await spawnServer([], env);
    try {
      const lines = node.stderr().split('\n');
      assert.ok(lines.includes(`  kopek demo --base-url ${node.url} (on this database: KOPEK_DATABASE_URL, or --db URL, as for this node)`), node.stderr());
      assert.ok(lines.some((l) => l.startsWith('  kopek merchant create --name NAME, kopek shop create --merchant ID --name NAME, kopek key create --shop ID --mode test')), node.stderr());
      assert.doesNotMatch(lines.slice(1).join('\n'), /postgres:\/\//, 'the hint names no database URL (it may hold a password)');
      const made = await kopek(['demo', '--base-url', node.url], env);
      assert.equal(made.code, 0, made.err);
      const p = printed(made.out);
      assert.equal(p.B, node.url);
      assert.equal(await balanceStatus(p.B, p.KEY), 200);
      assert.equal(await signIn(p.B, p.email, p.password), 303);
    } finally {
      await stop(node);
    }
    // Once it has a merchant, a node says nothing of the kind; a flag that acts on demo data says it was not used.
    const later = await spawnServer(['--webhook-url', 'http://127.0.0.1:9/h'], env);
    try {
      assert.doesNotMatch(later.stderr(), /no merchant yet/);
      assert.match(later.stderr(), /^kopek: --webhook-url was not used: no demo data is made in a PostgreSQL database$/m);
    } finally {
      await stop(later);
    }
  } finally {
    await dropPgDatabase(url);
  }
});

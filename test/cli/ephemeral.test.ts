import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadMasterKey } from '../../src/platform/secrets/at-rest';
import { loadConfig } from '../../src/platform/config';

// `kopek serve --ephemeral --ready-json --demo-key` as a harness in another language runs it: a child process
// in an empty folder, its one JSON line read from stdout, the API reached over real HTTP.

const ROOT = join(__dirname, '..', '..');
const MAIN = join(ROOT, 'src', 'main.ts');
/** tsx by its file, so that the child can run from a folder without node_modules. */
const TSX = pathToFileURL(require.resolve('tsx')).href;
const KEY = 'sk_test_ci_0123456789abcdef_XYZ';
const WHS = 'whs_ci_fixed_secret_0123456789';

/** What a harness learns from the ready line. */
interface Ready {
  base_url: string;
  merchant_id: string | null;
  shop_id: string | null;
  test_key: string | null;
  webhook_secret: string | null;
  webhook_endpoint_id: string | null;
}

/** A served child: its ready line, everything it wrote, and how it ended. */
interface Served {
  proc: ChildProcess;
  ready: Ready;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | string>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | string>;
}

/** A folder that is both the working directory and HOME of a child, with no KOPEK_ variables but the ones given. */
function sandbox(): { dir: string; env: NodeJS.ProcessEnv } {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-eph-'));
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: dir, TMPDIR: process.env.TMPDIR ?? tmpdir() };
  return { dir, env };
}

/** Run `kopek serve …` in `dir`; resolves with its exit code and output once it ends (bounded). */
function run(args: string[], dir: string, env: NodeJS.ProcessEnv): { proc: ChildProcess; out: () => string; err: () => string; exited: Promise<number | string> } {
  const proc = spawn(process.execPath, ['--import', TSX, MAIN, 'serve', ...args], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const kill = setTimeout(() => proc.kill('SIGKILL'), 30_000);
  const exited = new Promise<number | string>((resolve) =>
    proc.on('exit', (code, signal) => {
      clearTimeout(kill);
      resolve(code ?? signal ?? -1);
    }),
  );
  return { proc, out: () => out, err: () => err, exited };
}

/** Start a server and wait for its ready line on stdout. */
async function serve(args: string[], dir: string, env: NodeJS.ProcessEnv): Promise<Served> {
  const r = run(['--port', '0', '--ready-json', ...args], dir, env);
  const line = await new Promise<string>((resolve, reject) => {
    const look = (): void => {
      const nl = r.out().indexOf('\n');
      if (nl >= 0) resolve(r.out().slice(0, nl));
    };
    r.proc.stdout!.on('data', look);
    void r.exited.then((code) => reject(new Error(`serve exited (${code}) before its ready line: ${r.err()}`)));
  });
  return {
    proc: r.proc,
    ready: JSON.parse(line) as Ready,
    stdout: r.out,
    stderr: r.err,
    exited: r.exited,
    stop: () => {
      r.proc.kill('SIGTERM');
      return r.exited;
    },
  };
}

/** A JSON request with a key; the status and parsed body. */
async function call(base: string, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

/** Every file and folder under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true }).map(String).sort();
}

/** The targets of the process's open file descriptors. */
function openFiles(pid: number): string[] {
  const fds = readdirSync(`/proc/${pid}/fd`);
  const out: string[] = [];
  for (const fd of fds) {
    try {
      out.push(readlinkSync(`/proc/${pid}/fd/${fd}`));
    } catch {
      // Closed between the listing and the look.
    }
  }
  return out;
}

test('--ephemeral --ready-json prints one JSON line naming the bound port and a demo key that works against the API', async () => {
  const { dir, env } = sandbox();
  try {
    const s = await serve(['--ephemeral', '--demo-key', KEY, '--sim-delay', '0'], dir, env);
    assert.deepEqual(Object.keys(s.ready), ['base_url', 'merchant_id', 'shop_id', 'test_key', 'webhook_secret', 'webhook_endpoint_id']);
    assert.match(s.ready.webhook_secret ?? '', /^whs_[A-Za-z0-9_-]{43}$/);
    assert.equal(s.ready.webhook_endpoint_id, null, 'no endpoint without --webhook-url');
    assert.match(s.ready.base_url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(new URL(s.ready.base_url).port, '0');
    assert.equal(s.ready.test_key, KEY);
    const created = await call(s.ready.base_url, KEY, 'POST', '/v1/public/payments', { amount: 15000, order_id: 'ci-1' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.payment.shop_id, s.ready.shop_id);
    assert.equal(created.body.payment.merchant_id, s.ready.merchant_id);
    assert.equal(created.body.mode, 'test');
    const read = await call(s.ready.base_url, KEY, 'GET', `/v1/public/payments/${created.body.payment.id}`);
    assert.equal(read.status, 200);
    assert.equal((await call(s.ready.base_url, 'sk_test_someone_elses_key_0000', 'GET', '/v1/public/balance')).status, 401);
    assert.equal(await s.stop(), 0, s.stderr());
    // The requests were logged, on stderr: stdout holds the ready line alone.
    assert.equal(s.stdout(), JSON.stringify(s.ready) + '\n');
    assert.match(s.stderr(), /"msg":"request"/);
    assert.match(s.stderr(), /database in memory/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('--ephemeral writes nothing to disk: no file in its folder or HOME, no database file open, KOPEK_DB not used', async () => {
  const { dir, env } = sandbox();
  try {
    const s = await serve(['--ephemeral'], dir, { ...env, KOPEK_DB: join(dir, 'data', 'kopek.db') });
    assert.match(s.ready.test_key ?? '', /^sk_test_[A-Za-z0-9_-]{43}$/);
    // Writes of every kind: a payment, its bank session and its answer (a scheduler job), and the secrets sealed for the demo shop.
    const key = s.ready.test_key!;
    const p = await call(s.ready.base_url, key, 'POST', '/v1/public/payments', { amount: 20000 });
    assert.equal(p.status, 201);
    const open = await call(s.ready.base_url, key, 'POST', `/v1/test/payments/${p.body.payment.id}/simulate`, { action: 'open_session', method: 'sbp' });
    assert.equal(open.status, 200, JSON.stringify(open.body));
    assert.equal((await call(s.ready.base_url, key, 'POST', '/v1/test/clock/advance', { seconds: 5 })).status, 200);
    assert.equal((await call(s.ready.base_url, key, 'GET', `/v1/public/payments/${p.body.payment.id}`)).body.status, 'succeeded');
    const files = openFiles(s.proc.pid!);
    const stored = files.filter((f) => f.startsWith('/') && !f.startsWith('/dev/') && !f.startsWith('/proc/') && !/\.(node|so(\.\d+)*)$/.test(f));
    assert.deepEqual(stored.filter((f) => /\.db|-wal|-shm|\.key|\.lock|kopek/.test(f) || f.startsWith(dir)), [], files.join('\n'));
    assert.deepEqual(filesUnder(dir), []);
    assert.equal(await s.stop(), 0, s.stderr());
    assert.deepEqual(filesUnder(dir), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('two --ephemeral servers on port 0 at once get different ports and separate databases', async () => {
  const { dir, env } = sandbox();
  try {
    const [a, b] = await Promise.all([serve(['--ephemeral'], dir, env), serve(['--ephemeral'], dir, env)]);
    try {
      assert.notEqual(new URL(a.ready.base_url).port, new URL(b.ready.base_url).port);
      assert.notEqual(a.ready.shop_id, b.ready.shop_id);
      assert.equal((await call(a.ready.base_url, a.ready.test_key!, 'GET', '/v1/public/balance')).status, 200);
      // Each server knows only its own key.
      assert.equal((await call(a.ready.base_url, b.ready.test_key!, 'GET', '/v1/public/balance')).status, 401);
    } finally {
      assert.equal(await a.stop(), 0, a.stderr());
      assert.equal(await b.stop(), 0, b.stderr());
    }
    assert.deepEqual(filesUnder(dir), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('--ephemeral data is gone after a restart: the same --demo-key finds a new, empty shop', async () => {
  const { dir, env } = sandbox();
  try {
    const first = await serve(['--ephemeral', '--demo-key', KEY], dir, env);
    const p = await call(first.ready.base_url, KEY, 'POST', '/v1/public/payments', { amount: 30000 });
    assert.equal(p.status, 201);
    assert.equal(await first.stop(), 0, first.stderr());
    const second = await serve(['--ephemeral', '--demo-key', KEY], dir, env);
    try {
      assert.equal(second.ready.test_key, KEY);
      assert.notEqual(second.ready.shop_id, first.ready.shop_id);
      assert.equal((await call(second.ready.base_url, KEY, 'GET', `/v1/public/payments/${p.body.payment.id}`)).status, 404);
      assert.deepEqual((await call(second.ready.base_url, KEY, 'GET', '/v1/public/payments')).body.items, []);
    } finally {
      assert.equal(await second.stop(), 0, second.stderr());
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

for (const [name, args, message] of [
  ['a malformed --demo-key', ['--ephemeral', '--demo-key', 'sk_test_short'], 'kopek serve: --demo-key must be a test key, sk_test_ and 16 to 128 of A-Z a-z 0-9 _ -, got "sk_test_short"'],
  ['a live key as --demo-key (not echoed)', ['--ephemeral', '--demo-key', 'sk_live_0123456789abcdef0123'], 'kopek serve: --demo-key must be a test key, sk_test_ and 16 to 128 of A-Z a-z 0-9 _ -, got a live key'],
  ['--demo-key with --no-demo', ['--ephemeral', '--no-demo', '--demo-key', KEY], 'kopek serve: --demo-key names the key of the demo data; it cannot be used with --no-demo'],
  ['--ephemeral with --db', ['--ephemeral', '--db', 'k.db'], 'kopek serve: --ephemeral keeps the database in memory; it cannot be used with --db "k.db"'],
  ['a --webhook-secret not of the form kopek makes', ['--ephemeral', '--webhook-url', 'http://127.0.0.1:9/h', '--webhook-secret', 'whs_short'], 'kopek serve: --webhook-secret must be whs_ and 16 to 200 of A-Z a-z 0-9 _ -, got "whs_shor…"'],
  ['a --webhook-secret without whs_ (not echoed whole)', ['--ephemeral', '--webhook-url', 'http://127.0.0.1:9/h', '--webhook-secret', 'sk_test_0123456789abcdefghij'], 'kopek serve: --webhook-secret must be whs_ and 16 to 200 of A-Z a-z 0-9 _ -, got "sk_test_…"'],
  ['--webhook-secret without --webhook-url', ['--ephemeral', '--webhook-secret', WHS], 'kopek serve: --webhook-secret is the secret of the --webhook-url endpoint; it cannot be used without --webhook-url'],
  ['--webhook-url with --no-demo', ['--ephemeral', '--no-demo', '--webhook-url', 'http://127.0.0.1:9/h'], 'kopek serve: --webhook-url adds an endpoint to the demo shop; it cannot be used with --no-demo'],
  ['a --webhook-url that is not http(s)', ['--ephemeral', '--webhook-url', 'ftp://127.0.0.1/h'], 'kopek serve: cannot use --webhook-url "ftp://127.0.0.1/h": scheme must be https (or http for test mode)'],
  ['a --webhook-url with credentials', ['--ephemeral', '--webhook-url', 'http://u:p@127.0.0.1/h'], 'kopek serve: cannot use --webhook-url "http://u:p@127.0.0.1/h": credentials in the URL are not allowed'],
  ['a --webhook-url to a private address', ['--ephemeral', '--webhook-url', 'http://10.1.2.3/h'], 'kopek serve: cannot use --webhook-url "http://10.1.2.3/h": webhooks never reach the private address 10.1.2.3 (an operator opens a range with --webhook-allow)'],
  ['a refused --webhook-url on an empty database file (no file is made)', ['--db', 'k.db', '--webhook-url', 'not a url'], 'kopek serve: cannot use --webhook-url "not a url": not an absolute URL'],
] as const) {
  test(`${name} is refused with one line and a non-zero exit, before anything is written`, async () => {
    const { dir, env } = sandbox();
    try {
      const r = run(['--port', '0', '--ready-json', ...args], dir, env);
      assert.equal(await r.exited, 1);
      assert.equal(r.err(), message + '\n');
      assert.equal(r.out(), '');
      assert.deepEqual(filesUnder(dir), []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('--ready-json on a database file names the demo key on the start that made it, and nulls on a later one', async () => {
  const { dir, env } = sandbox();
  try {
    const first = await serve(['--db', 'k.db', '--demo-key', KEY], dir, env);
    assert.equal(first.ready.test_key, KEY);
    assert.equal((await call(first.ready.base_url, KEY, 'GET', '/v1/public/balance')).status, 200);
    assert.equal(await first.stop(), 0, first.stderr());
    const second = await serve(['--db', 'k.db', '--demo-key', KEY], dir, env);
    try {
      assert.deepEqual(second.ready, { base_url: second.ready.base_url, merchant_id: null, shop_id: null, test_key: null, webhook_secret: null, webhook_endpoint_id: null });
      assert.match(second.stderr(), /--demo-key was not used: the database is not empty/);
      // The key made by the first start still works: it is stored (hashed) in the file.
      assert.equal((await call(second.ready.base_url, KEY, 'GET', '/v1/public/balance')).status, 200);
    } finally {
      assert.equal(await second.stop(), 0, second.stderr());
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the master key of a database in memory is KOPEK_MASTER_KEY when set, else one random key kept by the process', () => {
  const set = Buffer.alloc(32, 7);
  assert.deepEqual(loadMasterKey(':memory:', { env: { KOPEK_MASTER_KEY: set.toString('base64') } }), set);
  const own = loadMasterKey(':memory:', { env: {} });
  assert.equal(own.length, 32);
  assert.notDeepEqual(own, set);
  assert.deepEqual(loadMasterKey(':memory:', { env: {} }), own);
});

test('--ephemeral overrides KOPEK_DB, and KOPEK_EPHEMERAL / KOPEK_DEMO_KEY are read and checked like the flags', () => {
  assert.equal(loadConfig(['--ephemeral'], { KOPEK_DB: 'elsewhere.db' }).db, ':memory:');
  const fromEnv = loadConfig([], { KOPEK_EPHEMERAL: 'yes', KOPEK_DEMO_KEY: KEY, KOPEK_READY_JSON: '1' });
  assert.deepEqual([fromEnv.db, fromEnv.demoKey, fromEnv.readyJson], [':memory:', KEY, true]);
  assert.throws(() => loadConfig([], { KOPEK_DEMO_KEY: 'sk_test_has spaces in it!!' }), /^Error: --demo-key must be a test key/);
  assert.equal(loadConfig([], {}).db, './data/kopek.db');
});

/** One webhook request as a receiver got it. */
interface Hook {
  path: string;
  signature: string;
  body: string;
}

/** A receiver on a port the system picks that answers 200 and keeps every request. */
async function receiver(): Promise<{ url: string; hooks: Hook[]; close(): void }> {
  const hooks: Hook[] = [];
  const srv = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hooks.push({ path: req.url ?? '', signature: String(req.headers['x-psp-signature'] ?? ''), body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, hooks, close: () => srv.close() };
}

/** The documented v2 check (docs/webhooks.md), written out here: some v2 is the hex HMAC-SHA256 of `<t>.<raw body>`. */
function v2Verifies(header: string, body: string, secret: string): boolean {
  const t = /(?:^|,)t=(\d+)(?:,|$)/.exec(header)?.[1];
  if (t === undefined) return false;
  const want = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
  return [...header.matchAll(/(?:^|,)v2=([0-9a-f]{64})/g)].some((m) => m[1] === want);
}

/** The first kept request that `ok` accepts, waited for (bounded: deliveries go out just after the commit). */
async function hookWhere(hooks: Hook[], ok: (h: Hook) => boolean): Promise<Hook> {
  const end = Date.now() + 10_000;
  for (;;) {
    const h = hooks.find(ok);
    if (h) return h;
    if (Date.now() > end) throw new Error(`no such webhook; got ${JSON.stringify(hooks)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Pay a payment through the test helpers: the buyer opens an SBP session and the test bank confirms it. */
async function payOne(base: string, key: string, extra: Record<string, unknown> = {}): Promise<string> {
  const p = await call(base, key, 'POST', '/v1/public/payments', { amount: 15000, ...extra });
  assert.equal(p.status, 201, JSON.stringify(p.body));
  const id = p.body.payment.id as string;
  assert.equal((await call(base, key, 'POST', `/v1/test/payments/${id}/simulate`, { action: 'open_session', method: 'sbp' })).status, 200);
  assert.equal((await call(base, key, 'POST', `/v1/test/payments/${id}/simulate`, { action: 'succeed' })).status, 200);
  return id;
}

test('--ephemeral --webhook-url: the demo shop sends its webhooks there, v2-signed with the ready line\'s webhook_secret (a test had no secret to verify with)', async () => {
  const { dir, env } = sandbox();
  const r = await receiver();
  try {
    const s = await serve(['--ephemeral', '--webhook-url', `${r.url}/endpoint`], dir, env);
    try {
      assert.match(s.ready.webhook_secret ?? '', /^whs_[A-Za-z0-9_-]{43}$/);
      assert.match(s.ready.webhook_endpoint_id ?? '', /^[0-9a-f-]{36}$/);
      const id = await payOne(s.ready.base_url, s.ready.test_key!);
      const hook = await hookWhere(r.hooks, (h) => h.path === '/endpoint' && JSON.parse(h.body).data.id === id);
      assert.equal(JSON.parse(hook.body).event, 'payment.succeeded');
      assert.ok(v2Verifies(hook.signature, hook.body, s.ready.webhook_secret!), hook.signature);
      assert.ok(!v2Verifies(hook.signature, hook.body, WHS), 'a check with another secret fails');
      // A payment's own webhook_url is signed with the shop's oldest endpoint's secret: the same one.
      const own = await payOne(s.ready.base_url, s.ready.test_key!, { webhook_url: `${r.url}/own` });
      const ownHook = await hookWhere(r.hooks, (h) => h.path === '/own' && JSON.parse(h.body).data.id === own);
      assert.ok(v2Verifies(ownHook.signature, ownHook.body, s.ready.webhook_secret!), ownHook.signature);
      const log = await call(s.ready.base_url, s.ready.test_key!, 'GET', `/v1/test/webhooks/deliveries?payment_id=${id}`);
      assert.deepEqual(log.body.items.map((a: any) => [a.event, a.url, a.response_code]), [['payment.succeeded', `${r.url}/endpoint`, 200]]);
      assert.match(s.stderr(), new RegExp(`^ {2}webhook {3}${r.url}/endpoint {3}secret ${s.ready.webhook_secret}`, 'm'), 'the banner shows the endpoint');
    } finally {
      assert.equal(await s.stop(), 0, s.stderr());
    }
    assert.deepEqual(filesUnder(dir), []);
  } finally {
    r.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('--webhook-secret fixes the endpoint\'s secret: the receiver, configured with it beforehand, verifies the deliveries', async () => {
  const { dir, env } = sandbox();
  const r = await receiver();
  try {
    const s = await serve(['--ephemeral', '--webhook-url', `${r.url}/fixed`, '--webhook-secret', WHS], dir, env);
    try {
      assert.equal(s.ready.webhook_secret, WHS);
      const id = await payOne(s.ready.base_url, s.ready.test_key!);
      const hook = await hookWhere(r.hooks, (h) => JSON.parse(h.body).data.id === id);
      assert.ok(v2Verifies(hook.signature, hook.body, WHS), hook.signature);
    } finally {
      assert.equal(await s.stop(), 0, s.stderr());
    }
  } finally {
    r.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('without --webhook-url, webhook_secret is the shop\'s own secret, which signs the deliveries to a payment\'s webhook_url', async () => {
  const { dir, env } = sandbox();
  const r = await receiver();
  try {
    const s = await serve(['--ephemeral'], dir, env);
    try {
      const id = await payOne(s.ready.base_url, s.ready.test_key!, { webhook_url: `${r.url}/own` });
      const hook = await hookWhere(r.hooks, (h) => JSON.parse(h.body).data.id === id);
      assert.ok(v2Verifies(hook.signature, hook.body, s.ready.webhook_secret!), hook.signature);
    } finally {
      assert.equal(await s.stop(), 0, s.stderr());
    }
  } finally {
    r.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('--webhook-url on a database file acts on the start that makes the demo data; a later start says it was not used', async () => {
  const { dir, env } = sandbox();
  const r = await receiver();
  try {
    const first = await serve(['--db', 'k.db', '--webhook-url', `${r.url}/file`, '--webhook-secret', WHS], dir, env);
    let id: string;
    try {
      assert.equal(first.ready.webhook_secret, WHS);
      assert.match(first.ready.webhook_endpoint_id ?? '', /^[0-9a-f-]{36}$/);
      id = await payOne(first.ready.base_url, first.ready.test_key!);
      const hook = await hookWhere(r.hooks, (h) => JSON.parse(h.body).data.id === id);
      assert.ok(v2Verifies(hook.signature, hook.body, WHS));
    } finally {
      assert.equal(await first.stop(), 0, first.stderr());
    }
    const second = await serve(['--db', 'k.db', '--webhook-url', `${r.url}/other`], dir, env);
    try {
      assert.equal(second.ready.webhook_secret, null);
      assert.equal(second.ready.webhook_endpoint_id, null);
      assert.match(second.stderr(), /^kopek: --webhook-url was not used: the database is not empty, so no demo data was made$/m);
      // The endpoint made on the first start is still the shop's, with its secret: it was stored (sealed) in the file.
      const again = await payOne(second.ready.base_url, first.ready.test_key!);
      const hook = await hookWhere(r.hooks, (h) => JSON.parse(h.body).data.id === again);
      assert.equal(hook.path, '/file');
      assert.ok(v2Verifies(hook.signature, hook.body, WHS));
    } finally {
      assert.equal(await second.stop(), 0, second.stderr());
    }
  } finally {
    r.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('KOPEK_WEBHOOK_URL and KOPEK_WEBHOOK_SECRET are read and checked like the flags', () => {
  const c = loadConfig([], { KOPEK_EPHEMERAL: '1', KOPEK_WEBHOOK_URL: 'http://127.0.0.1:9/h', KOPEK_WEBHOOK_SECRET: WHS });
  assert.deepEqual([c.webhookUrl, c.webhookSecret], ['http://127.0.0.1:9/h', WHS]);
  assert.throws(() => loadConfig([], { KOPEK_WEBHOOK_SECRET: WHS }), /^Error: --webhook-secret is the secret of the --webhook-url endpoint/);
  assert.throws(() => loadConfig(['--webhook-url', 'http://127.0.0.1:9/h'], { KOPEK_WEBHOOK_SECRET: 'whs_!' }), /^Error: --webhook-secret must be whs_/);
  assert.deepEqual([loadConfig([], {}).webhookUrl, loadConfig([], {}).webhookSecret], [null, null]);
});

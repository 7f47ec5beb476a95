import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadMasterKey } from '../../src/secrets/master-key';
import { loadConfig } from '../../src/base/config';

// `kopek serve --ephemeral --ready-json --demo-key` as a harness in another language runs it: a child process
// in an empty folder, its one JSON line read from stdout, the API reached over real HTTP.

const ROOT = join(__dirname, '..', '..');
const MAIN = join(ROOT, 'src', 'main.ts');
/** tsx by its file, so that the child can run from a folder without node_modules. */
const TSX = pathToFileURL(require.resolve('tsx')).href;
const KEY = 'sk_test_ci_0123456789abcdef_XYZ';

/** What a harness learns from the ready line. */
interface Ready {
  base_url: string;
  merchant_id: string | null;
  shop_id: string | null;
  test_key: string | null;
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
    assert.deepEqual(Object.keys(s.ready), ['base_url', 'merchant_id', 'shop_id', 'test_key']);
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
      assert.deepEqual(second.ready, { base_url: second.ready.base_url, merchant_id: null, shop_id: null, test_key: null });
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

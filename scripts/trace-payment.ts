// How much of kopek one payment runs: a test-mode server from the sources, warmed by two walks of one payment
// (create, the buyer's choice on the hosted page, the simulated bank's answer, the webhook delivered and its
// attempt recorded), then one walk counted by V8's precise coverage with call counts. It prints every call of a
// function defined under the source folder (closures included; module bodies and the getters and helpers the TypeScript loader adds to each module excluded), the distinct functions
// and the source files that ran:
//
//   npm run trace:payment [-- --src DIR] [--top N] [--json]
//
// --src names another checkout's src/ folder (say, an older commit's, from `git worktree add`): the walk uses
// only the public API, the hosted page's form and the `webhook add` admin command, so it runs against any build
// that has them. --top N lists the N most called functions. The server is a child process on a temp SQLite file
// with --sim-delay 0, so the bank answers as soon as the scheduler runs its job.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

interface Fn {
  name: string;
  offset: number;
  count: number;
}
interface Script {
  file: string;
  fns: Fn[];
}

const WALKS_TO_WARM = 2;
const WALK_TIMEOUT_MS = 20_000;
/** After the webhook's answer, time for its attempt to be recorded (a group commit) before the count is taken. */
const SETTLE_MS = 300;

function option(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const ROOT = resolve(__dirname, '..');
const SRC = resolve(option('--src') ?? join(ROOT, 'src'));
const TOP = Number(option('--top') ?? 0);
const AS_JSON = process.argv.includes('--json');
const TSX = join(ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs');
const AGENT = join(ROOT, 'scripts', 'lib', 'trace-agent.mjs');

/** The webhook receiver: answers 200 and tells the walk which payments' events it has seen. */
function receiver(): Promise<{ server: Server; url: string; seen: (paymentId: string) => Promise<void> }> {
  const waiting = new Map<string, () => void>();
  const got = new Set<string>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(200).end('ok');
      let id: string | undefined;
      try {
        id = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data?: { id?: string } }).data?.id;
      } catch {
        return;
      }
      if (!id) return;
      got.add(id);
      waiting.get(id)?.();
    });
  });
  return new Promise((ok) =>
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      const seen = (id: string) =>
        new Promise<void>((done) => {
          if (got.has(id)) return done();
          waiting.set(id, done);
        });
      ok({ server, url: `http://127.0.0.1:${port}/hooks`, seen });
    }),
  );
}

interface Ready {
  base_url: string;
  shop_id: string;
  test_key: string;
}

function startServer(db: string): Promise<{ child: ChildProcess; ready: Ready }> {
  const args = ['--import', TSX, '--import', AGENT, join(SRC, 'main.ts'), 'serve', '--db', db, '--port', '0', '--ready-json', '--sim-delay', '0', '--webhook-allow', '127.0.0.1/32', '--log-level', 'warn'];
  const env: NodeJS.ProcessEnv = { ...process.env, KOPEK_TRACE_SRC: SRC };
  for (const k of Object.keys(env)) if (k.startsWith('KOPEK_') && k !== 'KOPEK_TRACE_SRC') delete env[k];
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  return new Promise((ok, fail) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) ok({ child, ready: JSON.parse(line) as Ready });
    });
    child.once('exit', (code) => fail(new Error(`the server exited (${code}) before its ready line:\n${out}`)));
  });
}

function addEndpoint(db: string, shop: string, url: string): void {
  const args = ['--import', TSX, join(SRC, 'main.ts'), 'webhook', 'add', '--db', db, '--shop', shop, '--url', url, '--events', 'payment.succeeded', '--webhook-allow', '127.0.0.1/32'];
  const r = spawnSync(process.execPath, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`webhook add failed: ${r.stderr || r.stdout}`);
}

async function walk(ready: Ready, seen: (id: string) => Promise<void>, n: number): Promise<void> {
  const created = await fetch(`${ready.base_url}/v1/public/payments`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ready.test_key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ amount: 150000, order_id: `trace-${n}`, description: 'Tea, 3 packs', return_url: 'https://shop.example/done' }),
  });
  if (created.status !== 201) throw new Error(`create answered ${created.status}: ${await created.text()}`);
  const id = ((await created.json()) as { payment: { id: string } }).payment.id;
  const chose = await fetch(`${ready.base_url}/pay/${id}/method`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'method=sbp',
    redirect: 'manual',
  });
  if (chose.status !== 303) throw new Error(`the buyer's choice answered ${chose.status}: ${await chose.text()}`);
  await chose.arrayBuffer();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, fail) => (timer = setTimeout(() => fail(new Error(`no webhook for ${id} within ${WALK_TIMEOUT_MS} ms`)), WALK_TIMEOUT_MS)));
  try {
    await Promise.race([seen(id), late]);
  } catch (err) {
    const now = await fetch(`${ready.base_url}/v1/public/payments/${id}`, { headers: { authorization: `Bearer ${ready.test_key}` } });
    throw new Error(`${(err as Error).message}; the payment: ${(await now.text()).slice(0, 400)}`);
  } finally {
    clearTimeout(timer);
  }
  await new Promise((r) => setTimeout(r, SETTLE_MS));
}

function take(child: ChildProcess): Promise<Script[]> {
  return new Promise((ok) => {
    child.once('message', (m: { scripts: Script[] }) => ok(m.scripts));
    child.send('take');
  });
}

function report(scripts: Script[]): void {
  const fns = scripts.flatMap((s) => s.fns.map((f) => ({ ...f, file: s.file })));
  const calls = fns.reduce((n, f) => n + f.count, 0);
  if (AS_JSON) {
    console.log(JSON.stringify({ src: SRC, calls, functions: fns.length, files: scripts.length, by_file: scripts.map((s) => ({ file: s.file, calls: s.fns.reduce((n, f) => n + f.count, 0), functions: s.fns.length })) }));
    return;
  }
  console.log(`trace:payment of ${SRC}`);
  if (TOP > 0) {
    for (const f of fns.sort((a, b) => b.count - a.count).slice(0, TOP)) console.log(`  ${String(f.count).padStart(5)}  ${f.file} ${f.name || '(anonymous)'}@${f.offset}`);
  }
  console.log(`${calls} calls, ${fns.length} functions, ${scripts.length} files`);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-trace-'));
  const db = join(dir, 'kopek.db');
  const hooks = await receiver();
  let child: ChildProcess | undefined;
  try {
    const started = await startServer(db);
    child = started.child;
    addEndpoint(db, started.ready.shop_id, hooks.url);
    for (let i = 1; i <= WALKS_TO_WARM; i++) await walk(started.ready, hooks.seen, i);
    await take(child);
    await walk(started.ready, hooks.seen, WALKS_TO_WARM + 1);
    report(await take(child));
  } finally {
    child?.kill('SIGTERM');
    hooks.server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(`trace:payment: ${err instanceof Error ? err.message : err}`);
  process.exit(1);
});

// Property-based hostile input against a running kopek: requests generated from its own OpenAPI document
// (every operation's body and query), raw byte garbage, and the fixed hostile cases (huge and deep JSON,
// numbers beyond 2^53, invalid UTF-8, header floods, slow clients), then hostile neighbours (hundreds of
// idle sockets, keyless connections announcing 1 MiB bodies, one shop's hanging webhook receivers). Never a
// 5xx, never a crash, memory bounded, each answer in the documented shape. Prints counts and a PASS/FAIL line.
//
// Usage: node --import tsx scripts/fuzz.ts [--runs N] [--seed N] [--exe PATH]
//   --runs N   generated API requests (default 5000; raw garbage gets N/10)
//   --seed N   fast-check seed (default: random, printed so a failure can be replayed)
//   --exe PATH the kopek executable (default dist/kopek, else the sources through tsx)
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { operationsOf, requestArb, send, judge, describe, type FuzzRequest } from './lib/fuzz-model';
import { hostileCases, judgeGarbage, rawExchange } from './lib/hostile-raw';
import { loadCases, rssMb } from './lib/hostile-load';
import { kopekCommand, runKopek, startKopek, scriptArgs, intOption } from './lib/kopek-process';

const HEADERS_TIMEOUT_MS = 1000;
const BODY_LIMIT = 1_048_576;
// Generous for a Node process holding a SQLite cache; a leak over thousands of requests passes it quickly.
const RSS_LIMIT_MB = 400;

async function main(): Promise<number> {
  const opts = scriptArgs(process.argv.slice(2), { runs: 'value', seed: 'value', exe: 'value' });
  const runs = intOption(opts, 'runs', 5000);
  const seed = opts.has('seed') ? intOption(opts, 'seed', 0) : Math.floor(Math.random() * 2 ** 31);
  const k = kopekCommand(opts.get('exe') as string | undefined, true);
  const dir = mkdtempSync(join(tmpdir(), 'kopek-fuzz-'));
  const db = join(dir, 'fuzz.db');
  const server = await startKopek(k, ['--db', db, '--sim-delay', '0', '--log-level', 'warn', '--headers-timeout-ms', String(HEADERS_TIMEOUT_MS), '--request-timeout-ms', '5000']);
  const failures: string[] = [];
  const byStatus = new Map<number, number>();
  const byOp = new Map<string, number>();
  let crashed: string | null = null;
  void server.exited.then((code) => (crashed = String(code)));
  const started = performance.now();
  try {
    const key = server.demoKey!;
    const rss0 = rssMb(server.proc.pid!);
    const doc = JSON.parse((await send(server.url, { method: 'GET', path: '/v1/openapi.json', headers: {} })).text);
    const ops = operationsOf(doc);
    const created = await send(server.url, { method: 'POST', path: '/v1/public/payments', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{"amount":10000}' });
    const ids = [JSON.parse(created.text).payment.id as string];
    console.log(`fuzz: ${k.label}, ${ops.length} operations, ${runs} requests, seed ${seed}`);

    const result = await fc.check(
      fc.asyncProperty(requestArb(ops, ids, key), async (r: FuzzRequest) => {
        const res = await send(server.url, r);
        byStatus.set(res.status, (byStatus.get(res.status) ?? 0) + 1);
        const op = `${r.method} ${r.template}`;
        byOp.set(op, (byOp.get(op) ?? 0) + 1);
        const verdict = judge(r, res);
        if (verdict) throw new Error(`${verdict}\n    request: ${describe(r)}`);
      }),
      { seed, numRuns: runs, endOnFailure: true },
    );
    if (result.failed) failures.push(`generated request: ${String((result.errorInstance as Error)?.message ?? result.errorInstance)}`);

    const garbageRuns = Math.max(20, Math.floor(runs / 10));
    const garbage = await fc.check(
      fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 4096 }), async (bytes) => {
        const v = judgeGarbage(await rawExchange(server.url, [Buffer.from(bytes)], { wait_ms: HEADERS_TIMEOUT_MS * 3 + 2000 }));
        if (v) throw new Error(`${v}\n    bytes: ${Buffer.from(bytes).toString('hex').slice(0, 200)}`);
      }),
      { seed, numRuns: garbageRuns, endOnFailure: true },
    );
    if (garbage.failed) failures.push(`raw garbage: ${String((garbage.errorInstance as Error)?.message ?? garbage.errorInstance)}`);

    const figures: string[] = [];
    const newShopKey = (): string => {
      const d = runKopek(k, ['demo', '--db', db, '--json']);
      if (d.code !== 0) throw new Error(`kopek demo beside the server failed: ${d.stderr}`);
      return (JSON.parse(d.stdout) as { key: string }).key;
    };
    const cases = [
      ...hostileCases({ bodyLimit: BODY_LIMIT, headersTimeoutMs: HEADERS_TIMEOUT_MS }),
      ...loadCases({ headersTimeoutMs: HEADERS_TIMEOUT_MS, pid: server.proc.pid!, newShopKey, figures }),
    ];
    for (const c of cases) {
      const v = await c.run(server.url, key).catch((e: Error) => `threw: ${e.message}`);
      if (v) failures.push(`${c.name}: ${v}`);
    }
    const health = await send(server.url, { method: 'GET', path: '/healthz', headers: {} }).catch(() => ({ status: 0 }));
    if (health.status !== 200) failures.push(`GET /healthz answered ${health.status} at the end`);
    const rss1 = rssMb(server.proc.pid!);
    if (!(rss1 < RSS_LIMIT_MB)) failures.push(`RSS ${rss1.toFixed(0)} MiB over the ${RSS_LIMIT_MB} MiB bound`);
    const internal = server.errorLines().split('\n').filter((l) => l.includes('"level":"error"'));
    if (internal.length > 0) failures.push(`${internal.length} internal errors logged, first: ${internal[0].slice(0, 300)}`);
    if (crashed !== null) failures.push(`the server exited (${crashed})`);

    const secs = (performance.now() - started) / 1000;
    console.log(`generated requests: ${result.numRuns} over ${byOp.size} distinct operations, in ${secs.toFixed(1)} s`);
    console.log(`  by status: ${[...byStatus].sort((a, b) => a[0] - b[0]).map(([st, n]) => `${st}×${n}`).join(' ')}`);
    console.log(`raw garbage connections: ${garbage.numRuns}`);
    console.log(`fixed hostile cases: ${cases.length}`);
    for (const f of figures) console.log(`  ${f}`);
    console.log(`server RSS: ${rss0.toFixed(0)} MiB at start, ${rss1.toFixed(0)} MiB at the end (bound ${RSS_LIMIT_MB} MiB)`);
  } catch (err) {
    failures.push(`fuzz run failed: ${(err as Error).message}`);
  } finally {
    server.proc.kill('SIGTERM');
    await server.exited;
    rmSync(dir, { recursive: true, force: true });
  }
  for (const f of failures) console.log(`  FAILURE ${f}`);
  console.log(failures.length === 0 ? 'fuzz: PASS' : `fuzz: FAIL (${failures.length} problems; replay with --seed ${seed})`);
  return failures.length === 0 ? 0 : 1;
}

main().then(
  (code) => (process.exitCode = code),
  (err) => {
    console.log(`fuzz: FAIL: ${(err as Error).message}`);
    process.exitCode = 1;
  },
);

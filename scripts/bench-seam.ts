// The storage seam benchmark: this build's executable (A) against the executable of an older release (B, such as
// 67be0c7, the release before the storage redesign), in ONE run on the same machine. A and B take turns in every
// part, load by load, so that whatever the machine does meanwhile hits both alike. Each load line also shows how
// busy the machine was with other work (anything but the measured server and the load generator): a round where
// that is high for one side only is noise, not a difference between the builds.
//   1. payment creates at 50 keep-alive connections: req/s (A/B ≥ 0.9), p50, p99
//   2. payment GETs at 50 connections (200 payments read over and over): req/s (A/B ≥ 0.9), p50, p99
//   3. keyed creates (a random UUID Idempotency-Key per request): req/s, and within each build the server CPU and
//      the bytes written per keyed create over those per plain create (A's judged ≤ 1.35, B's for information)
//   4. a year of monthly subscriptions in one test clock advance (10,000 subscriptions): seconds (A ≤ 1.25 × B)
//   5. start-up at 1,000,000 payments: spawn to the first 200 of GET /healthz, median of 3 starts after a first
//      start that migrates the file (A ≤ 1.5 × B). Both start on copies of one file, made with the schema of the
//      build whose schema is older, so that both can open it.
// Prints one row per figure (name, A, B, A/B, target, ok), then `bench-seam: PASS` or `bench-seam: FAIL (…)`;
// exits 0 on PASS, 1 on FAIL.
//
// Usage: node --import tsx scripts/bench-seam.ts [--base PATH] [--exe PATH] [--small] [--rounds N] [--seconds N]
//   --exe PATH         this build's executable (default dist/kopek, built first by `npm run build` when it is
//                      missing, older than the sources or not on the locked Node)
//   --base PATH        the old executable (default none: --exe against itself, so that CI can run it without
//                      the old build; the figures then only show the noise of the method)
//   --small            CI: small sizes, a few seconds per part; checks that everything runs and answers, judges
//                      no ratio
//   --rounds N         rounds of the loads of items 1–3 (default 3; --small 1)
//   --seconds N        measured seconds per load (default 8; --small 2), after a warm-up of 2 s (--small 0.5 s)
//   --connections N    keep-alive connections of the loads (default 50)
//   --log-level L      the servers' log level in items 1–3 (default info: an access-log line per request, as in
//                      production; the bytes of item 3 leave out what the server wrote to stderr)
//   --subscriptions N  subscriptions of item 4 (default 10,000; --small 200)
//   --rows N           payments of item 5 (default 1,000,000; --small 20,000)
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { ensureBuilt, kopekCommand, runKopek, scriptArgs, intOption, startKopek, ROOT, type KopekCommand, type KopekServer } from './lib/kopek-process';
import { runLoad, type LoadRequest, type LoadResult } from './lib/load';
import { call, median, must, procCpuS, procWriteBytes } from './lib/growth-measure';
import { fillGrowthRows } from './lib/growth-db';

const opts = scriptArgs(process.argv.slice(2), {
  exe: 'value',
  base: 'value',
  small: 'switch',
  rounds: 'value',
  seconds: 'value',
  connections: 'value',
  'log-level': 'value',
  subscriptions: 'value',
  rows: 'value',
});
const small = opts.has('small');
const ROUNDS = Math.max(1, intOption(opts, 'rounds', small ? 1 : 3));
const SECONDS = Math.max(1, intOption(opts, 'seconds', small ? 2 : 8));
const WARMUP_MS = small ? 500 : 2000;
/** Unmeasured load of each kind on each server before the first round. */
const WARM_PASS_MS = small ? 500 : 3000;
/** Longest wait for a server to be idle after a load. */
const SETTLE_MAX_MS = 10_000;
/** Loads after which a server did not get idle within SETTLE_MAX_MS (reported; its next load may pay for it). */
const unsettled: string[] = [];
const CONNECTIONS = Math.max(1, intOption(opts, 'connections', 50));
const LOG_LEVEL = String(opts.get('log-level') ?? 'info');
const SUBS = Math.max(1, intOption(opts, 'subscriptions', small ? 200 : 10_000));
const ROWS = Math.max(10, intOption(opts, 'rows', small ? 20_000 : 1_000_000));
/** Timed starts per build in item 5 (the median is reported). */
const STARTS = 3;
/** Payments each server makes before the loads, for the GETs. */
const GET_IDS = 200;
/** Targets (full mode only). */
const T = { create: 0.9, get: 0.9, keyed: 1.35, year: 1.25, start: 1.5 };
/** Bounds on what a single wait may take, so that a server that hangs fails the run instead of stalling it. */
const HEALTHZ_WAIT_MS = 120_000;
const DAY_S = 86_400;

const say = (s: string) => process.stdout.write(s + '\n');
const fmt = (x: number) => (!Number.isFinite(x) ? String(x) : Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 1 ? x.toFixed(2) : x.toFixed(3));

// ---------------------------------------------------------------------------------------------------------------
// The executables.

interface Build {
  tag: 'A' | 'B';
  k: KopekCommand;
  version: string;
}

/** The newest modification time of what `npm run build` reads: src/, schema.sql, build.mjs, the lock files. */
function newestSourceMs(): number {
  let newest = 0;
  const seen = (p: string) => {
    try {
      newest = Math.max(newest, statSync(p).mtimeMs);
    } catch {
      // not there: nothing to compare
    }
  };
  for (const e of readdirSync(join(ROOT, 'src'), { recursive: true, withFileTypes: true })) if (e.isFile()) seen(join(e.parentPath ?? e.path, e.name));
  for (const f of ['schema.sql', 'build.mjs', 'package.json', 'package-lock.json', 'runtime/package.json', 'runtime/package-lock.json']) seen(join(ROOT, f));
  return newest;
}

/** dist/kopek, built first when missing or older than the sources (then ensureBuilt checks its Node). */
function defaultExe(): string {
  const exe = join(ROOT, 'dist', 'kopek');
  if (!existsSync(exe) || statSync(exe).mtimeMs < newestSourceMs()) {
    say(`bench-seam: dist/kopek is ${existsSync(exe) ? 'older than the sources' : 'missing'}: running npm run build`);
    const r = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
    if (r.status !== 0) throw new Error(`npm run build exited ${r.status}`);
  }
  ensureBuilt();
  return exe;
}

/** What git says this tree is (HEAD, and how many files under src/ differ from it), for the header. */
function treeState(): string {
  const head = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' });
  if (head.status !== 0) return 'not a git tree';
  const dirty = spawnSync('git', ['status', '--porcelain', '--', 'src', 'schema.sql'], { cwd: ROOT, encoding: 'utf8' });
  const n = (dirty.stdout ?? '').split('\n').filter(Boolean).length;
  return `tree at ${head.stdout.trim()}${n > 0 ? ` with ${n} changed file(s) under src/` : ', src/ as committed'}`;
}

function describe(b: Build): string {
  const size = b.k.args.length === 0 ? `, ${(statSync(b.k.cmd).size / 1024 / 1024).toFixed(1)} MiB` : '';
  return `${b.tag}: ${b.k.label} (${b.version}${size})`;
}

// ---------------------------------------------------------------------------------------------------------------
// Servers.

/** A server of one build, counting the bytes it writes to stderr (left out of its bytes written in item 3). */
interface Server {
  b: Build;
  s: KopekServer;
  pid: number;
  key: string;
  stderrBytes: () => number;
}

async function serve(b: Build, db: string, args: string[]): Promise<Server> {
  const s = await startKopek(b.k, ['--db', db, ...args]);
  let bytes = 0;
  s.proc.stderr!.on('data', (c: Buffer) => (bytes += c.length));
  if (!s.demoKey) {
    s.proc.kill('SIGTERM');
    throw new Error(`${b.tag} printed no demo test key on an empty database`);
  }
  return { b, s, pid: s.proc.pid!, key: s.demoKey, stderrBytes: () => bytes };
}

async function stop(s: KopekServer): Promise<void> {
  if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill('SIGTERM');
  await s.exited;
}

// ---------------------------------------------------------------------------------------------------------------
// Items 1–3: loads.

/** Busy and total clock ticks of the whole machine, from /proc/stat. */
function machineTicks(): { busy: number; total: number } {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const total = f.reduce((a, b) => a + b, 0);
    return { busy: total - f[3] - (f[4] ?? 0), total };
  } catch {
    return { busy: NaN, total: NaN };
  }
}

/**
 * One load run: req/s and latencies over its measured window (scripts/lib/load.ts); the server's CPU seconds and
 * bytes written (stderr left out) from the load's first request until the server is idle again after it, with the
 * requests sent meanwhile, so that work a load leaves behind (a checkpoint of its WAL, the collector) is counted
 * for that load and for no other; and the share of the machine's cores busy, during the measured window, with
 * anything but that server and this process (the load generator): whatever else runs on the machine meanwhile,
 * which the figures cannot see.
 */
interface Run extends LoadResult {
  cpu_s: number;
  bytes: number;
  sent: number;
  others: number;
}

/** Wait until the server's CPU over 250 ms is at most one tick (4 % of a core), 10 s at most; whether it got there. */
async function settle(pid: number): Promise<boolean> {
  const until = performance.now() + SETTLE_MAX_MS;
  let last = procCpuS(pid);
  while (performance.now() < until) {
    await new Promise((r) => setTimeout(r, 250));
    const now = procCpuS(pid);
    if (!(now - last > 0.0101)) return true;
    last = now;
  }
  return false;
}

async function measuredLoad(x: Server, expect: number, next: (i: number) => LoadRequest, duration_ms = SECONDS * 1000, warmup_ms = WARMUP_MS): Promise<Run> {
  type Snap = { cpu: number; me: NodeJS.CpuUsage; t: ReturnType<typeof machineTicks> };
  const snap = (): Snap => ({ cpu: procCpuS(x.pid), me: process.cpuUsage(), t: machineTicks() });
  const usage = () => ({ cpu: procCpuS(x.pid), w: procWriteBytes(x.pid), err: x.stderrBytes() });
  let from: Snap | null = null;
  let to: Snap | null = null;
  let sent = 0;
  const u0 = usage();
  const r = await runLoad(x.s.url, {
    connections: CONNECTIONS,
    duration_ms,
    warmup_ms,
    expect,
    next: (i) => (sent++, next(i)),
    onWindow: (e) => (e === 'start' ? (from = snap()) : (to = snap())),
  });
  if (!(await settle(x.pid))) unsettled.push(`${x.b.tag} still busy ${SETTLE_MAX_MS / 1000} s after a load`);
  const u1 = usage();
  const a = from as Snap | null;
  const z = to as Snap | null;
  let others = NaN;
  if (a && z) {
    const me_s = (z.me.user - a.me.user + z.me.system - a.me.system) / 1e6;
    // /proc/stat counts in ticks of 1/100 s (USER_HZ), summed over all cores.
    others = Math.max(0, (z.t.busy - a.t.busy - (z.cpu - a.cpu + me_s) * 100) / Math.max(1, z.t.total - a.t.total));
  }
  return { ...r, cpu_s: u1.cpu - u0.cpu, bytes: u1.w - u0.w - (u1.err - u0.err), sent, others };
}

type Kind = 'create' | 'get' | 'keyed';
const KINDS: Kind[] = ['create', 'get', 'keyed'];
const BODY = '{"amount":10000,"description":"bench"}';

function request(kind: Kind, x: Server, ids: string[]): (i: number) => LoadRequest {
  const auth = { authorization: `Bearer ${x.key}` };
  if (kind === 'get') return (i) => ({ method: 'GET', path: `/v1/public/payments/${ids[i % ids.length]}`, headers: auth });
  if (kind === 'keyed') return () => ({ method: 'POST', path: '/v1/public/payments', body: BODY, headers: { ...auth, 'idempotency-key': randomUUID() } });
  return () => ({ method: 'POST', path: '/v1/public/payments', body: BODY, headers: auth });
}

type Series = Record<'A' | 'B', Record<Kind, Run[]>>;

async function loads(builds: Build[], dir: string): Promise<Series> {
  const series: Series = { A: { create: [], get: [], keyed: [] }, B: { create: [], get: [], keyed: [] } };
  const servers: Server[] = [];
  try {
    for (const b of builds) servers.push(await serve(b, join(dir, `load-${b.tag}.db`), ['--log-level', LOG_LEVEL, '--sim-delay', '2']));
    const ids = new Map<Server, string[]>();
    for (const x of servers) {
      const list: string[] = [];
      for (let i = 0; i < GET_IDS; i++) list.push((await must(x.s.url, 'POST', '/v1/public/payments', x.key, { amount: 10_000 }, 201)).payment.id);
      ids.set(x, list);
    }
    // Unmeasured, so that the JIT of both has settled before the first measured load (a new process keeps
    // compiling the create path for its first thousands of requests).
    for (const kind of KINDS) for (const x of servers) await measuredLoad(x, kind === 'get' ? 200 : 201, request(kind, x, ids.get(x)!), WARM_PASS_MS, 0);
    // A and B take turns load by load, the first of each pair A in odd rounds and B in even ones. Each load
    // starts with both servers idle (measuredLoad waits for it).
    for (let round = 0; round < ROUNDS; round++) {
      const line: string[] = [];
      const order = round % 2 === 0 ? servers : [...servers].reverse();
      for (const kind of KINDS) {
        for (const x of order) series[x.b.tag][kind].push(await measuredLoad(x, kind === 'get' ? 200 : 201, request(kind, x, ids.get(x)!)));
        const [a, b] = [series.A[kind].at(-1)!, series.B[kind].at(-1)!];
        const pc = (v: number) => (Number.isFinite(v) ? `${(v * 100).toFixed(0)}%` : '?');
        line.push(`${kind} ${a.rps.toFixed(0)} / ${b.rps.toFixed(0)} = ${(a.rps / b.rps).toFixed(2)}× (others ${pc(a.others)}/${pc(b.others)})`);
      }
      say(`  round ${round + 1} (${order[0].b.tag} first), req/s A / B: ${line.join('  ')}`);
    }
    for (const x of servers) {
      const errs = x.s.errorLines();
      if (errs) throw new Error(`${x.b.tag} logged errors under load: ${errs.slice(0, 300)}`);
    }
  } finally {
    for (const x of servers) await stop(x.s);
  }
  return series;
}

// ---------------------------------------------------------------------------------------------------------------
// Item 4: a year of monthly subscriptions.

async function subscriptionsSetUp(x: Server, n: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < n) {
        const i = next++;
        const c = await must(x.s.url, 'POST', '/v1/public/subscriptions', x.key, { amount: 10_000, customer_ref: `c-${i}`, period: 'month' }, 201);
        await must(x.s.url, 'POST', `/v1/test/payments/${c.initial_payment.id}/simulate`, x.key, { action: 'open_session' });
      }
    }),
  );
  await must(x.s.url, 'POST', '/v1/test/clock/advance', x.key, { seconds: 0 });
}

/** The advance of a year: seconds, server CPU seconds, and the charges made (succeeded), read from the file. */
async function yearAdvance(x: Server, db: string): Promise<{ seconds: number; cpu_s: number; charges: number }> {
  const cpu0 = procCpuS(x.pid);
  const t0 = performance.now();
  await must(x.s.url, 'POST', '/v1/test/clock/advance', x.key, { seconds: 366 * DAY_S });
  const seconds = (performance.now() - t0) / 1000;
  const cpu_s = procCpuS(x.pid) - cpu0;
  const conn = new Database(db, { readonly: true });
  try {
    const charges = (conn.prepare(`SELECT count(*) AS n FROM payments WHERE kind = 'subscription_charge' AND status = 'succeeded'`).get() as { n: number }).n;
    return { seconds, cpu_s, charges };
  } finally {
    conn.close();
  }
}

async function subscriptionYear(builds: Build[], dir: string): Promise<Record<'A' | 'B', { seconds: number; cpu_s: number; charges: number; setup_s: number }>> {
  const servers: Server[] = [];
  const out = {} as Record<'A' | 'B', { seconds: number; cpu_s: number; charges: number; setup_s: number }>;
  try {
    for (const b of builds) servers.push(await serve(b, join(dir, `subs-${b.tag}.db`), ['--sim-delay', '0', '--log-level', 'warn']));
    const setup = new Map<Server, number>();
    for (const x of servers) {
      const t0 = performance.now();
      await subscriptionsSetUp(x, SUBS);
      setup.set(x, (performance.now() - t0) / 1000);
    }
    // Both are set up before either advances, so that each advance runs while the other server is idle.
    for (const x of servers) {
      out[x.b.tag] = { ...(await yearAdvance(x, join(dir, `subs-${x.b.tag}.db`))), setup_s: setup.get(x)! };
      say(`  ${x.b.tag}: set up in ${setup.get(x)!.toFixed(1)} s; advance ${out[x.b.tag].seconds.toFixed(2)} s (server CPU ${out[x.b.tag].cpu_s.toFixed(2)} s), ${out[x.b.tag].charges} charges`);
    }
  } finally {
    for (const x of servers) await stop(x.s);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Item 5: start-up at ROWS payments.

/** The schema version an executable writes: that of a new file it made with `kopek demo`, and the demo's ids. */
function demoFile(b: Build, path: string): { version: number; merchantId: string; shopId: string } {
  const r = runKopek(b.k, ['demo', '--json', '--db', path]);
  if (r.code !== 0) throw new Error(`${b.tag}: kopek demo exited ${r.code}: ${r.stderr.slice(0, 300)}`);
  const d = JSON.parse(r.stdout) as { merchant_id: string; shop_id: string };
  const conn = new Database(path, { readonly: true });
  try {
    return { version: conn.pragma('user_version', { simple: true }) as number, merchantId: d.merchant_id, shopId: d.shop_id };
  } finally {
    conn.close();
  }
}

/**
 * The rows of the growth benchmark's database (scripts/lib/growth-db.ts, fillGrowthRows) straight into an
 * existing kopek database: the schema, merchant and shop are the ones `kopek demo` of the older build made, so
 * that both builds can open it (buildGrowthDb itself makes the schema through this tree's sources, which may be
 * newer than the base's).
 */
function fillRows(path: string, merchantId: string, shopId: string, n: number, now = Date.now()): void {
  const db = new Database(path);
  try {
    db.pragma('synchronous = NORMAL');
    db.pragma('cache_size = -262144');
    fillGrowthRows(db, merchantId, shopId, n, now);
    // One file, no WAL beside it: its copies are identical.
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
}

/** Payments in the file and its schema version. */
function fileState(path: string): { payments: number; version: number } {
  const conn = new Database(path, { readonly: true });
  try {
    return { payments: (conn.prepare('SELECT count(*) AS n FROM payments').get() as { n: number }).n, version: conn.pragma('user_version', { simple: true }) as number };
  } finally {
    conn.close();
  }
}

/** Spawn `kopek serve` on `db` and time it to the first 200 of GET /healthz; the server is stopped again. */
async function timedStart(b: Build, db: string): Promise<number> {
  const t0 = performance.now();
  const s = await startKopek(b.k, ['--db', db, '--no-demo', '--sim-delay', '0', '--log-level', 'warn']);
  try {
    for (;;) {
      const r = await call(s.url, 'GET', '/healthz', null).catch(() => null);
      if (r?.status === 200) return performance.now() - t0;
      if (performance.now() - t0 > HEALTHZ_WAIT_MS) throw new Error(`${b.tag}: no 200 from /healthz within ${HEALTHZ_WAIT_MS / 1000} s (last: ${r?.status ?? 'no answer'})`);
    }
  } finally {
    await stop(s);
  }
}

async function startUp(builds: Build[], dir: string): Promise<{ ms: Record<'A' | 'B', number[]>; versions: Record<'A' | 'B', number>; first: Record<'A' | 'B', number> }> {
  // The schema each build writes, from a demo database of each; the seed is the one of the older schema.
  const made = builds.map((b) => ({ b, path: join(dir, `seed-${b.tag}.db`) })).map((x) => ({ ...x, ...demoFile(x.b, x.path) }));
  const versions = Object.fromEntries(made.map((x) => [x.b.tag, x.version])) as Record<'A' | 'B', number>;
  const seed = made.reduce((m, x) => (x.version < m.version ? x : m));
  const t0 = performance.now();
  fillRows(seed.path, seed.merchantId, seed.shopId, ROWS);
  const size = statSync(seed.path).size;
  say(`  built ${ROWS.toLocaleString('en')} payments in ${((performance.now() - t0) / 1000).toFixed(1)} s with ${seed.b.tag}'s schema (version ${seed.version}; A writes ${versions.A}, B ${versions.B}): ${(size / 1e6).toFixed(0)} MB`);
  const files = new Map<Build, string>();
  for (const b of builds) {
    const f = join(dir, `start-${b.tag}.db`);
    copyFileSync(seed.path, f);
    files.set(b, f);
  }
  for (const x of made) rmSync(x.path, { force: true });
  // The first start of each: it migrates the file when its schema is newer; not what is measured.
  const first = {} as Record<'A' | 'B', number>;
  const after: string[] = [];
  for (const b of builds) {
    first[b.tag] = await timedStart(b, files.get(b)!);
    const f = fileState(files.get(b)!);
    if (f.payments !== ROWS) throw new Error(`${b.tag}: ${f.payments} payments in its file after its first start, not ${ROWS}`);
    if (f.version !== versions[b.tag]) throw new Error(`${b.tag}: its file is at schema version ${f.version} after its first start, not ${versions[b.tag]}`);
    after.push(`${b.tag}'s copy at version ${f.version}`);
  }
  say(`  after the first starts: ${after.join(', ')}, ${ROWS.toLocaleString('en')} payments in each`);
  const ms: Record<'A' | 'B', number[]> = { A: [], B: [] };
  for (let i = 0; i < STARTS; i++) for (const b of i % 2 === 0 ? builds : [...builds].reverse()) ms[b.tag].push(await timedStart(b, files.get(b)!));
  return { ms, versions, first };
}

// ---------------------------------------------------------------------------------------------------------------
// Report.

interface Row {
  name: string;
  a: number;
  b: number;
  ratio: number;
  target: string;
  /** null: not judged. */
  ok: boolean | null;
  /** The figure the target is about (the ratio A/B, or A's own ratio). */
  judged?: number;
}

async function main(): Promise<number> {
  const exeOpt = opts.get('exe') as string | undefined;
  const baseOpt = opts.get('base') as string | undefined;
  const A: Build = { tag: 'A', k: kopekCommand(exeOpt !== undefined ? resolve(exeOpt) : defaultExe(), false), version: '' };
  const B: Build = { tag: 'B', k: kopekCommand(baseOpt !== undefined ? resolve(baseOpt) : A.k.cmd, false), version: '' };
  for (const b of [A, B]) b.version = runKopek(b.k, ['--version']).stdout.trim() || 'no --version answer';
  const builds = [A, B];
  const dir = mkdtempSync(join(tmpdir(), 'kopek-seam-'));
  const rows: Row[] = [];
  const problems: string[] = [];
  const judge = (name: string, a: number, b: number, ratio: number, target: string, judged: number, pass: boolean) =>
    rows.push({ name, a, b, ratio, target: small ? `(${target})` : target, ok: small ? null : pass, judged });
  const info = (name: string, a: number, b: number, ratio = a / b) => rows.push({ name, a, b, ratio, target: 'info', ok: null });
  say(`bench-seam${small ? ' (--small: sizes for CI, ratios not judged)' : ''}: ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, load generator on node ${process.version}`);
  say(`  ${describe(A)}, ${treeState()}`);
  say(`  ${describe(B)}${baseOpt === undefined ? ' — no --base: A against itself' : ''}`);
  say(`  loads: ${CONNECTIONS} keep-alive connections, ${ROUNDS} round(s) × ${SECONDS} s per load after ${WARMUP_MS} ms warm-up, A and B alternating, log level ${LOG_LEVEL};`);
  say(`         req/s, p50, p99 the medians of the rounds, A/B of req/s the median of the rounds' ratios; CPU and bytes per create over all rounds,`);
  say(`         each load counted until its server is idle again; "others": the machine's cores busy with anything else in the window`);
  say(`  year: ${SUBS.toLocaleString('en')} monthly subscriptions; start-up: ${ROWS.toLocaleString('en')} payments, median of ${STARTS} starts`);
  try {
    // Items 1–3.
    say('items 1–3: loads');
    const s = await loads(builds, dir);
    const med = (tag: 'A' | 'B', kind: Kind, f: (r: Run) => number) => median(s[tag][kind].map(f));
    const rpsRatio = (kind: Kind) => median(s.A[kind].map((a, i) => a.rps / s.B[kind][i].rps));
    for (const [kind, title, target] of [
      ['create', '1 payment create', T.create],
      ['get', '2 payment GET', T.get],
      ['keyed', '3 keyed create (UUID Idempotency-Key)', NaN],
    ] as const) {
      const r = rpsRatio(kind);
      if (Number.isNaN(target)) info(`${title}: req/s`, med('A', kind, (x) => x.rps), med('B', kind, (x) => x.rps), r);
      else judge(`${title}: req/s`, med('A', kind, (x) => x.rps), med('B', kind, (x) => x.rps), r, `A/B ≥ ${target}`, r, r >= target);
      info(`${title}: p50 ms`, med('A', kind, (x) => x.p50_ms), med('B', kind, (x) => x.p50_ms));
      info(`${title}: p99 ms`, med('A', kind, (x) => x.p99_ms), med('B', kind, (x) => x.p99_ms));
      for (const tag of ['A', 'B'] as const) {
        const runs = s[tag][kind];
        const errors = runs.reduce((n, x) => n + x.errors, 0);
        const unexpected = runs.reduce((n, x) => n + x.unexpected, 0);
        if (errors > 0 || unexpected > 0) problems.push(`${tag} ${kind}: ${errors} connection errors, ${unexpected} unexpected statuses`);
        if (runs.some((x) => x.requests === 0)) problems.push(`${tag} ${kind}: a run completed no request`);
      }
    }
    // Per create over all rounds: the sums of CPU and bytes (each load until its server was idle again) over the
    // sums of the requests sent.
    const per = (tag: 'A' | 'B', kind: Kind, f: (r: Run) => number) => s[tag][kind].reduce((n, x) => n + f(x), 0) / s[tag][kind].reduce((n, x) => n + x.sent, 0);
    const cpu = (tag: 'A' | 'B', kind: Kind) => per(tag, kind, (x) => x.cpu_s) * 1e6;
    const bytes = (tag: 'A' | 'B', kind: Kind) => per(tag, kind, (x) => x.bytes);
    info('3 server CPU µs per plain create', cpu('A', 'create'), cpu('B', 'create'));
    info('3 server CPU µs per keyed create', cpu('A', 'keyed'), cpu('B', 'keyed'));
    const cpuA = cpu('A', 'keyed') / cpu('A', 'create');
    const cpuB = cpu('B', 'keyed') / cpu('B', 'create');
    judge('3 CPU per create, keyed / plain (judged: A)', cpuA, cpuB, cpuA / cpuB, `A ≤ ${T.keyed}`, cpuA, cpuA <= T.keyed);
    info('3 bytes written per plain create', bytes('A', 'create'), bytes('B', 'create'));
    info('3 bytes written per keyed create', bytes('A', 'keyed'), bytes('B', 'keyed'));
    const bytesA = bytes('A', 'keyed') / bytes('A', 'create');
    const bytesB = bytes('B', 'keyed') / bytes('B', 'create');
    judge('3 bytes per create, keyed / plain (judged: A)', bytesA, bytesB, bytesA / bytesB, `A ≤ ${T.keyed}`, bytesA, bytesA <= T.keyed);
    for (const [name, v] of [
      ['A CPU ratio', cpuA],
      ['B CPU ratio', cpuB],
      ['A bytes ratio', bytesA],
      ['B bytes ratio', bytesB],
    ] as const) {
      if (!Number.isFinite(v)) problems.push(`3 ${name} not measured (/proc unreadable?)`);
    }

    // Item 4.
    say(`item 4: a year of ${SUBS.toLocaleString('en')} monthly subscriptions`);
    const y = await subscriptionYear(builds, dir);
    judge(`4 year of ${SUBS.toLocaleString('en')} subscriptions: advance s`, y.A.seconds, y.B.seconds, y.A.seconds / y.B.seconds, `A/B ≤ ${T.year}`, y.A.seconds / y.B.seconds, y.A.seconds / y.B.seconds <= T.year);
    info('4 server CPU s of the advance', y.A.cpu_s, y.B.cpu_s);
    info('4 set-up s (subscribe and pay, 16 at a time)', y.A.setup_s, y.B.setup_s);
    for (const tag of ['A', 'B'] as const) if (y[tag].charges !== SUBS * 12) problems.push(`4 ${tag}: ${y[tag].charges} charges succeeded, not ${SUBS * 12}`);

    // Item 5.
    say(`item 5: start-up at ${ROWS.toLocaleString('en')} payments`);
    const st = await startUp(builds, dir);
    const sa = median(st.ms.A);
    const sb = median(st.ms.B);
    const all = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(', ');
    say(`  first start (migrates when newer): A ${st.first.A.toFixed(0)} ms, B ${st.first.B.toFixed(0)} ms; then A ${all(st.ms.A)} ms, B ${all(st.ms.B)} ms`);
    judge(`5 start-up at ${ROWS.toLocaleString('en')} payments: ms to /healthz 200`, sa, sb, sa / sb, `A/B ≤ ${T.start}`, sa / sb, sa / sb <= T.start);
  } catch (err) {
    problems.push(`failed: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  say('');
  say(`${'name'.padEnd(58)} ${'A'.padStart(9)} ${'B'.padStart(9)} ${'A/B'.padStart(7)}  ${'target'.padEnd(12)} ok`);
  for (const r of rows) {
    const ok = r.ok === null ? '-' : r.ok ? 'yes' : 'NO';
    say(`${r.name.padEnd(58)} ${fmt(r.a).padStart(9)} ${fmt(r.b).padStart(9)} ${fmt(r.ratio).padStart(7)}  ${r.target.padEnd(12)} ${ok}`);
  }
  for (const r of rows) if (r.ok === false) problems.push(`${r.name}: ${fmt(r.judged ?? r.ratio)}, target ${r.target}`);
  if (unsettled.length > 0) say(`  note: ${unsettled.length} load(s) left a server busy: ${[...new Set(unsettled)].join('; ')}`);
  for (const p of problems) say(`  PROBLEM ${p}`);
  if (problems.length === 0) {
    say(`bench-seam: PASS${small ? ' (small mode: everything ran and answered; ratios not judged)' : ''}`);
    return 0;
  }
  say(`bench-seam: FAIL (${problems.join('; ')})`);
  return 1;
}

// process.exit: the keep-alive agents must not keep the script alive; the servers still running (none, unless it
// failed half-way) are stopped as it exits (scripts/lib/kopek-process.ts).
main().then(
  (code) => process.exit(code),
  (err) => {
    say(`bench-seam: FAIL (${err instanceof Error ? err.message : String(err)})`);
    process.exit(1);
  },
);

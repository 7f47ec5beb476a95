// The PostgreSQL engine and the cluster, measured in ONE run on one PostgreSQL server this script starts itself
// (initdb into a temp folder, fsync and synchronous_commit on, as production runs). Four loads of creates, each
// at the same number of concurrent clients:
//   - the baseline: a bare node:http server and the same driver (pg), one durable single-row INSERT per POST;
//   - one kopek node;
//   - two kopek nodes sharing the database, the clients split between them;
//   - a control, not judged: two nodes each on a database of its own on the same server, sharing nothing.
// All processes start first and each load runs once to warm them; then the loads take turns in short slices
// (--cycles, the order reversed every other cycle), so that loads next to each other in time meet the same
// moment of a noisy machine. Each ratio is the median of the cycles' own ratios. Judged:
//   1. one node's creates/s against the baseline's: ≥ 0.5;
//   2. CPU per create (the kopek processes of the load and every PostgreSQL process together, from /proc), two
//      nodes against one: ≤ 1.2. On a 2-core machine throughput cannot show a second node's worth; CPU per
//      request shows what coordination costs. Two sharing / two apart is what the coordination itself costs;
//   3. GET of one payment, one request at a time: median latency on a PostgreSQL node against a SQLite server
//      (PostgreSQL/SQLite ≤ 2), in alternating turns of 100, once PostgreSQL has settled after the loads (a
//      checkpoint, and no autovacuum worker left, waiting 30 s at most);
//   4. the due-job claim: two schedulers on a database of their own run jobs that are all due at once, half of
//      them sync and half async: transactions rolled back per claimed job (serialization retries of the job runs; the claim itself runs at READ COMMITTED): 0, and no job
//      runs twice.
// Prints one row per figure, then `bench-cluster: PASS` or `bench-cluster: FAIL (…)`; exits 0 on PASS.
//
// Usage: node --import tsx scripts/bench-cluster.ts [--exe PATH] [--small] [--seconds N] [--warmup N] [--cycles N] [--connections N]
//   --exe PATH        the executable to measure (default: the sources, through tsx)
//   --small           CI: a second per slice, one cycle; checks that everything runs, judges no ratio
//   --seconds N       measured seconds of every slice (default 2)
//   --warmup N        seconds of each load's first run, not measured (default 6)
//   --cycles N        turns of the four loads (default 12)
//   --connections N   concurrent clients of every load (default 32)
import { readdirSync, readFileSync, rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import pg from 'pg';
import { kopekCommand, scriptArgs, intOption, startKopek, ROOT, type KopekServer } from './lib/kopek-process';
import { runLoad } from './lib/load';
import { median, procCpuS, call } from './lib/growth-measure';
import { ownPostgres } from '../test/helpers/own-postgres';
import { openEngine } from '../src/platform/storage/maintenance';
import { createDemo } from '../src/money/shops/store';
import { PG_LIMITS } from '../src/platform/storage/limits';
import { Scheduler } from '../src/platform/queue/jobs';
import { Clocks } from '../src/platform/clock';
import { createLogger } from '../src/platform/log';

const opts = scriptArgs(process.argv.slice(2), { exe: 'value', small: 'switch', seconds: 'value', connections: 'value', cycles: 'value', warmup: 'value' });
const small = opts.has('small');
/** Measured seconds of one slice of a load. */
const SECONDS = Math.max(1, intOption(opts, 'seconds', small ? 1 : 2));
const CONNECTIONS = Math.max(1, intOption(opts, 'connections', 32));
const CYCLES = Math.max(1, intOption(opts, 'cycles', small ? 1 : 12));
/** The start of every slice that is not measured: its clients connect and the nodes' queues fill. */
const SLICE_RAMP_MS = 300;
// V8 compiles a node's hot code in its first seconds, and each of two nodes compiles it too: a one-off cost per
// process that, measured, would count as per-create CPU of two nodes. Slices start once it is paid, in the steady
// state of a cluster that has been running.
const WARMUP_MS = small ? 500 : Math.max(1, intOption(opts, 'warmup', 6)) * 1000;
/** GETs per turn on one side before the other side's turn. */
const GET_TURN = 100;
/** The longest wait for PostgreSQL to settle before the GETs. */
const SETTLE_MS = 30_000;
const exe = opts.get('exe') as string | undefined;
let dbUrl = '';
/** The PID of the bench's PostgreSQL server's postmaster. */
let pgRoot = 0;
const kopek = exe ? kopekCommand(exe, false) : { cmd: process.execPath, args: ['--import', 'tsx', join(ROOT, 'src', 'main.ts')], label: 'node --import tsx src/main.ts' };

/** The fields of /proc/PID/stat after the command's name (the state first); null once the process is gone. */
function statFields(pid: number): string[] | null {
  try {
    const raw = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return raw.slice(raw.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/**
 * CPU seconds the PostgreSQL server whose postmaster is `root` has used so far: the postmaster's own, that of its
 * children that ended (the postmaster waits for each, so the kernel adds it to the postmaster's cutime and cstime),
 * and that of its children now (backends, writers, autovacuum workers). A backend or autovacuum worker that ends
 * within a window moves from the last sum to the second, so the count never loses it.
 */
function postgresCpuS(root: number): number {
  const own = statFields(root);
  if (!own) return NaN;
  let ticks = Number(own[13]) + Number(own[14]);
  for (const p of postgresPids(root)) {
    const f = statFields(p);
    if (f) ticks += Number(f[11]) + Number(f[12]);
  }
  return ticks / 100;
}

/** PIDs of the PostgreSQL server whose postmaster is `root`: itself and its children now. */
function postgresPids(root: number): number[] {
  const out = [root];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const f = statFields(Number(d));
    if (f && Number(f[1]) === root) out.push(Number(d));
  }
  return out;
}

/** Context switches (voluntary and not) of each process's main thread now, by PID. */
function switchesOf(pids: number[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const p of pids) {
    try {
      const status = readFileSync(`/proc/${p}/status`, 'utf8');
      out.set(p, Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)![1]) + Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)![1]));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The switches between two readings, of the processes present in both. */
function switchesBetween(a: Map<number, number>, b: Map<number, number>): number {
  let n = 0;
  for (const [p, v] of b) if (a.has(p)) n += v - a.get(p)!;
  return n;
}

/** CPU seconds of these processes (none of which has children) now. */
function cpuOf(pids: number[]): number {
  return pids.reduce((sum, p) => sum + (procCpuS(p) || 0), 0);
}

/** The bare service: node:http and the same driver, one durable INSERT per POST (scripts/lib/baseline-pg-server.ts). */
async function startBaseline(url: string, pool: number): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'lib', 'baseline-pg-server.ts'), url, String(pool)], { stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
  const base = await new Promise<string>((resolve, reject) => {
    let err = '';
    proc.stderr!.on('data', (c: Buffer) => {
      err += c.toString();
      const m = /listening on (http:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]);
    });
    proc.on('exit', (code) => reject(new Error(`the baseline server exited (${code}): ${err}`)));
  });
  return {
    url: base,
    pid: proc.pid!,
    stop: async () => {
      proc.kill('SIGTERM');
      await exited;
    },
  };
}

/** Transactions the database committed and rolled back so far (a rollback is a serialization retry, or a refusal). */
async function xacts(url: string): Promise<{ commit: number; rollback: number }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query('SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = current_database()');
    return { commit: Number(r.rows[0].xact_commit), rollback: Number(r.rows[0].xact_rollback) };
  } finally {
    await c.end();
  }
}

/** A new empty database `name` on the server of `url`; its URL. */
async function secondDatabase(url: string, name: string): Promise<string> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`CREATE DATABASE ${name}`);
  } finally {
    await c.end();
  }
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** What one load of creates gave. */
interface CreateFigures {
  rps: number;
  cpu_ms_per_create: number;
  /** Times the load's kopek (or bare) processes' main threads, and PostgreSQL's processes, slept and woke, per create. */
  node_switches_per_create: number;
  pg_switches_per_create: number;
  errors: number;
  rollbacks_per_create: number;
}

/** Each figure's median over the slices (errors: their sum). */
function medianFigures(runs: CreateFigures[]): CreateFigures {
  return {
    rps: median(runs.map((r) => r.rps)),
    cpu_ms_per_create: median(runs.map((r) => r.cpu_ms_per_create)),
    node_switches_per_create: median(runs.map((r) => r.node_switches_per_create)),
    pg_switches_per_create: median(runs.map((r) => r.pg_switches_per_create)),
    errors: runs.reduce((s, r) => s + r.errors, 0),
    rollbacks_per_create: median(runs.map((r) => r.rollbacks_per_create)),
  };
}

/** A server a load sends its creates to: the bare service, or a kopek node with its shop's key. */
interface Target {
  url: string;
  path: string;
  key: string | null;
}

/** The counters of a load at one edge of its window. */
interface Reading {
  cpu_s: number;
  node: Map<number, number>;
  pg: Map<number, number>;
}

function reading(pids: number[]): Reading {
  return { cpu_s: cpuOf(pids) + postgresCpuS(pgRoot), node: switchesOf(pids), pg: switchesOf(postgresPids(pgRoot)) };
}

/**
 * Creates at CONNECTIONS clients spread evenly over `targets`, measured for `seconds` after `warmupMs`: creates/s,
 * and per create the CPU of the processes `pids` and of PostgreSQL, and their context switches.
 */
async function createLoad(targets: Target[], pids: number[], warmupMs: number, seconds: number): Promise<CreateFigures> {
  const x0 = await xacts(dbUrl);
  const body = JSON.stringify({ amount: 10_000 });
  const per = Math.max(1, Math.floor(CONNECTIONS / targets.length));
  let r0: Reading | null = null;
  let r1: Reading | null = null;
  const results = await Promise.all(
    targets.map((t, i) =>
      runLoad(t.url, {
        connections: per,
        duration_ms: seconds * 1000,
        warmup_ms: warmupMs,
        expect: 201,
        next: () => ({ method: 'POST', path: t.path, headers: t.key ? { authorization: `Bearer ${t.key}` } : undefined, body }),
        onWindow: i === 0 ? (edge) => (edge === 'start' ? (r0 = reading(pids)) : (r1 = reading(pids))) : undefined,
      }),
    ),
  );
  const rps = results.reduce((s, r) => s + r.rps, 0);
  const x1 = await xacts(dbUrl);
  const made = results.reduce((s, r) => s + r.requests, 0);
  const a = r0!;
  const b = r1!;
  const creates = rps * seconds;
  return {
    rps,
    cpu_ms_per_create: ((b.cpu_s - a.cpu_s) * 1000) / creates,
    node_switches_per_create: switchesBetween(a.node, b.node) / creates,
    pg_switches_per_create: switchesBetween(a.pg, b.pg) / creates,
    errors: results.reduce((s, r) => s + r.errors + r.unexpected, 0),
    rollbacks_per_create: (x1.rollback - x0.rollback) / Math.max(1, made),
  };
}

/** A payment to GET on `base`, and the GET's path; a few GETs warm it. */
async function getTarget(base: string, key: string): Promise<string> {
  const made = await call(base, 'POST', '/v1/public/payments', key, { amount: 10_000 });
  const path = `/v1/public/payments/${JSON.parse(made.text).payment.id}`;
  for (let i = 0; i < 50; i++) await call(base, 'GET', path, key);
  return path;
}

/**
 * Median ms of `runs` GETs on each side, one at a time, in turns of GET_TURN (SQLite first, then PostgreSQL, then
 * again): both sides meet the same moments of a noisy machine.
 */
async function getLatencies(sides: Array<{ base: string; key: string }>, runs: number): Promise<number[]> {
  const paths = [];
  for (const s of sides) paths.push(await getTarget(s.base, s.key));
  const ms: number[][] = sides.map(() => []);
  for (let done = 0; done < runs; done += GET_TURN) {
    for (let i = 0; i < sides.length; i++) {
      for (let k = 0; k < GET_TURN; k++) ms[i].push((await call(sides[i].base, 'GET', paths[i], sides[i].key)).ms);
    }
  }
  return ms.map((m) => median(m));
}

/**
 * Wait (at most SETTLE_MS) until PostgreSQL is done with the loads: a checkpoint written and no autovacuum
 * worker left, so the GETs meet the database at rest rather than its aftermath of a minute of inserts.
 */
async function settle(url: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('CHECKPOINT');
    const until = Date.now() + SETTLE_MS;
    while (Date.now() < until) {
      const r = await c.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'`);
      if (r.rows[0].n === 0) return;
      await new Promise((res) => setTimeout(res, 250));
    }
  } finally {
    await c.end();
  }
}

/** One printed figure: its name, its value, what it is against, and whether it met its target (null: not judged). */
type Row = [string, string, string, boolean | null];

/**
 * Two schedulers (two nodes' worth, in this process) share a database of their own and run `n` jobs due at once,
 * half sync, half async; the rows of rolled-back transactions per claimed job and of jobs that ran twice.
 */
async function claimRows(url: string, n: number): Promise<Row[]> {
  const claimsUrl = await secondDatabase(url, 'kopek_claims');
  const stores = [await openEngine(claimsUrl), await openEngine(claimsUrl)];
  const runs = new Map<number, number>();
  const ran = (id: number): void => void runs.set(id, (runs.get(id) ?? 0) + 1);
  const schedulers = stores.map((store) => {
    const s = new Scheduler(store, new Clocks(store.now), createLogger('warn'));
    // A sync job's body runs again when its transaction is retried: a run counts once its transaction committed.
    s.register('bench.sync', async (tx, job) => tx.afterCommit(() => ran(job.id)));
    s.registerAsync('bench.async', { run: async (job) => ran(job.id), complete: async () => {} });
    return s;
  });
  try {
    const now = stores[0].now();
    for (let i = 0; i < n; i += 500) {
      await stores[0].tx(async (tx) => {
        for (let j = i; j < Math.min(n, i + 500); j++) {
          await schedulers[0].schedule(tx, { kind: j % 2 === 0 ? 'bench.sync' : 'bench.async', subjectId: String(j), shopId: null, mode: 'live', dueAt: now });
        }
      });
    }
    const before = await xacts(claimsUrl);
    const t0 = performance.now();
    for (const s of schedulers) s.start();
    while ((await stores[0].get<{ n: number }>(`SELECT count(*) AS n FROM jobs WHERE state = 'pending'`))!.n > 0) {
      if (performance.now() - t0 > 120_000) throw new Error('the claim phase did not end within 120 s');
      await new Promise((r) => setTimeout(r, 20));
    }
    const ms = performance.now() - t0;
    await Promise.all(schedulers.map((s) => s.stop()));
    const after = await xacts(claimsUrl);
    const rollbacks = (after.rollback - before.rollback) / n;
    const twice = [...runs.values()].filter((c) => c > 1).length;
    return [
      [`claims: ${n} due jobs, two schedulers`, `${((n / ms) * 1000).toFixed(0)}/s`, '', null],
      ['transactions rolled back per claimed job', rollbacks.toFixed(4), '(0)', rollbacks === 0],
      ['jobs run twice', String(twice), `(0; ${runs.size} of ${n} ran)`, twice === 0 && runs.size === n],
    ];
  } finally {
    await Promise.all(schedulers.map((s) => s.stop()));
    for (const st of stores) await st.close();
  }
}

/** A load of the comparison: where its clients send creates, whose CPU it counts, and what its slices gave. */
interface Load {
  name: string;
  targets: Target[];
  pids: number[];
  slices: CreateFigures[];
}

/**
 * Every process runs for the whole measurement, so each is warm (V8 has compiled its hot code) before the first
 * slice, as in a cluster that has been running. Then the loads take turns in short slices, in the opposite order
 * every other cycle: this machine's speed drifts by tens of per cent over seconds, and loads next to each other in
 * time meet the same machine (and a database of about the same size).
 */
async function interleave(loads: Load[]): Promise<void> {
  for (const l of loads) await createLoad(l.targets, l.pids, 0, WARMUP_MS / 1000);
  for (let cycle = 0; cycle < CYCLES; cycle++) {
    for (const l of cycle % 2 === 0 ? loads : [...loads].reverse()) {
      const f = await createLoad(l.targets, l.pids, SLICE_RAMP_MS, SECONDS);
      l.slices.push(f);
      console.error(`bench-cluster: cycle ${cycle + 1}, ${l.name}: ${f.rps.toFixed(0)} creates/s, ${f.cpu_ms_per_create.toFixed(3)} ms of CPU per create`);
    }
  }
}

/** The rows of the create loads (in the order bare server, one node, two bare servers, two nodes, two nodes apart). */
function createRows(loads: Load[]): Row[] {
  const out: Row[] = [];
  const [bases, ones, bareTwos, twos, aparts] = loads.map((l) => l.slices);
  const base = { rps: median(bases.map((b) => b.rps)), cpu_ms_per_create: median(bases.map((b) => b.cpu_ms_per_create)) };
  const oneF = medianFigures(ones);
  const two = medianFigures(twos);
  const apart = medianFigures(aparts);
  // Each ratio is the median of the cycles' own ratios (loads next to each other in time), as bench:seam does.
  const oneToBase = median(ones.map((o, i) => o.rps / bases[i].rps));
  const twoToOne = median(twos.map((t, i) => t.cpu_ms_per_create / ones[i].cpu_ms_per_create));
  out.push(['creates/s: bare node:http + pg', base.rps.toFixed(0), '', null]);
  out.push(['creates/s: one kopek node', oneF.rps.toFixed(0), `${oneToBase.toFixed(2)}× (≥ 0.5)`, oneToBase >= 0.5]);
  out.push(['CPU ms per create: bare', base.cpu_ms_per_create.toFixed(3), '', null]);
  out.push(['CPU ms per create: one node', oneF.cpu_ms_per_create.toFixed(3), '', null]);
  out.push(['CPU ms per create: two nodes', two.cpu_ms_per_create.toFixed(3), `${twoToOne.toFixed(2)}× (≤ 1.2)`, twoToOne <= 1.2]);
  out.push(['creates/s: two nodes', two.rps.toFixed(0), '', null]);
  const apartToOne = median(aparts.map((t, i) => t.cpu_ms_per_create / ones[i].cpu_ms_per_create));
  const twoToApart = median(twos.map((t, i) => t.cpu_ms_per_create / aparts[i].cpu_ms_per_create));
  out.push(['CPU ms per create: two nodes apart', apart.cpu_ms_per_create.toFixed(3), `${apartToOne.toFixed(2)}× one node`, null]);
  out.push(['two nodes sharing / two nodes apart', `${twoToApart.toFixed(2)}×`, '(coordination)', null]);
  const bareTwoToOne = median(bareTwos.map((t, i) => t.cpu_ms_per_create / bases[i].cpu_ms_per_create));
  out.push(['CPU ms per create: two bare servers', median(bareTwos.map((t) => t.cpu_ms_per_create)).toFixed(3), `${bareTwoToOne.toFixed(2)}× one bare server`, null]);
  for (const [name, f] of [['one node', oneF], ['two nodes', two]] as const) {
    out.push([`context switches per create: ${name}`, `${f.node_switches_per_create.toFixed(2)} / ${f.pg_switches_per_create.toFixed(2)}`, '(kopek / PostgreSQL)', null]);
  }
  out.push(['retried transactions per create: one node', oneF.rollbacks_per_create.toFixed(3), '', null]);
  out.push(['retried transactions per create: two nodes', two.rollbacks_per_create.toFixed(3), '', null]);
  return out;
}

async function main(): Promise<number> {
  process.env.KOPEK_MASTER_KEY ||= Buffer.alloc(32, 7).toString('base64');
  const pgServer = await ownPostgres();
  const dir = mkdtempSync(join(tmpdir(), 'kopek-bench-cluster-'));
  const rows: Row[] = [];
  const nodes: KopekServer[] = [];
  const stops: Array<() => Promise<void>> = [];
  try {
    dbUrl = pgServer.url;
    pgRoot = Number(readFileSync(join(pgServer.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const store = await openEngine(pgServer.url);
    const demo = await createDemo(store, store.now());
    await store.close();
    const args = ['--db', pgServer.url, '--no-demo', '--log-level', 'warn'];
    // Two nodes share the load with the one node's connections between them (a pool of half the size each), so
    // that PostgreSQL runs as many transactions at once in both loads and only the coordination differs.
    const half = String(Math.max(1, Math.floor(PG_LIMITS.pool / 2)));
    // The control: two nodes as above, each on a database of its own on the same server, so they share nothing.
    // What two sharing nodes cost beyond it is their coordination; what it costs beyond one node is running two
    // processes on these two cores.
    const apartUrl = await secondDatabase(pgServer.url, 'kopek_apart');
    const apartStore = await openEngine(apartUrl);
    const apartDemo = await createDemo(apartStore, apartStore.now());
    await apartStore.close();
    const bare = await startBaseline(pgServer.url, PG_LIMITS.pool);
    stops.push(bare.stop);
    // A second control: the bare service as two processes with half the pool each. It has nothing to coordinate
    // but its one table's index, so what it costs beyond one bare process is two processes on these two cores.
    const bares = [await startBaseline(pgServer.url, Number(half)), await startBaseline(pgServer.url, Number(half))];
    stops.push(...bares.map((b) => b.stop));
    const node = async (a: string[]): Promise<KopekServer> => {
      const n = await startKopek(kopek, a);
      nodes.push(n);
      return n;
    };
    const path = '/v1/public/payments';
    const one = await node(args);
    const twoA = await node([...args, '--db-pool', half]);
    const twoB = await node([...args, '--db-pool', half]);
    const apartA = await node([...args, '--db-pool', half]);
    const apartB = await node(['--db', apartUrl, '--no-demo', '--log-level', 'warn', '--db-pool', half]);
    const loads: Load[] = [
      { name: 'bare server', targets: [{ url: bare.url, path: '/payments', key: null }], pids: [bare.pid], slices: [] },
      { name: 'one node', targets: [{ url: one.url, path, key: demo.secret }], pids: [one.proc.pid!], slices: [] },
      {
        name: 'two bare servers',
        targets: bares.map((b) => ({ url: b.url, path: '/payments', key: null })),
        pids: bares.map((b) => b.pid),
        slices: [],
      },
      {
        name: 'two nodes',
        targets: [twoA, twoB].map((n) => ({ url: n.url, path, key: demo.secret })),
        pids: [twoA.proc.pid!, twoB.proc.pid!],
        slices: [],
      },
      {
        name: 'two nodes apart',
        targets: [
          { url: apartA.url, path, key: demo.secret },
          { url: apartB.url, path, key: apartDemo.secret },
        ],
        pids: [apartA.proc.pid!, apartB.proc.pid!],
        slices: [],
      },
    ];
    await interleave(loads);
    for (const n of nodes) n.proc.kill('SIGTERM');
    await Promise.all(nodes.map((n) => n.exited));
    nodes.length = 0;
    for (const stop of stops.splice(0)) await stop();
    rows.push(...createRows(loads));
    nodes.push(await startKopek(kopek, args));
    const sqlite = await startKopek(kopek, ['--db', join(dir, 'kopek.db'), '--log-level', 'warn']);
    nodes.push(sqlite);
    const runs = small ? 200 : 2000;
    await settle(pgServer.url);
    const [liteMs, pgMs] = await getLatencies([{ base: sqlite.url, key: sqlite.demoKey! }, { base: nodes[0].url, key: demo.secret }], runs);
    rows.push(['GET median ms: SQLite', liteMs.toFixed(3), '', null]);
    rows.push(['GET median ms: PostgreSQL node', pgMs.toFixed(3), `${(pgMs / liteMs).toFixed(2)}× (≤ 2)`, pgMs / liteMs <= 2]);
    rows.push(...(await claimRows(pgServer.url, small ? 1000 : 10_000)));
    const failed = loads.flatMap((l) => l.slices).reduce((sum, f) => sum + f.errors, 0);
    if (failed > 0) rows.push(['failed requests', String(failed), '(0)', false]);
  } finally {
    for (const n of nodes) n.proc.kill('SIGTERM');
    await Promise.all(nodes.map((n) => n.exited));
    for (const stop of stops) await stop().catch(() => {});
    pgServer.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
  for (const [name, value, ratio] of rows) console.log(`${name.padEnd(44)} ${value.padStart(10)}  ${ratio}`);
  const misses = rows.filter((r) => r[3] === false).map((r) => r[0]);
  if (small) {
    console.log(`bench-cluster: PASS (small: ran every part; ratios judged only in a full run)`);
    return 0;
  }
  console.log(misses.length === 0 ? 'bench-cluster: PASS' : `bench-cluster: FAIL (${misses.join('; ')})`);
  return misses.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`bench-cluster: FAIL (${(err as Error).stack ?? err})`);
    process.exit(1);
  },
);

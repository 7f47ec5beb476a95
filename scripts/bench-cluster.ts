// The PostgreSQL engine and the cluster, measured in ONE run on one PostgreSQL server this script starts itself
// (initdb into a temp folder, fsync and synchronous_commit on, as production runs):
//   1. the baseline: a bare node:http server and the same driver (pg), one durable single-row INSERT per POST, at
//      the same number of concurrent clients; then one kopek node's payment creates: creates/s (kopek/baseline ≥ 0.5)
//   2. GET of one payment, one request at a time: median latency on a PostgreSQL node against a SQLite server
//      (PostgreSQL/SQLite ≤ 2), in alternating turns of 100, once PostgreSQL has settled after the loads (a
//      checkpoint, and no autovacuum worker left, waiting 30 s at most)
//   3. CPU spent per create (every kopek process and every PostgreSQL process together, from /proc) with the
//      same load on one node and spread over two, in turns (medians of --rounds): two/one ≤ 1.2. On a 2-core machine throughput cannot show a
//      second node's worth; CPU per request shows what coordination costs. A control, not judged: two nodes
//      each on a database of its own on the same server, sharing nothing (two sharing / two apart is what the
//      coordination itself costs).
// Prints one row per figure, then `bench-cluster: PASS` or `bench-cluster: FAIL (…)`; exits 0 on PASS.
//
// Usage: node --import tsx scripts/bench-cluster.ts [--exe PATH] [--small] [--seconds N] [--connections N]
//   --exe PATH        the executable to measure (default: the sources, through tsx)
//   --small           CI: a few seconds per part; checks that everything runs, judges no ratio
//   --seconds N       measured seconds per load (default 8; --small 2), after a warm-up of 2 s
//   --connections N   concurrent clients of every load (default 32)
//   --rounds N        turns of the baseline, one-node and two-node loads (default 3; --small 1); each figure is
//                     the median of its turns, each ratio the median of the turns' own ratios
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import pg from 'pg';
import { kopekCommand, scriptArgs, intOption, startKopek, ROOT, type KopekServer } from './lib/kopek-process';
import { runLoad } from './lib/load';
import { median, procCpuS, call } from './lib/growth-measure';
import { ownPostgres } from '../test/helpers/own-postgres';
import { openEngine } from '../src/db/maintenance';
import { createDemo } from '../src/cabinet/store';
import { PG_LIMITS } from '../src/db/limits';

const opts = scriptArgs(process.argv.slice(2), { exe: 'value', small: 'switch', seconds: 'value', connections: 'value', rounds: 'value' });
const small = opts.has('small');
const SECONDS = Math.max(1, intOption(opts, 'seconds', small ? 2 : 8));
const CONNECTIONS = Math.max(1, intOption(opts, 'connections', 32));
const ROUNDS = Math.max(1, intOption(opts, 'rounds', small ? 1 : 3));
const WARMUP_MS = small ? 500 : 2000;
/** GETs per turn on one side before the other side's turn. */
const GET_TURN = 100;
/** The longest wait for PostgreSQL to settle before the GETs. */
const SETTLE_MS = 30_000;
const exe = opts.get('exe') as string | undefined;
let dbUrl = '';
const kopek = exe ? kopekCommand(exe, false) : { cmd: process.execPath, args: ['--import', 'tsx', join(ROOT, 'src', 'main.ts')], label: 'node --import tsx src/main.ts' };

/** PIDs of the PostgreSQL server whose postmaster is `root` and of its children (backends, writer, WAL writer…). */
function postgresPids(root: number): number[] {
  const out = [root];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === root) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** CPU seconds of these processes now (the children's own counters: a backend that ended is lost, so loads keep them alive). */
function cpuOf(pids: number[]): number {
  return pids.reduce((sum, p) => sum + (procCpuS(p) || 0), 0);
}

/** The bare service: node:http and the same driver, one durable INSERT per POST (scripts/lib/baseline-pg-server.ts). */
async function baseline(url: string, pgRoot: number): Promise<{ rps: number; cpu_ms_per_create: number }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'lib', 'baseline-pg-server.ts'), url], { stdio: ['ignore', 'ignore', 'pipe'] });
  const base = await new Promise<string>((resolve, reject) => {
    let err = '';
    proc.stderr!.on('data', (c: Buffer) => {
      err += c.toString();
      const m = /listening on (http:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]);
    });
    proc.on('exit', (code) => reject(new Error(`the baseline server exited (${code}): ${err}`)));
  });
  try {
    let cpu0 = 0;
    let cpu1 = 0;
    const pids = (): number[] => [proc.pid!, ...postgresPids(pgRoot)];
    const r = await runLoad(base, {
      connections: CONNECTIONS,
      duration_ms: SECONDS * 1000,
      warmup_ms: WARMUP_MS,
      expect: 201,
      next: () => ({ method: 'POST', path: '/payments', body: JSON.stringify({ amount: 10_000 }) }),
      onWindow: (edge) => (edge === 'start' ? (cpu0 = cpuOf(pids())) : (cpu1 = cpuOf(pids()))),
    });
    return { rps: r.rps, cpu_ms_per_create: ((cpu1 - cpu0) * 1000) / (r.rps * SECONDS) };
  } finally {
    proc.kill('SIGTERM');
  }
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
  errors: number;
  rollbacks_per_create: number;
}

/** Each figure's median over the rounds (errors: their sum). */
function medianFigures(runs: CreateFigures[]): CreateFigures {
  return {
    rps: median(runs.map((r) => r.rps)),
    cpu_ms_per_create: median(runs.map((r) => r.cpu_ms_per_create)),
    errors: runs.reduce((s, r) => s + r.errors, 0),
    rollbacks_per_create: median(runs.map((r) => r.rollbacks_per_create)),
  };
}

/** Creates at CONNECTIONS clients spread evenly over `nodes` (node i with `keys[i]`); returns creates/s and the CPU they cost. */
async function creates(nodes: KopekServer[], keys: string[], pgRoot: number): Promise<CreateFigures> {
  const x0 = await xacts(dbUrl);
  const body = JSON.stringify({ amount: 10_000 });
  const per = Math.max(1, Math.floor(CONNECTIONS / nodes.length));
  let cpu0 = 0;
  let cpu1 = 0;
  const pids = (): number[] => [...nodes.map((n) => n.proc.pid!), ...postgresPids(pgRoot)];
  const results = await Promise.all(
    nodes.map((n, i) =>
      runLoad(n.url, {
        connections: per,
        duration_ms: SECONDS * 1000,
        warmup_ms: WARMUP_MS,
        expect: 201,
        next: () => ({ method: 'POST', path: '/v1/public/payments', headers: { authorization: `Bearer ${keys[i]}` }, body }),
        onWindow: i === 0 ? (edge) => (edge === 'start' ? (cpu0 = cpuOf(pids())) : (cpu1 = cpuOf(pids()))) : undefined,
      }),
    ),
  );
  const rps = results.reduce((s, r) => s + r.rps, 0);
  const x1 = await xacts(dbUrl);
  const made = results.reduce((s, r) => s + r.requests, 0);
  return {
    rps,
    cpu_ms_per_create: ((cpu1 - cpu0) * 1000) / (rps * SECONDS),
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

async function main(): Promise<number> {
  process.env.KOPEK_MASTER_KEY ||= Buffer.alloc(32, 7).toString('base64');
  const pgServer = await ownPostgres();
  const dir = mkdtempSync(join(tmpdir(), 'kopek-bench-cluster-'));
  const rows: Array<[string, string, string, boolean | null]> = [];
  const nodes: KopekServer[] = [];
  try {
    dbUrl = pgServer.url;
    const pgRoot = Number(readFileSync(join(pgServer.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const store = await openEngine(pgServer.url);
    const demo = await createDemo(store, store.now());
    await store.close();
    const args = ['--db', pgServer.url, '--no-demo', '--log-level', 'warn'];
    // Two nodes share the load with the one node's connections between them (a pool of half the size each), so
    // that PostgreSQL runs as many transactions at once in both runs and only the coordination differs. The
    // baseline and the two kopek loads take turns, ROUNDS times, on fresh processes each time, in the opposite
    // order every other round: the database grows through the run (and a checkpoint or an autovacuum lands where
    // it lands), so no side always meets it larger; each side's figures are its medians.
    const half = String(Math.max(1, Math.floor(PG_LIMITS.pool / 2)));
    // The control: two nodes as above, each on a database of its own on the same server, so they share nothing.
    // What two sharing nodes cost beyond it is their coordination; what it costs beyond one node is running two
    // processes on these two cores.
    const apartUrl = await secondDatabase(pgServer.url, 'kopek_apart');
    const apartStore = await openEngine(apartUrl);
    const apartDemo = await createDemo(apartStore, apartStore.now());
    await apartStore.close();
    const bases: Array<{ rps: number; cpu_ms_per_create: number }> = [];
    const ones: CreateFigures[] = [];
    const twos: CreateFigures[] = [];
    const aparts: CreateFigures[] = [];
    const LOADS = ['bare server', 'one node', 'two nodes', 'two nodes apart'] as const;
    for (let round = 0; round < ROUNDS; round++) {
      for (const load of round % 2 === 0 ? LOADS : [...LOADS].reverse()) {
        if (load === 'bare server') {
          const b = await baseline(pgServer.url, pgRoot);
          bases.push(b);
          console.error(`bench-cluster: round ${round + 1}, bare server: ${b.rps.toFixed(0)} creates/s, ${b.cpu_ms_per_create.toFixed(3)} ms of CPU per create`);
          continue;
        }
        if (load === 'one node') nodes.push(await startKopek(kopek, args));
        else {
          nodes.push(await startKopek(kopek, [...args, '--db-pool', half]));
          nodes.push(await startKopek(kopek, load === 'two nodes' ? [...args, '--db-pool', half] : ['--db', apartUrl, '--no-demo', '--log-level', 'warn', '--db-pool', half]));
        }
        const f = await creates(nodes, load === 'two nodes apart' ? [demo.secret, apartDemo.secret] : [demo.secret, demo.secret], pgRoot);
        (load === 'one node' ? ones : load === 'two nodes' ? twos : aparts).push(f);
        console.error(`bench-cluster: round ${round + 1}, ${load}: ${f.rps.toFixed(0)} creates/s, ${f.cpu_ms_per_create.toFixed(3)} ms of CPU per create`);
        for (const n of nodes) n.proc.kill('SIGTERM');
        await Promise.all(nodes.map((n) => n.exited));
        nodes.length = 0;
      }
    }
    const base = { rps: median(bases.map((b) => b.rps)), cpu_ms_per_create: median(bases.map((b) => b.cpu_ms_per_create)) };
    const one = medianFigures(ones);
    const two = medianFigures(twos);
    const apart = medianFigures(aparts);
    // Each ratio is the median of the rounds' own ratios (loads next to each other in time), as bench:seam does.
    const oneToBase = median(ones.map((o, i) => o.rps / bases[i].rps));
    const twoToOne = median(twos.map((t, i) => t.cpu_ms_per_create / ones[i].cpu_ms_per_create));
    rows.push(['creates/s: bare node:http + pg', base.rps.toFixed(0), '', null]);
    rows.push(['creates/s: one kopek node', one.rps.toFixed(0), `${oneToBase.toFixed(2)}× (≥ 0.5)`, oneToBase >= 0.5]);
    rows.push(['CPU ms per create: bare', base.cpu_ms_per_create.toFixed(3), '', null]);
    rows.push(['CPU ms per create: one node', one.cpu_ms_per_create.toFixed(3), '', null]);
    rows.push(['CPU ms per create: two nodes', two.cpu_ms_per_create.toFixed(3), `${twoToOne.toFixed(2)}× (≤ 1.2)`, twoToOne <= 1.2]);
    rows.push(['creates/s: two nodes', two.rps.toFixed(0), '', null]);
    const apartToOne = median(aparts.map((t, i) => t.cpu_ms_per_create / ones[i].cpu_ms_per_create));
    const twoToApart = median(twos.map((t, i) => t.cpu_ms_per_create / aparts[i].cpu_ms_per_create));
    rows.push(['CPU ms per create: two nodes apart', apart.cpu_ms_per_create.toFixed(3), `${apartToOne.toFixed(2)}× one node`, null]);
    rows.push(['two nodes sharing / two nodes apart', `${twoToApart.toFixed(2)}×`, '(coordination)', null]);
    rows.push(['retried transactions per create: one node', one.rollbacks_per_create.toFixed(3), '', null]);
    rows.push(['retried transactions per create: two nodes', two.rollbacks_per_create.toFixed(3), '', null]);
    nodes.push(await startKopek(kopek, args));
    const sqlite = await startKopek(kopek, ['--db', join(dir, 'kopek.db'), '--log-level', 'warn']);
    nodes.push(sqlite);
    const runs = small ? 200 : 2000;
    await settle(pgServer.url);
    const [liteMs, pgMs] = await getLatencies([{ base: sqlite.url, key: sqlite.demoKey! }, { base: nodes[0].url, key: demo.secret }], runs);
    rows.push(['GET median ms: SQLite', liteMs.toFixed(3), '', null]);
    rows.push(['GET median ms: PostgreSQL node', pgMs.toFixed(3), `${(pgMs / liteMs).toFixed(2)}× (≤ 2)`, pgMs / liteMs <= 2]);
    if (one.errors + two.errors + apart.errors > 0) rows.push(['failed requests', String(one.errors + two.errors + apart.errors), '(0)', false]);
  } finally {
    for (const n of nodes) n.proc.kill('SIGTERM');
    await Promise.all(nodes.map((n) => n.exited));
    pgServer.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
  for (const [name, value, ratio] of rows) console.log(`${name.padEnd(44)} ${value.padStart(10)}  ${ratio}`);
  const failed = rows.filter((r) => r[3] === false).map((r) => r[0]);
  if (small) {
    console.log(`bench-cluster: PASS (small: ran every part; ratios judged only in a full run)`);
    return 0;
  }
  console.log(failed.length === 0 ? 'bench-cluster: PASS' : `bench-cluster: FAIL (${failed.join('; ')})`);
  return failed.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`bench-cluster: FAIL (${(err as Error).stack ?? err})`);
    process.exit(1);
  },
);

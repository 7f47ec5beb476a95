import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ROOT, runKopek, startKopek, type KopekCommand, type KopekServer } from './kopek-process';

// The crash test's storage-fault rounds: the disk filling up under concurrent writes, and another process
// holding SQLite's write lock. Each runs on its own database and reports figures and problems.

/** What one fault round saw: lines to print and problems that fail the run. */
export interface RoundReport {
  lines: string[];
  problems: string[];
}

/** Size of the tmpfs the disk-full round mounts, and of the file freed to give space back. */
const DISK_MB = 24;
const FILLER_MB = 6;
/** Concurrent clients, and metadata size of their payments (the reproduction of the issue). */
const FULL_CLIENTS = 48;
const METADATA_BYTES = 900 * 1024;
/** How long the disk-full round writes at most, and how long it keeps writing once 503s appeared. */
const FILL_LIMIT_MS = 20_000;
const FULL_FOR_MS = 1500;
/**
 * How long the outside process holds the write lock (past the server's 5 s wait, so writes both wait and
 * are refused), and the bound on a read or /healthz meanwhile.
 */
const LOCK_HOLD_MS = 6500;
const READ_BOUND_MS = 1000;

type Answer = { status: number; body: any; retryAfter: string | null; ms: number; at: number } | null;

async function call(url: string, key: string | null, method: string, path: string, body?: unknown, timeout_ms = 15_000): Promise<Answer> {
  const t0 = performance.now();
  try {
    const r = await fetch(url + path, {
      method,
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeout_ms),
    });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : null, retryAfter: r.headers.get('retry-after'), ms: performance.now() - t0, at: Date.now() };
  } catch {
    return null;
  }
}

const alive = (s: KopekServer): boolean => s.proc.exitCode === null && s.proc.signalCode === null;
const count = (m: Map<string, number>, k: string): void => void m.set(k, (m.get(k) ?? 0) + 1);
const show = (m: Map<string, number>): string => [...m].map(([k, n]) => `${k}×${n}`).join(' ');

/** GET every id, then restart the server on its database and GET them again; missing ones are problems. */
async function readBack(k: KopekCommand, s: KopekServer, serveArgs: string[], key: string, ids: string[], p: string[], round: string): Promise<KopekServer> {
  for (const id of ids) {
    const g = await call(s.url, key, 'GET', `/v1/public/payments/${id}`);
    if (g?.status !== 200) p.push(`${round}: acknowledged payment ${id} unreadable before the restart (GET answered ${g?.status ?? 'nothing'})`);
  }
  s.proc.kill('SIGTERM');
  const how = await s.exited;
  if (how !== 0) p.push(`${round}: the server exited ${how} on SIGTERM, expected 0: ${s.stderr().split('\n').filter((x) => x && !x.includes('"msg":"request"')).slice(-6).join(' | ').slice(0, 1200)}`);
  const again = await startKopek(k, serveArgs);
  for (const id of ids) {
    const g = await call(again.url, key, 'GET', `/v1/public/payments/${id}`);
    if (g?.status !== 200) p.push(`${round}: acknowledged payment ${id} lost over the restart (GET answered ${g?.status ?? 'nothing'})`);
  }
  const h = await call(again.url, null, 'GET', '/healthz');
  if (h?.status !== 200) p.push(`${round}: /healthz answered ${h?.status ?? 'nothing'} after the restart`);
  return again;
}

function demoKey(k: KopekCommand, db: string): string {
  const d = runKopek(k, ['demo', '--db', db, '--json']);
  if (d.code !== 0) throw new Error(`kopek demo failed: ${d.stderr}`);
  return (JSON.parse(d.stdout) as { key: string }).key;
}

/** A tmpfs of DISK_MB mounted on a fresh folder, or why this machine cannot make one. */
function smallDisk(): { dir: string; remove(): void } | string {
  if (process.getuid?.() !== 0) return 'mounting a tmpfs needs root';
  const dir = mkdtempSync(join(tmpdir(), 'kopek-crash-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${DISK_MB}m,mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    return `mount -t tmpfs failed: ${String((err as { stderr?: Buffer }).stderr ?? (err as Error).message).trim().split('\n')[0]}`;
  }
  return {
    dir,
    remove: () => {
      try {
        execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/** Disk full: 48 clients create ~900 KB payments on a 24 MiB tmpfs until 503s appear, then space returns. */
export async function diskFullRound(k: KopekCommand): Promise<RoundReport> {
  const p: string[] = [];
  const disk = smallDisk();
  if (typeof disk === 'string') return { lines: [`disk-full round: SKIPPED (${disk})`], problems: [] };
  let s: KopekServer | null = null;
  try {
    const db = join(disk.dir, 'kopek.db');
    const filler = join(disk.dir, 'filler');
    writeFileSync(filler, Buffer.alloc(FILLER_MB * 1024 * 1024, 1));
    const key = demoKey(k, db);
    const serveArgs = ['--db', db, '--no-demo', '--sim-delay', '3600', '--log-level', 'warn'];
    s = await startKopek(k, serveArgs);
    const srv = s;
    const statuses = new Map<string, number>();
    const acked: string[] = [];
    const healthWhileFull = new Map<string, number>();
    const t0 = performance.now();
    let fullAt: number | null = null;
    const done = (): boolean => performance.now() - t0 > FILL_LIMIT_MS || (fullAt !== null && performance.now() - fullAt > FULL_FOR_MS) || !alive(srv);
    const metadata = { blob: 'x'.repeat(METADATA_BYTES) };
    const clients = Array.from({ length: FULL_CLIENTS }, async () => {
      while (!done()) {
        const r = await call(srv.url, key, 'POST', '/v1/public/payments', { amount: 10_000, metadata });
        count(statuses, String(r?.status ?? 'no answer'));
        if (r?.status === 201) acked.push(r.body.payment.id);
        else if (r?.status === 503) {
          fullAt ??= performance.now();
          if (r.body?.error?.code !== 'unavailable' || r.retryAfter === null) p.push(`disk-full round: a 503 without the unavailable code or Retry-After: ${JSON.stringify(r.body).slice(0, 200)}`);
          const h = await call(srv.url, null, 'GET', '/healthz');
          count(healthWhileFull, String(h?.status ?? 'no answer'));
        }
      }
    });
    await Promise.all(clients);
    const fill_s = (performance.now() - t0) / 1000;
    if (!alive(srv)) p.push(`disk-full round: the server died while the disk filled (${srv.proc.exitCode ?? srv.proc.signalCode}): ${srv.stderr().slice(-600)}`);
    if (fullAt === null) p.push(`disk-full round: the disk never filled in ${fill_s.toFixed(1)} s (${show(statuses)})`);
    const other = [...statuses.keys()].filter((st) => st !== '201' && st !== '503');
    if (other.length > 0) p.push(`disk-full round: answers other than 201 and 503: ${show(statuses)}`);
    const sick = await call(srv.url, null, 'GET', '/healthz');
    if (fullAt !== null && sick?.status === 200 && !healthWhileFull.has('503')) p.push('disk-full round: /healthz answered 200 while writes failed');

    // Space returns: writes and /healthz recover without a restart.
    unlinkSync(filler);
    let recovered: Answer = null;
    let healthy: Answer = null;
    const r0 = performance.now();
    for (let i = 0; i < 50 && (recovered?.status !== 201 || healthy?.status !== 200); i++) {
      if (recovered?.status !== 201) recovered = await call(srv.url, key, 'POST', '/v1/public/payments', { amount: 10_000 });
      if (recovered?.status === 201) healthy = await call(srv.url, null, 'GET', '/healthz');
      if (recovered?.status !== 201 || healthy?.status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    const recover_ms = performance.now() - r0;
    if (recovered?.status !== 201) p.push(`disk-full round: a write after space returned answered ${recovered?.status ?? 'nothing'}`);
    else acked.push(recovered.body.payment.id);
    if (healthy?.status !== 200) p.push(`disk-full round: /healthz answered ${healthy?.status ?? 'nothing'} after space returned`);

    // The freed room holds new writes but not a checkpoint of the whole WAL into the database file, which
    // a clean shutdown does (with too little room it exits 1 naming the full disk, the WAL still intact):
    // the volume grows, as an operator would make it, before the restart.
    execFileSync('mount', ['-o', `remount,size=${DISK_MB * 3}m`, disk.dir], { stdio: 'ignore' });
    s = await readBack(k, srv, serveArgs, key, acked, p, 'disk-full round');
    s.proc.kill('SIGTERM');
    await s.exited;
    s = null;
    const check = new Database(db, { readonly: true });
    const integrity = (check.pragma('integrity_check') as Array<{ integrity_check: string }>).map((x) => x.integrity_check).join('; ');
    check.close();
    if (integrity !== 'ok') p.push(`disk-full round: integrity_check: ${integrity}`);
    return {
      lines: [
        `disk-full round: ${FULL_CLIENTS} clients, ${METADATA_BYTES >> 10} KiB metadata, ${DISK_MB} MiB tmpfs, ${fill_s.toFixed(1)} s: answers ${show(statuses)}; /healthz while full ${show(healthWhileFull) || 'not asked'}, then ${sick?.status ?? 'nothing'}`,
        `disk-full round: ${FILLER_MB} MiB freed, writes and /healthz back in ${recover_ms.toFixed(0)} ms; acknowledged payments ${acked.length} readable before and after a restart (tmpfs grown to ${DISK_MB * 3} MiB for it); integrity_check ${integrity}`,
      ],
      problems: p,
    };
  } catch (err) {
    p.push(`disk-full round could not run: ${(err as Error).message}`);
    return { lines: [], problems: p };
  } finally {
    if (s) {
      s.proc.kill('SIGKILL');
      await s.exited;
    }
    disk.remove();
  }
}

/** Another process (node + better-sqlite3) that takes the write lock, holds it `hold_ms`, and says when it let go. */
function lockHolder(db: string, hold_ms: number): Promise<{ locked: number; released: Promise<number> }> {
  const code = `
    const Database = require(${JSON.stringify(join(ROOT, 'node_modules', 'better-sqlite3'))});
    const db = new Database(${JSON.stringify(db)});
    db.exec('BEGIN IMMEDIATE');
    process.stdout.write('locked ' + Date.now() + '\\n');
    setTimeout(() => { const at = Date.now(); db.exec('ROLLBACK'); db.close(); process.stdout.write('released ' + at + '\\n'); }, ${hold_ms});`;
  const proc = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  let onLocked!: (at: number) => void;
  let onReleased!: (at: number) => void;
  const released = new Promise<number>((r) => (onReleased = r));
  proc.stdout!.on('data', (c: Buffer) => {
    out += c.toString();
    const l = /locked (\d+)/.exec(out);
    if (l) onLocked(Number(l[1]));
    const r = /released (\d+)/.exec(out);
    if (r) onReleased(Number(r[1]));
  });
  return new Promise((resolve, reject) => {
    onLocked = (locked) => resolve({ locked, released });
    proc.on('exit', (c) => (/locked/.test(out) ? undefined : reject(new Error(`the lock holder exited ${c} before locking`))));
  });
}

/** Outside lock: while another process holds BEGIN IMMEDIATE, reads and /healthz answer within a bound and writes wait or get 503. */
export async function outsideLockRound(k: KopekCommand, workers: number): Promise<RoundReport> {
  const p: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'kopek-crash-lock-'));
  let s: KopekServer | null = null;
  try {
    const db = join(dir, 'kopek.db');
    const key = demoKey(k, db);
    const serveArgs = ['--db', db, '--no-demo', '--sim-delay', '3600', '--log-level', 'warn'];
    s = await startKopek(k, serveArgs);
    const srv = s;
    const existing = await call(srv.url, key, 'POST', '/v1/public/payments', { amount: 10_000 });
    if (existing?.status !== 201) throw new Error(`a payment before the lock answered ${existing?.status ?? 'nothing'}`);
    const acked: string[] = [existing.body.payment.id];
    const holder = await lockHolder(db, LOCK_HOLD_MS);
    let releasedAt: number | null = null;
    void holder.released.then((at) => (releasedAt = at));
    const writes = new Map<string, number>();
    const reads = new Map<string, number>();
    let slowest = 0;
    const committed: Array<{ sent: number; at: number }> = [];
    let refusedWhileLocked = 0;
    // Writers and readers run through the lock and a second past its release.
    const stop = (): boolean => (releasedAt !== null && Date.now() - releasedAt > 1000) || Date.now() - holder.locked > LOCK_HOLD_MS + 20_000;
    const writers = Array.from({ length: workers }, async () => {
      while (!stop()) {
        const sent = Date.now();
        const r = await call(srv.url, key, 'POST', '/v1/public/payments', { amount: 20_000 });
        count(writes, `${r?.status ?? 'no answer'}`);
        if (r?.status === 201) {
          acked.push(r.body.payment.id);
          committed.push({ sent, at: r.at });
        } else if (r?.status === 503 && releasedAt === null) refusedWhileLocked++;
      }
    });
    const readers = Array.from({ length: 2 }, async () => {
      while (!stop()) {
        for (const [path, auth] of [['/healthz', null], [`/v1/public/payments/${existing.body.payment.id}`, key]] as const) {
          const r = await call(srv.url, auth, 'GET', path, undefined, 5000);
          const locked = releasedAt === null;
          count(reads, `${path === '/healthz' ? 'healthz' : 'read'} ${r?.status ?? 'no answer'}`);
          if (locked) slowest = Math.max(slowest, r?.ms ?? Infinity);
          // /healthz may say 503 (storage trouble) once a write was refused for the lock; it must answer, and reads must work.
          const fine = r?.status === 200 || (path === '/healthz' && r?.status === 503 && r.body?.error?.code === 'unavailable');
          if (!fine) p.push(`outside-lock round: GET ${path} answered ${r?.status ?? 'nothing'}${locked ? ' while the lock was held' : ''}`);
        }
        await new Promise((res) => setTimeout(res, 50));
      }
    });
    await Promise.all([...writers, ...readers]);
    if (!alive(srv)) p.push(`outside-lock round: the server died: ${srv.stderr().slice(-600)}`);
    if (slowest > READ_BOUND_MS) p.push(`outside-lock round: a read or /healthz took ${slowest.toFixed(0)} ms while the lock was held (bound ${READ_BOUND_MS} ms)`);
    const other = [...writes.keys()].filter((st) => st !== '201' && st !== '503');
    if (other.length > 0) p.push(`outside-lock round: writes answered other than 201 and 503: ${show(writes)}`);
    // A write sent while the lock was held cannot have committed before the holder let go.
    const early = committed.filter((c) => c.sent > holder.locked && c.at < releasedAt!).length;
    if (early > 0) p.push(`outside-lock round: ${early} writes were acknowledged while another process held the write lock`);
    const waited = committed.filter((c) => c.sent > holder.locked && c.sent < releasedAt!).length;
    let health: Answer = null;
    for (let i = 0; i < 50 && health?.status !== 200; i++) {
      if (i > 0) await new Promise((res) => setTimeout(res, 100));
      health = await call(srv.url, null, 'GET', '/healthz');
    }
    if (health?.status !== 200) p.push(`outside-lock round: /healthz answered ${health?.status ?? 'nothing'} after the lock was released`);
    s = await readBack(k, srv, serveArgs, key, acked, p, 'outside-lock round');
    return {
      lines: [
        `outside-lock round: another process held the write lock ${LOCK_HOLD_MS} ms; ${workers} writers: ${show(writes)}; reads ${show(reads)}, slowest while locked ${slowest.toFixed(0)} ms (bound ${READ_BOUND_MS} ms)`,
        `outside-lock round: writes sent while locked: ${waited} committed after the release, ${refusedWhileLocked} refused 503 before it; acknowledged payments ${acked.length} readable before and after a restart`,
      ],
      problems: p,
    };
  } catch (err) {
    p.push(`outside-lock round could not run: ${(err as Error).message}`);
    return { lines: [], problems: p };
  } finally {
    if (s) {
      s.proc.kill('SIGKILL');
      await s.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

// Crash test of the built executable: mixed load over loopback (payment creates with and without
// Idempotency-Key, sessions the test bank settles, refunds, payouts, idempotent replays, webhooks to a local
// receiver), SIGKILL at a random moment, restart, for N rounds. Then: every 2xx-acknowledged object exists,
// no Idempotency-Key made two objects, `kopek ledger check` passes, every committed webhook event reached
// the receiver at least once, and PRAGMA integrity_check is ok. Then two storage-fault rounds on their own
// databases (scripts/lib/crash-faults.ts): the disk filling up under 48 clients (on a 24 MiB tmpfs mounted
// when run as root, else skipped with the reason) and another process holding SQLite's write lock. Prints
// figures and a PASS/FAIL line.
//
// Usage: node --import tsx scripts/crash-test.ts [--rounds N] [--workers N] [--seed N] [--exe PATH]
//   --rounds N   kill/restart rounds (default 20; CI uses 3)
//   --workers N  concurrent clients (default 8)
//   --seed N     seed of the random choices and kill moments (default: random, printed)
//   --exe PATH   the executable (default dist/kopek, built first when missing)
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { diskFullRound, outsideLockRound } from './lib/crash-faults';
import { ensureBuilt, kopekCommand, runKopek, startKopek, scriptArgs, intOption, type KopekServer } from './lib/kopek-process';

/** Wall-clock bound of the whole run, whatever the round count. */
const DEADLINE_MS = 10 * 60_000;

/** A small seeded generator (mulberry32), so a failing run can be replayed with --seed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What clients were told succeeded (2xx), and what they sent under Idempotency-Keys. */
interface Ledger {
  payments: Map<string, { key?: string }>;
  refunds: Map<string, string>;
  payouts: Set<string>;
  /** Key → body sent, and the id a 2xx answer gave (once one did). */
  keys: Map<string, { body: Record<string, unknown>; id?: string }>;
  sent: number;
  acked: number;
  replays: number;
  problems: string[];
}

async function call(url: string, key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any } | null> {
  try {
    const r = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : null };
  } catch {
    return null; // killed mid-request: not acknowledged
  }
}

function pick<T>(r: () => number, xs: T[]): T | undefined {
  return xs.length === 0 ? undefined : xs[Math.floor(r() * xs.length)];
}

/** One client: random operations until `stop()` says so. */
async function worker(url: string, key: string, l: Ledger, r: () => number, tag: string, stop: () => boolean): Promise<void> {
  let n = 0;
  while (!stop()) {
    n++;
    const roll = r();
    l.sent++;
    if (roll < 0.35) {
      const body: Record<string, unknown> = { amount: (1 + Math.floor(r() * 50)) * 1000, method: 'sbp' };
      const idem = r() < 0.5 ? `ct-${tag}-${n}` : undefined;
      if (idem) {
        body.order_id = idem;
        l.keys.set(idem, { body });
      }
      const res = await call(url, key, 'POST', '/v1/public/payments', body, idem ? { 'Idempotency-Key': idem } : {});
      if (res?.status === 201) {
        l.acked++;
        l.payments.set(res.body.payment.id, { key: idem });
        if (idem) l.keys.get(idem)!.id = res.body.payment.id;
      }
    } else if (roll < 0.55) {
      const id = pick(r, [...l.payments.keys()].slice(-50));
      if (id) await call(url, key, 'POST', `/v1/test/payments/${id}/simulate`, { action: 'open_session' });
    } else if (roll < 0.7) {
      const id = pick(r, [...l.payments.keys()]);
      const res = id ? await call(url, key, 'POST', `/v1/public/payments/${id}/refund`, { amount: 100 }) : null;
      if (res?.status === 201) {
        l.acked++;
        l.refunds.set(res.body.id, id!);
      }
    } else if (roll < 0.85) {
      const res = await call(url, key, 'POST', '/v1/public/payouts', { method: 'payouts_sbp', amount: (1 + Math.floor(r() * 5)) * 100, phone: '+79001234567', bank_id: '100000000004', full_name: 'Crash Test' });
      if (res?.status === 201) {
        l.acked++;
        l.payouts.add(res.body.payout.id);
      }
    } else {
      const [idem, rec] = pick(r, [...l.keys.entries()]) ?? [];
      if (!idem || !rec) continue;
      const res = await call(url, key, 'POST', '/v1/public/payments', rec.body, { 'Idempotency-Key': idem });
      if (res && (res.status === 200 || res.status === 201)) {
        const id = res.body.payment.id as string;
        if (rec.id !== undefined && rec.id !== id) l.problems.push(`Idempotency-Key "${idem}" answered payment ${id} after ${rec.id}`);
        if (res.status === 200) l.replays++;
        rec.id = id;
        l.payments.set(id, { key: idem });
      }
    }
  }
}

/** The local webhook receiver: records every event id it was sent (several deliveries of one id are fine). */
async function startReceiver(): Promise<{ url: string; ids: Map<string, number>; server: Server }> {
  const ids = new Map<string, number>();
  const server = createServer((req, res) => {
    const id = String(req.headers['x-psp-event-id'] ?? '');
    req.resume();
    req.on('end', () => {
      ids.set(id, (ids.get(id) ?? 0) + 1);
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, ids, server };
}

/** The last lines of a server's stderr that are not access-log lines, joined for one problem line. */
function tail(stderr: string): string {
  return stderr.split('\n').filter((x) => x && !x.includes('"msg":"request"')).slice(-8).join(' | ').slice(0, 1500);
}

async function main(): Promise<number> {
  const opts = scriptArgs(process.argv.slice(2), { rounds: 'value', workers: 'value', seed: 'value', exe: 'value' });
  const rounds = intOption(opts, 'rounds', 20);
  const workers = intOption(opts, 'workers', 8);
  const seed = opts.has('seed') ? intOption(opts, 'seed', 0) : Math.floor(Math.random() * 2 ** 31);
  if (!opts.has('exe')) ensureBuilt();
  const k = kopekCommand(opts.get('exe') as string | undefined, false);
  const r = rng(seed);
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'kopek-crash-'));
  const db = join(dir, 'kopek.db');
  const receiver = await startReceiver();
  const l: Ledger = { payments: new Map(), refunds: new Map(), payouts: new Set(), keys: new Map(), sent: 0, acked: 0, replays: 0, problems: [] };
  const serveArgs = ['--db', db, '--no-demo', '--sim-delay', '0.2', '--log-level', 'warn'];
  let server: KopekServer | null = null;
  console.log(`crash-test: ${k.label} (${runKopek(k, ['--version']).stdout.trim() || 'no --version answer'}), ${rounds} rounds, ${workers} workers, seed ${seed}`);
  try {
    const demo = runKopek(k, ['demo', '--db', db, '--json']);
    if (demo.code !== 0) throw new Error(`kopek demo failed: ${demo.stderr}`);
    const { key, shop_id } = JSON.parse(demo.stdout) as { key: string; shop_id: string };
    const hook = runKopek(k, ['webhook', 'add', '--shop', shop_id, '--url', receiver.url, '--db', db]);
    if (hook.code !== 0) throw new Error(`kopek webhook add failed: ${hook.stderr}`);

    let kills = 0;
    for (let round = 1; round <= rounds && Date.now() - started < DEADLINE_MS; round++) {
      server = await startKopek(k, serveArgs);
      const s = server;
      let stopped = false;
      const clients = Array.from({ length: workers }, (_, w) => worker(s.url, key, l, r, `${round}-${w}`, () => stopped));
      // Kill at a random moment of the load: early (during restart recovery) as well as late.
      await new Promise((res) => setTimeout(res, 100 + Math.floor(r() * 1400)));
      s.proc.kill('SIGKILL');
      kills++;
      const how = await s.exited;
      // Only our SIGKILL may end a round's server: one that ended by itself crashed (a native abort, say).
      if (how !== 'SIGKILL') l.problems.push(`round ${round}: the server ended by itself (${how}) before the kill: ${tail(s.stderr())}`);
      stopped = true;
      await Promise.all(clients);
      server = null;
    }

    // Recover once more and let the test clock run every retry and settlement that came due.
    server = await startKopek(k, serveArgs);
    const s = server;
    const ro = new Database(db, { readonly: true });
    const webhookEvents = (): string[] => (ro.prepare('SELECT id FROM events WHERE webhook_event IS NOT NULL').all() as Array<{ id: string }>).map((e) => e.id);
    let missing: string[] = [];
    for (let i = 0; i < 60; i++) {
      await call(s.url, key, 'POST', '/v1/test/clock/advance', { seconds: 3600 });
      await new Promise((res) => setTimeout(res, 250));
      missing = webhookEvents().filter((id) => !receiver.ids.has(id));
      if (missing.length === 0) break;
    }
    const events = webhookEvents();

    let checked = 0;
    for (const id of l.payments.keys()) {
      const g = await call(s.url, key, 'GET', `/v1/public/payments/${id}`);
      checked++;
      if (g?.status !== 200) l.problems.push(`acknowledged payment ${id} is missing (GET answered ${g?.status ?? 'nothing'})`);
    }
    for (const id of l.payouts) {
      const g = await call(s.url, key, 'GET', `/v1/public/payouts/${id}`);
      checked++;
      if (g?.status !== 200) l.problems.push(`acknowledged payout ${id} is missing (GET answered ${g?.status ?? 'nothing'})`);
    }
    const refundsByPayment = new Map<string, Set<string>>();
    for (const [id, pid] of l.refunds) {
      let set = refundsByPayment.get(pid);
      if (!set) {
        const g = await call(s.url, key, 'GET', `/v1/public/payments/${pid}`);
        set = new Set(((g?.body?.refunds ?? []) as Array<{ id: string }>).map((x) => x.id));
        refundsByPayment.set(pid, set);
      }
      checked++;
      if (!set.has(id)) l.problems.push(`acknowledged refund ${id} of payment ${pid} is missing`);
    }
    const doubled = ro.prepare(`SELECT order_id, count(*) AS n FROM payments WHERE order_id LIKE 'ct-%' GROUP BY order_id HAVING n > 1`).all() as Array<{ order_id: string; n: number }>;
    for (const d of doubled) l.problems.push(`Idempotency-Key "${d.order_id}" produced ${d.n} payments`);
    for (const id of missing) l.problems.push(`webhook event ${id} was committed but never delivered`);
    ro.close();

    if (s.proc.exitCode !== null || s.proc.signalCode !== null) l.problems.push(`the server ended by itself during the checks: ${tail(s.stderr())}`);
    s.proc.kill('SIGTERM');
    const how = await s.exited;
    if (how !== 0) l.problems.push(`the server exited ${how} on SIGTERM, expected 0: ${tail(s.stderr())}`);
    server = null;
    const ledger = runKopek(k, ['ledger', 'check', '--db', db]);
    // The head of the output says what failed (a crash puts its stack after the message).
    if (ledger.code !== 0) l.problems.push(`kopek ledger check exited ${ledger.code}: ${(ledger.stdout + ledger.stderr).split('\n').filter(Boolean).slice(0, 12).join(' | ')}`);
    const check = new Database(db, { readonly: true });
    const integrity = (check.pragma('integrity_check') as Array<{ integrity_check: string }>).map((x) => x.integrity_check).join('; ');
    check.close();
    if (integrity !== 'ok') l.problems.push(`integrity_check: ${integrity}`);

    const duplicates = [...receiver.ids.values()].filter((n) => n > 1).length;
    console.log(`rounds ${kills} (SIGKILL each), ${((Date.now() - started) / 1000).toFixed(1)} s`);
    console.log(`requests sent ${l.sent}, acknowledged creates ${l.acked}: payments ${l.payments.size}, refunds ${l.refunds.size}, payouts ${l.payouts.size}`);
    console.log(`idempotency keys used ${l.keys.size}, replays answered 200 ${l.replays}, keys with two objects ${doubled.length}`);
    console.log(`acknowledged objects checked ${checked}, missing ${l.problems.filter((p) => p.includes('missing')).length}`);
    console.log(`webhook events committed ${events.length}, delivered ${events.length - missing.length}, delivered more than once ${duplicates}`);
    console.log(`ledger check ${ledger.code === 0 ? 'ok' : 'FAILED'}, integrity_check ${integrity}`);

    for (const round of [() => diskFullRound(k), () => outsideLockRound(k, workers)]) {
      const report = await round();
      for (const line of report.lines) console.log(line);
      l.problems.push(...report.problems);
    }
  } catch (err) {
    l.problems.push(`crash test could not run: ${(err as Error).message}`);
  } finally {
    if (server) {
      server.proc.kill('SIGKILL');
      await server.exited;
    }
    receiver.server.closeAllConnections();
    receiver.server.close();
    rmSync(dir, { recursive: true, force: true });
  }
  for (const p of l.problems.slice(0, 20)) console.log(`  PROBLEM ${p}`);
  console.log(l.problems.length === 0 ? 'crash-test: PASS' : `crash-test: FAIL (${l.problems.length} problems; replay with --seed ${seed})`);
  return l.problems.length === 0 ? 0 : 1;
}

main().then(
  (code) => (process.exitCode = code),
  (err) => {
    console.log(`crash-test: FAIL: ${(err as Error).message}`);
    process.exitCode = 1;
  },
);

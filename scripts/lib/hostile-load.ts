import { connect, type Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { send, judge, type Verdict } from './fuzz-model';
import { rawExchange, type HostileCase, type RawOutcome } from './hostile-raw';
import { startHangs, startPrompt, payIntoHangs, waitHeld, otherShopDelay } from './hanging-receivers';

// The fuzz's hostile neighbours, many connections at once: idle sockets, keyless large bodies, and one
// shop's hanging webhook receivers. Loopback only, bounded in count and time.

/** Idle sockets opened at once; each must be closed by the server, which keeps answering meanwhile. */
const IDLE_SOCKETS = 400;
/** Keyless connections announcing a 1 MiB body, and how much of it each actually sends. */
const KEYLESS = 200;
const KEYLESS_SENT = 64 * 1024;
/** Server memory the keyless connections may add at their peak (they announce 200 MiB in all). */
const KEYLESS_RSS_MB = 64;
/** One shop's hanging receivers and their payments; another shop's webhook must arrive within the bound. */
const HANGING = 20;
const HANGING_PAYMENTS = 160;
const OTHER_SHOP_BOUND_MS = 3000;
/** /healthz must answer within this beside the hostile connections. */
const HEALTH_BOUND_MS = 1000;

/** The server's resident memory in MiB. */
export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function timedHealth(base: string, what: string): Promise<Verdict> {
  const t0 = performance.now();
  const res = await send(base, { method: 'GET', path: '/healthz', headers: {} }, HEALTH_BOUND_MS * 3).catch(() => null);
  const ms = performance.now() - t0;
  if (res?.status !== 200) return `/healthz answered ${res?.status ?? 'nothing'} beside ${what}`;
  if (ms > HEALTH_BOUND_MS) return `/healthz took ${ms.toFixed(0)} ms beside ${what} (bound ${HEALTH_BOUND_MS} ms)`;
  return judge({ method: 'GET', path: '/healthz', headers: {} }, res);
}

/** Resolves with the ms until the server closes `sock`, or -1 after `limit_ms`. */
function closedWithin(sock: Socket, limit_ms: number): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    if (sock.destroyed) return resolve(0);
    const timer = setTimeout(() => resolve(-1), limit_ms);
    sock.on('close', () => {
      clearTimeout(timer);
      resolve(performance.now() - t0);
    });
  });
}

/** Context the load cases need beside the server's address. */
export interface LoadContext {
  headersTimeoutMs: number;
  /** The server's process id, for its memory. */
  pid: number;
  /** A test key of a new shop of its own. */
  newShopKey(): string;
  /** Lines of figures the cases report. */
  figures: string[];
}

/** The hostile-load cases: idle sockets, keyless large bodies, hanging webhook receivers. */
export function loadCases(c: LoadContext): HostileCase[] {
  return [
    {
      name: `${IDLE_SOCKETS} idle sockets (no byte sent) are closed by the server, which keeps answering`,
      run: async (base) => {
        const u = new URL(base);
        const idle = Array.from({ length: IDLE_SOCKETS }, () => connect({ host: u.hostname, port: Number(u.port) }).on('error', () => {}));
        try {
          const closing = idle.map((s) => closedWithin(s, c.headersTimeoutMs * 3 + 2000));
          await new Promise((r) => setTimeout(r, 200));
          const h = await timedHealth(base, `${IDLE_SOCKETS} idle sockets`);
          if (h) return h;
          const closed = await Promise.all(closing);
          const open = closed.filter((ms) => ms < 0).length;
          c.figures.push(`idle sockets: ${IDLE_SOCKETS} closed by the server, the last after ${Math.max(...closed).toFixed(0)} ms (headers timeout ${c.headersTimeoutMs} ms)`);
          if (open > 0) return `${open} of ${IDLE_SOCKETS} idle sockets still open after ${c.headersTimeoutMs * 3 + 2000} ms`;
          return timedHealth(base, 'the closed idle sockets');
        } finally {
          for (const s of idle) s.destroy();
        }
      },
    },
    {
      name: `${KEYLESS} keyless connections announcing 1 MiB bodies are refused 401 from their headers`,
      run: async (base) => {
        const rss0 = rssMb(c.pid);
        let peak = rss0;
        const sampler = setInterval(() => (peak = Math.max(peak, rssMb(c.pid))), 20);
        const head = Buffer.from(`POST /v1/public/payments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n`);
        const part = Buffer.concat([head, Buffer.alloc(KEYLESS_SENT, 0x20)]);
        let outcomes: RawOutcome[];
        try {
          outcomes = await Promise.all(Array.from({ length: KEYLESS }, () => rawExchange(base, [part], { wait_ms: c.headersTimeoutMs * 3 + 5000 })));
        } finally {
          clearInterval(sampler);
        }
        const by = new Map<string, number>();
        for (const o of outcomes) by.set(o.status ? String(o.status) : o.closed ? 'closed' : 'hanging', (by.get(o.status ? String(o.status) : o.closed ? 'closed' : 'hanging') ?? 0) + 1);
        const grew = peak - rss0;
        c.figures.push(`keyless 1 MiB bodies: ${KEYLESS} connections, answers ${[...by].map(([k, n]) => `${k}×${n}`).join(' ')}; server RSS ${rss0.toFixed(0)} → peak ${peak.toFixed(0)} MiB (+${grew.toFixed(0)}, bound +${KEYLESS_RSS_MB})`);
        const wrong = outcomes.filter((o) => o.status !== 401 && !(o.status === 0 && o.closed));
        if (wrong.length > 0) return `${wrong.length} keyless connections answered other than 401 (or a close): ${wrong[0].status || 'no answer'} ${wrong[0].text.slice(0, 200)}`;
        if (!by.has('401')) return 'no keyless connection was answered 401';
        const no401 = outcomes.find((o) => o.status === 401 && !o.text.includes('"code":"unauthorized"'));
        if (no401) return `a 401 without the unauthorized code: ${no401.text.slice(0, 300)}`;
        if (grew > KEYLESS_RSS_MB) return `server memory grew ${grew.toFixed(0)} MiB under keyless bodies (bound ${KEYLESS_RSS_MB} MiB)`;
        return timedHealth(base, 'the keyless bodies');
      },
    },
    {
      name: `${HANGING} hanging webhook receivers of one shop (${HANGING_PAYMENTS} payments) delay no other shop's webhook`,
      run: async (base) => {
        const hangs = await startHangs(HANGING);
        const prompt = await startPrompt();
        try {
          const noisy = c.newShopKey();
          const other = c.newShopKey();
          await payIntoHangs(base, noisy, hangs, HANGING_PAYMENTS);
          const held = await waitHeld(hangs, 16, 5000);
          const h = await timedHealth(base, `${held} hanging webhook attempts`);
          if (h) return h;
          const ms = await otherShopDelay(base, other, prompt, OTHER_SHOP_BOUND_MS * 3);
          c.figures.push(`hanging webhook receivers: ${HANGING} of one shop hold ${held} connections behind ${HANGING_PAYMENTS} payments; another shop's webhook arrived in ${ms === null ? 'never' : `${ms.toFixed(0)} ms`}`);
          if (ms === null || ms > OTHER_SHOP_BOUND_MS) return `another shop's webhook took ${ms === null ? 'longer than ' + OTHER_SHOP_BOUND_MS * 3 : ms.toFixed(0)} ms behind hanging receivers (bound ${OTHER_SHOP_BOUND_MS} ms)`;
          return null;
        } finally {
          await hangs.close();
          await prompt.close();
        }
      },
    },
  ];
}

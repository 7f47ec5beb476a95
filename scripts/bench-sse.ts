// SSE fan-out memory benchmark: N clients connected at once on loopback to a server in a child process;
// prints the server's RSS before and after, per client, and a PASS/FAIL line against the bound.
//   node --import tsx scripts/bench-sse.ts          # 1,000 clients
//   node --import tsx scripts/bench-sse.ts --small  # 100 clients, for CI
import { fork, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The stated bound: server memory added per connected client. */
const BOUND_BYTES_PER_CLIENT = 64 * 1024;

type Msg = { type: 'ready'; url: string; key: string } | { type: 'rss'; rss: number; clients: number } | { type: 'sent' };

async function child(): Promise<void> {
  const { startApp } = await import('../src/app');
  const { defaultConfig } = await import('../src/platform/config');
  const { createLogger } = await import('../src/platform/log');
  const dir = process.env.BENCH_DIR!;
  const running = await startApp({ ...defaultConfig(), port: 0, db: join(dir, 'bench.db'), demo: false, logLevel: 'silent' }, { log: createLogger('silent') });
  const { createDemo } = await import('../src/money/shops/store');
  const demo = await createDemo(running.app.store, Date.now());
  const send = (m: Msg): void => void process.send!(m);
  process.on('message', (m: { type: string }) => {
    if (m.type === 'rss') {
      global.gc?.();
      send({ type: 'rss', rss: process.memoryUsage().rss, clients: running.app.stream.clientCount });
    } else if (m.type === 'emit') {
      const app = running.app;
      void (async () => {
        const at = await app.clocks.now(app.store, demo.shop.id, 'test');
        await app.store.tx(async (tx) =>
          app.events.append(tx, { merchantId: demo.merchant.id, shopId: demo.shop.id, mode: 'test', kind: 'payment.created', payload: { id: 'bench', amount: 100, status: 'pending' }, at }),
        );
        send({ type: 'sent' });
      })();
    } else if (m.type === 'stop') {
      void running.close().then(() => process.exit(0));
    }
  });
  send({ type: 'ready', url: running.url, key: demo.secret });
}

function ask(c: ChildProcess, type: string, want: Msg['type']): Promise<Msg> {
  return new Promise((resolve) => {
    const on = (m: Msg): void => {
      if (m.type !== want) return;
      c.off('message', on);
      resolve(m);
    };
    c.on('message', on);
    c.send({ type });
  });
}

async function main(): Promise<void> {
  const n = process.argv.includes('--small') ? 100 : 1000;
  const dir = mkdtempSync(join(tmpdir(), 'kopek-bench-sse-'));
  const c = fork(__filename, ['--child'], { env: { ...process.env, BENCH_DIR: dir }, execArgv: ['--import', 'tsx', '--expose-gc'] });
  try {
    const ready = await new Promise<Msg & { type: 'ready' }>((r) => c.once('message', (m: Msg) => r(m as Msg & { type: 'ready' })));
    const before = (await ask(c, 'rss', 'rss')) as Msg & { type: 'rss' };
    let gotEvent = 0;
    let allGot!: () => void;
    const everyone = new Promise<void>((r) => (allGot = r));
    const started = Date.now();
    await Promise.all(
      Array.from({ length: n }, () =>
        new Promise<void>((resolve, reject) => {
          const req = request(new URL('/v1/public/events', ready.url), { headers: { authorization: `Bearer ${ready.key}` }, agent: false }, (res) => {
            res.setEncoding('utf8');
            let seen = false;
            res.on('data', (d: string) => {
              if (d.includes(': connected')) resolve();
              if (!seen && d.includes('event: payment.created')) {
                seen = true;
                if (++gotEvent === n) allGot();
              }
            });
          });
          req.on('error', reject);
          req.end();
        }),
      ),
    );
    const connect_ms = Date.now() - started;
    const after = (await ask(c, 'rss', 'rss')) as Msg & { type: 'rss' };
    const t0 = Date.now();
    await ask(c, 'emit', 'sent');
    await everyone;
    const fanout_ms = Date.now() - t0;
    const per = (after.rss - before.rss) / n;
    console.log(`clients connected: ${after.clients} of ${n} in ${connect_ms} ms`);
    console.log(`server RSS before: ${(before.rss / 1048576).toFixed(1)} MiB, after: ${(after.rss / 1048576).toFixed(1)} MiB`);
    console.log(`per client: ${(per / 1024).toFixed(1)} KiB (bound ${BOUND_BYTES_PER_CLIENT / 1024} KiB)`);
    console.log(`one event reached all ${n} clients in ${fanout_ms} ms`);
    const ok = after.clients === n && per <= BOUND_BYTES_PER_CLIENT;
    console.log(`${ok ? 'PASS' : 'FAIL'}: ${n} SSE clients, ${(per / 1024).toFixed(1)} KiB each, bound ${BOUND_BYTES_PER_CLIENT / 1024} KiB`);
    process.exitCode = ok ? 0 : 1;
  } finally {
    c.send({ type: 'stop' });
    await new Promise((r) => c.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
    process.exit();
  }
}

if (process.argv.includes('--child')) void child();
else void main();

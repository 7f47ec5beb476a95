import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from './base/config';
import type { App } from './app-types';
import { openStorage } from './db/maintenance';
import { acquireServerLock } from './db/server-lock';
import { writeProblem } from './db/access';
import { sealPlainSecrets } from './secrets/at-rest';
import type { Store } from './db/store';
import { Clocks } from './scheduler/clock';
import { Scheduler } from './scheduler/jobs';
import { Events } from './events/emit';
import { PaymentHooks } from './payments/hooks';
import { createLogger, type Logger } from './base/log';
import { buildRouter } from './routes';
import { createHttpServer } from './http/server';
import { RateLimiter } from './auth/rate-limit';
import { VERSION } from './base/version';
import { registerDomains } from './domains';
import { Metrics } from './system/metrics';
import { EventStreamHub } from './events/stream';
import { PaymentViewCache } from './payments/view-cache';
import { startWebhooks } from './webhooks/register';
import { Retention } from './system/retention';
import { KeyUsage } from './auth/key-usage';
import { BankDirectory } from './bank-port/directory';
import { NoBank } from './bank-port/none';
import type { BankPort } from './bank-port/port';
import { SimulatorBank } from './simulator/bank';
import { TBankBank } from './tbank/connector';

/** The App's services that are built from the App itself, right after it. */
type Services = 'stream' | 'viewCache' | 'webhooks' | 'metrics' | 'retention' | 'keyUsage';

/** How long shutdown waits for in-flight requests before cutting connections. */
const SHUTDOWN_DEADLINE_MS = 10_000;

/** A started service. */
export interface Running {
  app: App;
  server: Server;
  /** The address clients use, e.g. http://127.0.0.1:8080. */
  url: string;
  /** Stop accepting, finish in-flight requests, stop timers, close the database. */
  close(): Promise<void>;
}

/** Options for tests and embedding: a logger sink, a real-time source, and banks besides the built-in ones. */
export interface StartOptions {
  log?: Logger;
  realNow?: () => number;
  /** More banks behind the port, registered as the built-in ones are; shops reach them by provider name. */
  banks?: Array<(app: App) => BankPort>;
}

/** Wiring only: open the database, clock, scheduler, events, routes and server; listen. */
export async function startApp(config: Config, opts: StartOptions = {}): Promise<Running> {
  const log = opts.log ?? createLogger(config.logLevel);
  // A server that could not write would accept requests only to fail every one of them: refuse to start.
  const problem = writeProblem(config.db);
  if (problem) throw new Error(`cannot start on "${config.db}": ${problem}; kopek writes the file and its -wal and -shm beside it`);
  // Before the database opens: a second server on the same file is refused before it reads or writes anything.
  const lock = await acquireServerLock(config.db);
  let store: Store;
  try {
    // Every write of the server goes through the store, which syncs the WAL itself off the event loop.
    store = openStorage(config.db, { sync: 'store', log });
  } catch (err) {
    await lock?.release();
    throw err;
  }
  // Secrets written in clear by an older version are sealed under the master key before anything reads them.
  try {
    await sealPlainSecrets(store);
  } catch (err) {
    await store.close();
    await lock?.release();
    throw err;
  }
  // Test clocks are read from the database by whoever reads them (shops.test_clock_offset_ms): nothing to load.
  const clocks = new Clocks(opts.realNow);
  const scheduler = new Scheduler(store, clocks, log, { leaseMs: Math.round(config.jobLeaseSeconds * 1000) });
  const events = new Events();
  const closers: Array<() => void | Promise<void>> = [];
  let listening: AddressInfo | null = null;
  // The services that need the app itself (stream, caches, workers) are attached right below, before
  // anything can run.
  const app = {
    config,
    store,
    clocks,
    scheduler,
    events,
    paymentHooks: new PaymentHooks(),
    banks: new BankDirectory(),
    log,
    version: VERSION,
    closing: false,
    baseUrl: () => config.baseUrl ?? `http://${hostForUrl(config.host)}:${listening?.port ?? config.port}`,
    payPageUrl: () => config.payPageUrl ?? app.baseUrl(),
    onClose: (fn: () => void | Promise<void>) => {
      closers.push(fn);
    },
  } satisfies Omit<App, Services> as App;
  // The banks behind the port: the simulator for every test-mode operation, no bank for a live shop
  // without an acquirer, and whatever the embedder adds.
  app.banks.register(new SimulatorBank(app));
  app.banks.register(new NoBank());
  app.banks.register(new TBankBank(app));
  for (const make of opts.banks ?? []) app.banks.register(make(app));
  // Made before the first write, so the view cache's triggers watch every write.
  app.viewCache = new PaymentViewCache(store);
  app.metrics = new Metrics(clocks.real());
  // Webhook deliveries are written in the transaction of each event, before the domains' own sinks react.
  app.webhooks = startWebhooks(app);
  app.stream = new EventStreamHub(app);
  app.retention = new Retention(app);
  app.keyUsage = new KeyUsage(app);
  registerDomains(app);
  const router = buildRouter();
  const limiter = config.rateLimitPerSecond > 0 ? new RateLimiter(config.rateLimitPerSecond, config.rateLimitBurst) : null;
  const server = createHttpServer(app, router, limiter, app.metrics.observe);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    // Nothing may keep the process alive once it cannot serve: a supervisor must see it exit and restart it.
    for (const fn of [...closers].reverse()) await fn();
    await scheduler.stop();
    await store.close();
    await lock?.release();
    throw new Error(listenError(config.host, config.port, err as NodeJS.ErrnoException));
  }
  listening = server.address() as AddressInfo;
  // With the server lock held, no other server runs on this file: claims left in it are a dead process's.
  scheduler.start({ sole: lock !== null });
  app.retention.start();
  let closed: Promise<void> | null = null;
  const close = (): Promise<void> => {
    closed ??= (async () => {
      app.closing = true;
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      // Connections that finish their request become idle; close them as they do, and cut what is left at the deadline.
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      const deadline = setTimeout(() => server.closeAllConnections(), SHUTDOWN_DEADLINE_MS);
      for (const fn of [...closers].reverse()) await fn();
      await stopped;
      clearInterval(sweep);
      clearTimeout(deadline);
      await app.retention.stop();
      await scheduler.stop();
      await store.close();
      await lock?.release();
    })();
    return closed;
  };
  return { app, server, url: app.baseUrl(), close };
}

/** One line that says why the server cannot listen. */
function listenError(host: string, port: number, err: NodeJS.ErrnoException): string {
  const why =
    err.code === 'EADDRINUSE'
      ? 'the address is already in use (another process listens there)'
      : err.code === 'EACCES'
        ? 'permission denied (ports below 1024 need privileges)'
        : err.code === 'EADDRNOTAVAIL'
          ? 'the address is not one of this machine'
          : err.message;
  return `cannot listen on ${host.includes(':') ? `[${host}]` : host}:${port}: ${why}`;
}

function hostForUrl(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

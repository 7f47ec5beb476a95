import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from './config';
import type { App } from './app-types';
import { openDatabase } from './db/open';
import { Store } from './db/tx';
import { Clocks } from './scheduler/clock';
import { Scheduler } from './scheduler/jobs';
import { Events } from './events/emit';
import { createLogger, type Logger } from './log';
import { buildRouter } from './http/routes';
import { createHttpServer } from './http/server';
import { RateLimiter } from './auth/rate-limit';
import { VERSION } from './version';
import { registerDomains } from './domains';
import { registerMetrics } from './system/metrics';

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

/** Options for tests and embedding: a logger sink and a real-time source. */
export interface StartOptions {
  log?: Logger;
  realNow?: () => number;
}

/** Wiring only: open the database, clock, scheduler, events, routes and server; listen. */
export async function startApp(config: Config, opts: StartOptions = {}): Promise<Running> {
  const log = opts.log ?? createLogger(config.logLevel);
  const db = openDatabase(config.db);
  // Every write of the server goes through the store, which syncs the WAL itself off the event loop.
  const store = new Store(db, { sync: 'store', log });
  const clocks = new Clocks(store, opts.realNow);
  const scheduler = new Scheduler(store, clocks, log);
  const events = new Events();
  const closers: Array<() => void | Promise<void>> = [];
  let listening: AddressInfo | null = null;
  const app: App = {
    config,
    store,
    clocks,
    scheduler,
    events,
    log,
    version: VERSION,
    closing: false,
    baseUrl: () => config.baseUrl ?? `http://${hostForUrl(config.host)}:${listening?.port ?? config.port}`,
    payPageUrl: () => config.payPageUrl ?? app.baseUrl(),
    onClose: (fn) => closers.push(fn),
  };
  registerDomains(app);
  const router = buildRouter();
  const limiter = config.rateLimitPerSecond > 0 ? new RateLimiter(config.rateLimitPerSecond, config.rateLimitBurst) : null;
  const server = createHttpServer(app, router, limiter, registerMetrics(app).observe);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  listening = server.address() as AddressInfo;
  scheduler.start();
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
      await scheduler.stop();
      store.close();
    })();
    return closed;
  };
  return { app, server, url: app.baseUrl(), close };
}

function hostForUrl(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

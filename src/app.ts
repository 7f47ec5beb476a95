import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from './platform/config';
import { PG_LIMITS } from './platform/storage/limits';
import type { App } from './app-types';
import { openEngine, openStorage } from './platform/storage/maintenance';
import { isPostgresUrl } from './platform/storage/postgres/open';
import { acquireServerLock, type ServerLock } from './platform/storage/sqlite/server-lock';
import { writeProblem } from './platform/storage/sqlite/open';
import { sealPlainSecrets } from './platform/secrets/at-rest';
import type { Store } from './platform/storage/store';
import { createLogger, type Logger } from './platform/log';
import { buildCore, type CoreControl } from './money/core/build';
import type { Core } from './money/core/core';
import type { Module } from './money/core/module';
import { mountModules } from './money/core/mount';
import { PaymentHooks, type PaymentsCore } from './money/payments/core';
import { PaymentCreates } from './money/payments/create-batch';
import { paymentsModule } from './money/payments/module';
import { refundsModule } from './money/refunds/module';
import { payoutsModule } from './money/payouts/module';
import { recurrentModule } from './money/subscriptions/module';
import { webhooksModule } from './money/webhooks/delivery';
import { simulatorModule } from './banks/simulator/test-bank';
import { tbankModule } from './banks/tbank/bank';
import { yookassaModule } from './banks/yookassa/jobs';
import { NoBank } from './banks/none';
import { Metrics } from './web/system/metrics';
import { retentionModule } from './web/system/retention';
import { EventStreamHub } from './money/events/events';
import { KeyUsage } from './platform/auth/authenticate';
import { buildRouter } from './routes';
import { createHttpServer } from './platform/http/server';
import { serverGuards } from './guards';

/** How long shutdown waits for in-flight requests before cutting connections. */
const SHUTDOWN_DEADLINE_MS = 10_000;

export interface Running {
  app: App;
  server: Server;
  /** The address clients use, e.g. http://127.0.0.1:8080. */
  url: string;
  /** Stop accepting, finish in-flight requests, stop timers, close the database. */
  close(): Promise<void>;
}

/** Options for tests and embedding: a logger sink, a real-time source, and modules besides the built-in ones. */
export interface StartOptions {
  log?: Logger;
  realNow?: () => number;
  /** More modules (a bank behind the port, its jobs), mounted after the built-in ones as they are. */
  modules?: Array<(core: PaymentsCore) => Module>;
}

/** Wiring only; the jobs and the modules start once the server listens. */
export async function startApp(config: Config, opts: StartOptions = {}): Promise<Running> {
  const log = opts.log ?? createLogger(config.logLevel);
  const { store, lock } = await openData(config, log);
  const control = buildCore(config, store, log, opts.realNow);
  const { app, modules } = assemble(control, opts);
  const mounted = mountModules(app, modules);
  const server = createHttpServer(
    { config, log, shutdown: app, services: app, guards: serverGuards(app, config), observe: app.metrics.observe },
    buildRouter(),
  );
  try {
    await listen(server, config);
  } catch (err) {
    // Nothing may keep the process alive once it cannot serve: a supervisor must see it exit and restart it.
    await mounted.stop();
    await app.scheduler.stop();
    await store.close();
    await lock?.release();
    throw new Error(listenError(config.host, config.port, err as NodeJS.ErrnoException));
  }
  control.listening(server.address() as AddressInfo);
  // With the server lock held, no other server runs on this file: claims left in it are a dead process's.
  app.scheduler.start({ sole: lock !== null });
  mounted.start();
  let closed: Promise<void> | null = null;
  const close = (): Promise<void> => {
    closed ??= (async () => {
      control.beginClose();
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      // Connections that finish their request become idle; close them as they do, and cut what is left at the deadline.
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      const deadline = setTimeout(() => server.closeAllConnections(), SHUTDOWN_DEADLINE_MS);
      await mounted.stop();
      await stopped;
      clearInterval(sweep);
      clearTimeout(deadline);
      // The lock is released however the storage closes, or the next server on this file could never start.
      try {
        await app.scheduler.stop();
        await store.close();
      } finally {
        await lock?.release();
      }
    })();
    return closed;
  };
  return { app, server, url: app.baseUrl, close };
}

/** How long a request may wait for a PostgreSQL connection, or for a create transaction (PaymentCreates), before a 503. */
function pgWaitMs(config: Config): number {
  return Math.min(config.requestTimeoutMs, PG_LIMITS.connect_timeout_ms);
}

/** The storage (a SQLite file under the server lock), with secrets an older version left in clear sealed. */
async function openData(config: Config, log: Logger): Promise<{ store: Store; lock: ServerLock | null }> {
  const pg = isPostgresUrl(config.db);
  // Every node must seal and open secrets with the same key, and none may write a key file of its own.
  if (pg && !process.env.KOPEK_MASTER_KEY) throw new Error('cannot start on PostgreSQL: set KOPEK_MASTER_KEY (the same on every node); no key file is written in this mode');
  // A server that could not write would accept requests only to fail every one of them: refuse to start.
  const problem = pg ? null : writeProblem(config.db);
  if (problem) throw new Error(`cannot start on "${config.db}": ${problem}; kopek writes the file and its -wal and -shm beside it`);
  // Before the database opens: a second server on the same file is refused before it reads or writes anything.
  const lock = pg ? null : await acquireServerLock(config.db);
  let store: Store | null = null;
  try {
    // On SQLite every write of the server goes through the store, which syncs the WAL itself off the event loop.
    store = pg
      ? await openEngine(config.db, { log, pgPool: config.dbPool, pgConnectTimeoutMs: pgWaitMs(config) })
      : openStorage(config.db, { sync: 'store', log });
    // Secrets written in clear by an older version are sealed under the master key before anything reads them.
    await sealPlainSecrets(store);
  } catch (err) {
    await store?.close();
    await lock?.release();
    throw err;
  }
  // PostgreSQL: number and follow every node's events for this node's streams (stopped when the store closes).
  store.eventFeed?.start();
  return { store, lock };
}

/**
 * The App and its modules, in the one order that matters: webhooks first (an event's deliveries are written before
 * any other sink reacts), then the domains, then the banks. Building registers nothing; mountModules does, in order.
 */
function assemble(control: CoreControl, opts: StartOptions): { app: App; modules: Module[] } {
  const { core } = control;
  const paymentHooks = new PaymentHooks();
  // Each layer of services is an object of its own whose prototype is the one below: the core stays the core
  // (modules built from it see no domain service), and `closing` still reads the core's own field.
  const payments: PaymentsCore = Object.assign(Object.create(core) as Core, { paymentHooks });
  const metrics = new Metrics(core.clocks.real());
  const webhooks = webhooksModule(core, metrics.webhookAttempt);
  const recurrent = recurrentModule(payments);
  paymentHooks.onMoved(recurrent.onPaymentMoved, recurrent.movedFilter);
  const stream = new EventStreamHub(core);
  const keyUsage = new KeyUsage(core);
  const retention = retentionModule(core);
  const services: Module = {
    name: 'services',
    start: () => stream.start(),
    stop: async () => {
      stream.stop();
      await keyUsage.flush();
    },
  };
  const creates = core.store.engine === 'postgres' ? new PaymentCreates(payments, pgWaitMs(core.config)) : undefined;
  const app: App = Object.assign(Object.create(payments) as PaymentsCore, { creates, webhooks: webhooks.attempts, stream, metrics, keyUsage, retention: retention.retention });
  const modules: Module[] = [
    webhooks,
    paymentsModule(payments),
    refundsModule(payments),
    payoutsModule(core),
    recurrent,
    simulatorModule(payments),
    { name: 'no-bank', banks: [new NoBank()] },
    tbankModule(payments),
    yookassaModule(payments),
    ...(opts.modules ?? []).map((make) => make(payments)),
    services,
    retention,
  ];
  return { app, modules };
}

function listen(server: Server, config: Config): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

const LISTEN_ERRORS: Record<string, string> = {
  EADDRINUSE: 'the address is already in use (another process listens there)',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'the address is not one of this machine',
};

function listenError(host: string, port: number, err: NodeJS.ErrnoException): string {
  const why = Object.hasOwn(LISTEN_ERRORS, err.code ?? '') ? LISTEN_ERRORS[err.code!] : err.message;
  return `cannot listen on ${host.includes(':') ? `[${host}]` : host}:${port}: ${why}`;
}

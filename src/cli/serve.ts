import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig, OPTIONS, type Config } from '../platform/config';
import { bufferedStdout, createLogger, type Logger } from '../platform/log';
import { openEngine } from '../platform/storage/maintenance';
import { isPostgresUrl } from '../platform/storage/postgres/open';
import { redactUrl } from '../platform/redact-url';
import type { Store } from '../platform/storage/store';
import { isEmpty } from '../money/shops/store';
import { createDemoData, demoLines, type DemoData, type DemoOptions } from './admin';
import { checkEndpointUrl } from '../money/webhooks/store';
import { io, table, type Command } from './command';

/** `kopek serve --help`'s option lines: flag, default (as in the README's table) and meaning with its environment variable, aligned. */
function optionsHelp(): string {
  const shown = (d: unknown): string => (d === null ? '-' : Array.isArray(d) ? (d.length ? d.join(',') : '(empty)') : String(d));
  const rows = [
    ...OPTIONS.map((o) => [o.kind === 'bool' ? `${o.flag}, --no-${o.flag.slice(2)}` : `${o.flag} VALUE`, shown(o.def), `${o.help} [${o.env}]`]),
    ['--help', '-', 'show this help'],
  ];
  return table(['option', 'default', 'meaning [environment variable]'], rows).map((l) => `  ${l}`).join('\n');
}

const usage = `Usage: kopek serve [options]

Starts the API server, the hosted payment page and the scheduler on one port.
On an empty database it first creates a demo merchant, shop and test key, and a user of the merchant
cabinet (/cabinet/) for that merchant; it prints the key and how to sign in (the password is shown once).
With --ephemeral the database lives in memory only: nothing is written to disk, the demo data is made
every start, and everything is gone when the server stops. With --webhook-url the demo shop also gets a webhook
endpoint for that URL (--webhook-secret fixes its secret), wherever demo data is made: every --ephemeral start,
or the start on an empty database file. With --ready-json, once the server listens, standard output gets one
line of JSON and nothing else (logs go to standard error):
  {"base_url": "http://127.0.0.1:PORT", "merchant_id": "…", "shop_id": "…", "test_key": "sk_test_…",
   "webhook_secret": "whs_…", "webhook_endpoint_id": "…"}
webhook_secret signs the demo shop's webhooks: the endpoint's secret, else the shop's own (which signs the
deliveries to a payment's own webhook_url). All but base_url are null when this start made no demo data, and
webhook_endpoint_id without --webhook-url. A database with no merchant (a PostgreSQL node, --no-demo) gets a
line saying how to make the first key.

Options:
${optionsHelp()}

Examples:
  kopek serve
  kopek serve --port 9000 --db /var/lib/kopek/kopek.db --sim-delay 0
  KOPEK_PORT=9000 kopek serve --no-demo
  kopek serve --ephemeral --port 0 --ready-json --demo-key sk_test_ci_0123456789abcdef
  kopek serve --ephemeral --port 0 --ready-json --webhook-url http://127.0.0.1:3000/hook`;

export interface ServedApp {
  readonly server: Server;
  readonly url: string;
  /** The store the server writes through (the demo data of a database in memory is made on it). */
  readonly app: { readonly version: string; readonly store: Store };
  close(): Promise<void>;
}

/** Starts the server on a configuration (and a logger, when serve picks it): src/app.ts `startApp`, handed in by src/main.ts. */
export type StartServer = (config: Config, opts?: { log?: Logger }) => Promise<ServedApp>;

export function serveCommand(start: StartServer): Command {
  return { name: 'serve', summary: 'start the server (the default command)', usage, run: (argv) => serve(start, argv) };
}

/** Make the demo data on an empty database (when asked), start, print the banner (and the ready line), and wait for a signal. */
async function serve(start: StartServer, argv: string[]): Promise<number> {
  const config = loadConfig(argv);
  const inMemory = config.db === ':memory:';
  const { out, err } = io();
  const opts = demoOptions(config);
  // A file's demo data is made before the server opens it; a database in memory exists only in the server's store.
  // No demo data in a shared PostgreSQL database: nodes starting together would each make one, and a cluster serves real shops.
  let demo = config.demo && !inMemory && !isPostgresUrl(config.db) ? await demoOnEmptyFile(config, opts) : null;
  // The ready line must be the only thing on stdout, where the log writes by default.
  const running = await start(config, config.readyJson ? { log: createLogger(config.logLevel, bufferedStdout(process.stderr).write) } : {});
  let empty = false;
  try {
    if (config.demo && inMemory) demo = await createDemoData(running.app.store, Date.now(), opts);
    empty = demo === null && !inMemory && (await isEmpty(running.app.store));
  } catch (e) {
    await running.close();
    throw e;
  }
  // The signals are handled before anything is printed: whoever waits for the "listening on" line may stop the server at once.
  const stopped = untilSignal(running);
  if (demo === null) err(unusedDemoFlags(config));
  // One write, so whoever waits for the "listening on" line has the demo key with it.
  err(banner(config, running, demo) + (empty ? firstKeyHint(config, running.url) : ''));
  if (config.readyJson) {
    const ready = { base_url: running.url, merchant_id: demo?.merchantId ?? null, shop_id: demo?.shopId ?? null, test_key: demo?.testKey ?? null };
    out(JSON.stringify({ ...ready, webhook_secret: demo?.webhookSecret ?? null, webhook_endpoint_id: demo?.endpoint?.id ?? null }) + '\n');
  }
  return stopped;
}

/** The demo's --demo-key and --webhook-url endpoint, its URL checked here before anything is written (no half-made demo). */
function demoOptions(config: Config): DemoOptions {
  if (config.webhookUrl === null) return { fixedKey: config.demoKey ?? undefined };
  try {
    checkEndpointUrl(config.webhookUrl, config.webhookAllow);
  } catch (e) {
    throw new Error((e as Error).message.replace(/^cannot use webhook URL/, 'cannot use --webhook-url'));
  }
  return { fixedKey: config.demoKey ?? undefined, webhook: { url: config.webhookUrl, secret: config.webhookSecret ?? undefined, allow: config.webhookAllow } };
}

/** The demo data, made on the database file when it is empty (through a connection of its own, closed again); null when it is not. */
async function demoOnEmptyFile(config: Config, opts: DemoOptions): Promise<DemoData | null> {
  const store = await openEngine(config.db);
  try {
    return (await isEmpty(store)) ? await createDemoData(store, Date.now(), opts) : null;
  } finally {
    await store.close();
  }
}

/** One line per flag that acts only on the demo data, given on a start that made none. */
function unusedDemoFlags(config: Config): string {
  if (!config.demo) return ''; // --no-demo with such a flag is refused by loadConfig
  const why = isPostgresUrl(config.db) ? 'no demo data is made in a PostgreSQL database' : 'the database is not empty, so no demo data was made';
  const given = [config.demoKey !== null && '--demo-key', config.webhookUrl !== null && '--webhook-url'].filter(Boolean);
  return given.map((f) => `kopek: ${f} was not used: ${why}\n`).join('');
}

/** What to run on a database with no merchant yet (PostgreSQL, or --no-demo), where no key works: the demo beside the server, or a merchant. */
function firstKeyHint(config: Config, url: string): string {
  const db = isPostgresUrl(config.db) ? '' : ` --db ${config.db}`;
  const pg = isPostgresUrl(config.db) ? ' (on this database: KOPEK_DATABASE_URL, or --db URL, as for this node)' : '';
  return [
    'The database has no merchant yet, so no API key works. Make the first one beside this server:',
    `  kopek demo${db} --base-url ${url}${pg}`,
    '    a demo merchant, shop, test key and cabinet user, printed with a line to paste into a shell; or, step by step:',
    `  kopek merchant create --name NAME${db}, kopek shop create --merchant ID --name NAME${db}, kopek key create --shop ID --mode test${db}`,
    '',
  ].join('\n');
}

function banner(config: Config, running: ServedApp, demo: DemoData | null): string {
  // The address the socket is bound to (what a local client connects to); the public URL, when another, after it.
  const bound = running.server.address() as AddressInfo;
  const listen = `http://${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`;
  const publicUrl = running.url === listen ? '' : `public URL ${running.url}, `;
  const where = config.db === ':memory:' ? 'database in memory, gone when the server stops' : `database ${redactUrl(config.db)}`;
  let text = `kopek ${running.app.version} listening on ${listen} (${publicUrl}${where})\n`;
  if (demo) text += demoLines(demo, running.url, 'Created a demo merchant and shop on the empty database.').join('\n') + '\n';
  return text;
}

/** A signal this soon after the first is the same stop delivered twice, not a request to skip the drain. */
const REPEAT_WINDOW_MS = 1000;

/** Run until SIGTERM or SIGINT, then drain and close; a second signal exits at once. Resolves with the exit code. */
async function untilSignal(running: ServedApp): Promise<number> {
  const { err } = io();
  const code = await new Promise<number>((resolve) => {
    let firstAt = 0;
    const stop = (signal: string): void => {
      // One stop often arrives twice at once: the process group signalled, and `npm start` forwarding its copy.
      if (firstAt !== 0 && Date.now() - firstAt < REPEAT_WINDOW_MS) return;
      if (firstAt !== 0) {
        err(`kopek: ${signal} received again, exiting at once\n`);
        process.exit(1);
      }
      firstAt = Date.now();
      err(`kopek: ${signal} received, finishing in-flight requests\n`);
      const done = (line: string, exitCode: number): void => {
        err(line);
        resolve(exitCode);
      };
      const failed = (e: unknown): void => done(`kopek: shutdown failed: ${(e as Error).message}\n`, 1);
      running.close().then(() => done('kopek: stopped\n', 0), failed);
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  });
  // Everything is closed; should a stray handle still hold the event loop, do not hang the process manager.
  setTimeout(() => process.exit(code), 2000).unref();
  return code;
}

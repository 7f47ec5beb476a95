import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig, OPTIONS, type Config } from '../base/config';
import { openStorage } from '../db/maintenance';
import { createDemo, isEmpty } from '../cabinet/store';
import { createDemoUser } from '../cabinet/users';
import { io, type Command } from './command';

const usage = `Usage: kopek serve [options]

Starts the API server, the hosted payment page and the scheduler on one port.
On an empty database it first creates a demo merchant, shop and test key, and a user of the merchant
cabinet (/cabinet/) for that merchant; it prints the key and how to sign in (the password is shown once).

Options:
${OPTIONS.map((o) => `  ${(o.flag + (o.kind === 'bool' ? '' : ' VALUE')).padEnd(26)} ${o.help} [${o.env}]`).join('\n')}
  --help                     show this help

Examples:
  kopek serve
  kopek serve --port 9000 --db /var/lib/kopek/kopek.db --sim-delay 0
  KOPEK_PORT=9000 kopek serve --no-demo`;

/** What `kopek serve` needs of a started server: its socket, its address, its version, and how to stop it. */
export interface ServedApp {
  readonly server: Server;
  /** The address clients use, e.g. http://127.0.0.1:8080. */
  readonly url: string;
  readonly app: { readonly version: string };
  /** Stop accepting, finish in-flight requests, stop timers, close the database. */
  close(): Promise<void>;
}

/** Starts the server on a configuration: the wiring at the root (src/app.ts `startApp`), handed in by src/main.ts. */
export type StartServer = (config: Config) => Promise<ServedApp>;

/** `kopek serve`, starting the server with `start`: run it until SIGTERM or SIGINT. */
export function serveCommand(start: StartServer): Command {
  return {
    name: 'serve',
    summary: 'start the server (the default command)',
    usage,
    run: (argv) => serve(start, argv),
  };
}

/** Make the demo data on an empty database (when asked), start, print the banner, and wait for a signal. */
async function serve(start: StartServer, argv: string[]): Promise<number> {
  const config = loadConfig(argv);
  let demo: Awaited<ReturnType<typeof createDemo>> | null = null;
  let user: Awaited<ReturnType<typeof createDemoUser>> | null = null;
  if (config.demo) {
    const store = openStorage(config.db);
    if (await isEmpty(store)) {
      demo = await createDemo(store, Date.now());
      user = await createDemoUser(store, demo.merchant.id, Date.now());
    }
    await store.close();
  }
  const running = await start(config);
  const { err } = io();
  // One write, so whoever waits for the "listening on" line has the demo key with it.
  // The address the socket is bound to (what a local client connects to); the public URL, when another, after it.
  const bound = running.server.address() as AddressInfo;
  const listen = `http://${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`;
  const publicUrl = running.url === listen ? '' : `public URL ${running.url}, `;
  let banner = `kopek ${running.app.version} listening on ${listen} (${publicUrl}database ${config.db})\n`;
  if (demo) {
    banner += [
      'Created a demo merchant and shop on the empty database.',
      `  merchant  ${demo.merchant.id}`,
      `  shop      ${demo.shop.id}`,
      `  test key  ${demo.secret}   (shown once; keep it)`,
      `  cabinet   ${running.url}/cabinet/login   email ${user!.user.email}   password ${user!.password}   (shown once; keep it)`,
      `Try: curl -s -X POST ${running.url}/v1/public/payments -H 'Authorization: Bearer ${demo.secret}' -H 'Content-Type: application/json' -d '{"amount": 10000}'`,
      '',
    ].join('\n');
  }
  err(banner);
  let code = 0;
  await new Promise<void>((resolve) => {
    let stopping = false;
    const stop = (signal: string): void => {
      if (stopping) {
        // A second signal means the operator will not wait for the drain.
        err(`kopek: ${signal} received again, exiting at once\n`);
        process.exit(1);
      }
      stopping = true;
      err(`kopek: ${signal} received, finishing in-flight requests\n`);
      running.close().then(
        () => {
          err('kopek: stopped\n');
          resolve();
        },
        (e) => {
          err(`kopek: shutdown failed: ${(e as Error).message}\n`);
          code = 1;
          resolve();
        },
      );
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  });
  // Everything is closed; should a stray handle still hold the event loop, do not hang the process manager.
  setTimeout(() => process.exit(code), 2000).unref();
  return code;
}

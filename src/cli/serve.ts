import { loadConfig, OPTIONS } from '../config';
import { startApp } from '../app';
import { openDatabase } from '../db/open';
import { Store } from '../db/tx';
import { createDemo, isEmpty } from '../cabinet/store';
import type { Command } from './command';

const usage = `Usage: kopek serve [options]

Starts the API server, the hosted payment page and the scheduler on one port.
On an empty database it first creates a demo merchant, shop and test key, and prints the key.

Options:
${OPTIONS.map((o) => `  ${(o.flag + (o.kind === 'bool' ? '' : ' VALUE')).padEnd(26)} ${o.help} [${o.env}]`).join('\n')}
  --help                     show this help

Examples:
  kopek serve
  kopek serve --port 9000 --db /var/lib/kopek/kopek.db --sim-delay 0
  KOPEK_PORT=9000 kopek serve --no-demo`;

/** `kopek serve`: run the server until SIGTERM or SIGINT. */
export const serve: Command = {
  name: 'serve',
  summary: 'start the server (the default command)',
  usage,
  async run(argv) {
    if (argv.includes('--help') || argv.includes('-h')) {
      process.stdout.write(usage + '\n');
      return 0;
    }
    const config = loadConfig(argv);
    let demo: ReturnType<typeof createDemo> | null = null;
    if (config.demo) {
      const store = new Store(openDatabase(config.db));
      if (isEmpty(store)) demo = createDemo(store, Date.now());
      store.db.close();
    }
    const running = await startApp(config);
    process.stderr.write(`kopek ${running.app.version} listening on ${running.url} (database ${config.db})\n`);
    if (demo) {
      process.stderr.write(
        [
          'Created a demo merchant and shop on the empty database.',
          `  merchant  ${demo.merchant.id}`,
          `  shop      ${demo.shop.id}`,
          `  test key  ${demo.secret}   (shown once; keep it)`,
          `Try: curl -s -X POST ${running.url}/v1/public/payments -H 'Authorization: Bearer ${demo.secret}' -H 'Content-Type: application/json' -d '{"amount": 10000}'`,
          '',
        ].join('\n'),
      );
    }
    await new Promise<void>((resolve) => {
      const stop = (signal: string): void => {
        process.stderr.write(`kopek: ${signal} received, finishing in-flight requests\n`);
        running.close().then(resolve, (err) => {
          process.stderr.write(`kopek: shutdown failed: ${(err as Error).message}\n`);
          resolve();
        });
      };
      process.once('SIGTERM', () => stop('SIGTERM'));
      process.once('SIGINT', () => stop('SIGINT'));
    });
    return 0;
  },
};

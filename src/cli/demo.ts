import { parseArgs, onlyFlags, atMostPositionals } from './args';
import { COMMON_OPTIONS, output, withStore, type Command } from './command';
import { createDemo } from '../cabinet/store';

const usage = `Usage: kopek demo [--db PATH] [--json]

Creates a merchant, a shop with every scope, and a test API key; prints them. The key is shown only now.
Creates the database file if there is none; on an existing one it adds another demo merchant.

Options:
${COMMON_OPTIONS}

Examples:
  kopek demo
  kopek demo --json --db ./data/kopek.db`;

/** `kopek demo` */
export const demo: Command = {
  name: 'demo',
  summary: 'create a demo merchant, shop and test key',
  usage,
  async run(argv) {
    const args = parseArgs(argv);
    onlyFlags(args, []);
    atMostPositionals(args, 0, 'kopek demo [--db PATH] [--json]');
    const d = await withStore(args, async (store) => createDemo(store, Date.now()), { create: true });
    output(args, { merchant_id: d.merchant.id, shop_id: d.shop.id, key_id: d.key.id, key: d.secret }, [
      `merchant  ${d.merchant.id}`,
      `shop      ${d.shop.id}`,
      `key id    ${d.key.id}`,
      `test key  ${d.secret}   (shown once)`,
    ]);
    return 0;
  },
};

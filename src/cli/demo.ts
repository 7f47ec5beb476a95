import { parseArgs, onlyFlags, atMostPositionals } from './args';
import { COMMON_OPTIONS, output, withStore, type Command } from './command';
import { createDemo } from '../cabinet/store';
import { createDemoUser } from '../cabinet/users';
import type { Store } from '../db/store';

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

/** What serve makes on an empty database: the demo merchant, shop and test key, and a cabinet user of the merchant. */
export interface DemoData {
  merchantId: string;
  shopId: string;
  /** The test key's secret: shown once, stored hashed. */
  testKey: string;
  email: string;
  /** The cabinet user's password: shown once, stored hashed. */
  password: string;
}

/** Make serve's demo data on `store`; `fixedKey` is the test key's secret (serve --demo-key), else a random one. */
export async function createDemoData(store: Store, now: number, fixedKey?: string): Promise<DemoData> {
  const d = await createDemo(store, now, fixedKey);
  const u = await createDemoUser(store, d.merchant.id, now);
  return { merchantId: d.merchant.id, shopId: d.shop.id, testKey: d.secret, email: u.user.email, password: u.password };
}

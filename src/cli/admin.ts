import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs, flag, onlyFlags, atMostPositionals } from '../platform/args';
import { defaultConfig } from '../platform/config';
import { COMMON_OPTIONS, output, outputList, runSubcommand, withStore, type Command } from './command';
import { createUser, disableUser, listUsers, getUserByEmail } from '../web/cabinet/users';
import { iso, isoOrNull } from '../platform/util/time';
import { hostForUrl } from '../money/core/build';
import { createDemo } from '../money/shops/store';
import { addEndpoint } from '../money/webhooks/store';
import type { Reader, Store } from '../platform/storage/store';

const usage = `Usage:
  kopek admin create --merchant MERCHANT_ID --email EMAIL --password-file FILE [--base-url URL]
  kopek admin list [--merchant MERCHANT_ID]
  kopek admin disable USER_ID|EMAIL

create    makes a user of the merchant cabinet (/cabinet/ on the server) for that merchant; the password is
          read from FILE (its first line; at least 10 characters) and only its scrypt hash is stored; prints
          the sign-in address under --base-url (else KOPEK_BASE_URL, else http://KOPEK_HOST:KOPEK_PORT, by
          default http://127.0.0.1:8080): the address the server is reached at
list      lists cabinet users: id, email, merchant, two-step sign-in, disabled
disable   disables a user and ends their sessions at once

Options:
${COMMON_OPTIONS}

Examples:
  kopek admin create --merchant 7f1c… --email owner@shop.example --password-file ./owner.pw
  kopek admin create --merchant 7f1c… --email ops@shop.example --password-file ./ops.pw --base-url https://pay.shop.example --json
  kopek admin list --merchant 7f1c…
  kopek admin disable ops@shop.example`;

/** The server's address as serve works it out, checked before anything is written; `action` begins the error. */
export function serverUrl(given: string | undefined, action = 'cannot create cabinet user'): string {
  const env = process.env;
  const raw = given ?? (env.KOPEK_BASE_URL || undefined);
  if (raw === undefined) {
    const d = defaultConfig();
    return `http://${hostForUrl(env.KOPEK_HOST || d.host)}:${env.KOPEK_PORT || d.port}`;
  }
  const protocol = URL.canParse(raw) ? new URL(raw).protocol : '';
  if (protocol !== 'http:' && protocol !== 'https:') throw new Error(`${action}: --base-url must be an http(s) URL, got "${raw}"`);
  return raw.replace(/\/+$/, '');
}

export const admin: Command = {
  name: 'admin',
  summary: 'create, list and disable merchant cabinet users',
  usage,
  run: (argv) => runSubcommand('admin', parseArgs(argv), {
    async create(args) {
      onlyFlags(args, ['merchant', 'email', 'password-file', 'base-url']);
      atMostPositionals(args.positional, 1, 'kopek admin create --merchant MERCHANT_ID --email EMAIL --password-file FILE [--base-url URL]');
      const [merchantId, email, file] = [flag(args, 'merchant'), flag(args, 'email'), flag(args, 'password-file')];
      if (!merchantId || !email || !file) throw new Error('cannot create cabinet user: --merchant, --email and --password-file are required');
      const signIn = `${serverUrl(flag(args, 'base-url'))}/cabinet/login`;
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (err) {
        throw new Error(`cannot create cabinet user: cannot read password file "${file}": ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
      const password = text.split(/\r?\n/)[0];
      const u = await withStore(args, async (store) => createUser(store, { merchantId, email, password }, Date.now()));
      output(args, { id: u.id, email: u.email, merchant_id: u.merchant_id }, [`user     ${u.id}`, `email    ${u.email}`, `sign in  ${signIn}`]);
    },
    async list(args) {
      onlyFlags(args, ['merchant']);
      atMostPositionals(args.positional, 1, 'kopek admin list [--merchant MERCHANT_ID]');
      const items = (await withStore(args, async (store) => listUsers(store, flag(args, 'merchant')))).map((u) => ({
        id: u.id, email: u.email, merchant_id: u.merchant_id, totp: u.totp_secret !== null, created_at: iso(u.created_at),
        disabled_at: isoOrNull(u.disabled_at),
      }));
      outputList(args, items, '(no users)', (u) => `${u.id}  ${u.email}  merchant ${u.merchant_id}  ${u.totp ? 'totp' : 'password'}  ${u.disabled_at ? 'disabled ' + u.disabled_at : 'active'}`);
    },
    async disable(args) {
      onlyFlags(args, []);
      atMostPositionals(args.positional, 2, 'kopek admin disable USER_ID|EMAIL');
      const id = args.positional[1];
      if (!id) throw new Error('cannot disable cabinet user: USER_ID or EMAIL is required');
      const u = await withStore(args, async (store) => disableUser(store, id, Date.now()));
      output(args, { id: u.id, email: u.email, disabled: true }, [`disabled ${u.email}; their sessions ended`]);
    },
  }),
};

const demoUsage = `Usage: kopek demo [--db PATH] [--base-url URL] [--json]

Creates a merchant, a shop with every scope, a test API key and a user of the merchant cabinet (/cabinet/)
for that merchant, and prints them as the server does when it makes them on an empty database: the key and
the cabinet's sign-in (shown only now), and a line to paste into a shell, export B=… MERCHANT=… SHOP=… KEY=….
Creates the database file if there is none; on an existing one (or a PostgreSQL database, where the server
makes no demo data) it adds another demo merchant, whose cabinet user is demo-2@kopek.test, demo-3@…, and so on.

Options:
  --base-url URL   the address the server is reached at, for the sign-in address and B (else KOPEK_BASE_URL,
                   else http://KOPEK_HOST:KOPEK_PORT, by default http://127.0.0.1:8080)
${COMMON_OPTIONS}

Examples:
  kopek demo
  kopek demo --json --db ./data/kopek.db
  KOPEK_DATABASE_URL=postgres://kopek@db.internal/kopek kopek demo --base-url https://pay.example.com`;

export const demo: Command = {
  name: 'demo',
  summary: 'create a demo merchant, shop, test key and cabinet user',
  usage: demoUsage,
  async run(argv) {
    const args = parseArgs(argv);
    onlyFlags(args, ['base-url']);
    atMostPositionals(args.positional, 0, 'kopek demo [--db PATH] [--base-url URL] [--json]');
    const base = serverUrl(flag(args, 'base-url'), 'cannot create the demo data');
    const d = await withStore(args, async (store) => createDemoData(store, Date.now()), { create: true });
    output(
      args,
      { merchant_id: d.merchantId, shop_id: d.shopId, key_id: d.keyId, key: d.testKey, email: d.email, password: d.password, base_url: base },
      demoLines(d, base, 'Created a demo merchant and shop.'),
    );
    return 0;
  },
};

export interface DemoData {
  merchantId: string;
  shopId: string;
  keyId: string;
  /** The test key's secret: shown once, stored hashed. */
  testKey: string;
  email: string;
  /** The cabinet user's password: shown once, stored hashed. */
  password: string;
  endpoint: { id: string; url: string } | null;
  /** What signs the shop's webhooks as made: the endpoint's secret, else the shop's own (for a payment's own webhook_url). */
  webhookSecret: string;
}

export interface DemoOptions {
  /** The test key's secret (serve --demo-key, checked there); else a random one. */
  fixedKey?: string;
  /** An endpoint for `url` (checked as every endpoint URL, against the operator's `allow` ranges), with a fixed secret or a new one. */
  webhook?: { url: string; secret?: string; allow: readonly string[] };
}

/** Make the demo data on `store`: the same for `npm start` on an empty database and for `kopek demo`. */
export async function createDemoData(store: Store, now: number, opts: DemoOptions = {}): Promise<DemoData> {
  const d = await createDemo(store, now, opts.fixedKey);
  const password = randomBytes(12).toString('base64url');
  const user = await createUser(store, { merchantId: d.merchant.id, email: await freeDemoEmail(store), password }, now);
  const w = opts.webhook;
  const made = w ? await addEndpoint(store, { shopId: d.shop.id, url: w.url, secret: w.secret, allow: w.allow }, now) : null;
  return {
    merchantId: d.merchant.id,
    shopId: d.shop.id,
    keyId: d.key.id,
    testKey: d.secret,
    email: user.email,
    password,
    endpoint: made && { id: made.endpoint.id, url: made.endpoint.url },
    webhookSecret: made?.secret ?? d.shop.webhook_secret,
  };
}

/** The email of the cabinet user made for the demo merchant on an empty database (demo-2@… for the next). */
const DEMO_EMAIL = 'demo@kopek.test';
/** Names tried for a demo's cabinet user (demo@, demo-2@, … kopek.test) before giving up. */
const MAX_DEMO_USERS = 1000;

/** The first demo email no cabinet user has: a database gets one demo merchant per `kopek demo`. */
async function freeDemoEmail(q: Reader): Promise<string> {
  for (let n = 1; n <= MAX_DEMO_USERS; n++) {
    const email = n === 1 ? DEMO_EMAIL : DEMO_EMAIL.replace('@', `-${n}@`);
    if (!(await getUserByEmail(q, email))) return email;
  }
  throw new Error(`cannot create a demo cabinet user: ${DEMO_EMAIL} and the next ${MAX_DEMO_USERS - 1} demo emails are taken`);
}

/** The demo data's lines after `heading`: serve's banner and `kopek demo` both print them, so the same `shell` line is pasted. */
export function demoLines(demo: DemoData, base: string, heading: string): string[] {
  return [
    heading,
    `  merchant  ${demo.merchantId}`,
    `  shop      ${demo.shopId}`,
    `  test key  ${demo.testKey}   (shown once; keep it)`,
    `  cabinet   ${base}/cabinet/login   email ${demo.email}   password ${demo.password}   (shown once; keep it)`,
    ...(demo.endpoint ? [`  webhook   ${demo.endpoint.url}   secret ${demo.webhookSecret}   (shown once; keep it)`] : []),
    // One line to paste where the README's commands are run: the walk reads these four variables.
    `  shell     export B=${base} MERCHANT=${demo.merchantId} SHOP=${demo.shopId} KEY=${demo.testKey}`,
    `Try: curl -s -X POST ${base}/v1/public/payments -H 'Authorization: Bearer ${demo.testKey}' -H 'Content-Type: application/json' -d '{"amount": 10000}'`,
  ];
}

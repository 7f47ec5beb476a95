import { parseArgs, flag, onlyFlags, atMostPositionals, idArg, unknownSubcommand, type Args } from '../platform/args';
import { COMMON_OPTIONS, output, withStore, type Command } from './command';
import {
  createShop,
  getShopSettings,
  rotateSigningSecret,
  setIpAllowlist,
  setRequireSignature,
  setShopScopes,
} from '../money/shops/store';
import { ALL_SCOPES } from '../platform/auth/scopes';
import type { Store } from '../platform/storage/store';
import { ACQUIRER_USAGE, runAcquirer } from './acquirer';
import { PAYOUTS_USAGE, runPayouts } from './payouts';

const usage = `Usage:
  kopek shop create --merchant ID --name NAME [--scopes S1,S2]
  kopek shop show SHOP_ID
  kopek shop scopes SHOP_ID S1,S2
  kopek shop ip-allowlist SHOP_ID [ENTRY,...]
  kopek shop signing-secret SHOP_ID
  kopek shop require-signature SHOP_ID on|off
${ACQUIRER_USAGE}
${PAYOUTS_USAGE}

SHOP_ID may also be given as --shop SHOP_ID, as every command takes it.

create             creates a shop (all scopes unless --scopes); prints its id and its secrets once
show               prints the shop's settings (never its secrets)
scopes             replaces the scopes enabled for the shop ("" for none)
ip-allowlist       replaces the allow-list (IPv4, IPv6, CIDR of both); no entries clears it
signing-secret     rotates the thm_ request-signing secret and prints the new one once
require-signature  requires X-PSP-Signature on every request of the shop's keys, or not
acquirer           sets the shop's live acquirer (T-Bank terminal; the password is encrypted under the master
                   key, <db>.key or KOPEK_MASTER_KEY, and never printed), shows it, or removes it (--remove)
payouts            sets the shop's live payout provider (YooKassa Payouts: the gateway's agentId and secret key,
                   checked at the provider before anything is written; the secret is encrypted under the master
                   key and never printed), shows it, or removes it (--remove); independent of the acquirer

Scopes: ${ALL_SCOPES.join(', ')}

Options:
${COMMON_OPTIONS}

Examples:
  kopek shop create --merchant 7f1c… --name "Main shop"
  kopek shop create --merchant 7f1c… --name Reports --scopes api:reports:read,api:balance:read --json
  kopek shop show 3b9e…
  kopek shop show --shop 3b9e… --json
  kopek shop scopes 3b9e… api:payouts:sbp,api:balance:read
  kopek shop ip-allowlist 3b9e… 203.0.113.0/24,2001:db8::/32
  kopek shop signing-secret 3b9e…
  kopek shop require-signature 3b9e… on
  kopek shop acquirer --shop 3b9e… --provider tbank --terminal-key 1700000000DEMO --password-file ./tbank.pass
  kopek shop acquirer --shop 3b9e… --json
  kopek shop payouts --shop 3b9e… --provider yookassa --agent-id 505000 --secret-file ./yookassa.secret
  kopek shop payouts --shop 3b9e… --json`;

/** Subcommands taking SHOP_ID, with their usage line and how many words they take after the subcommand (SHOP_ID included). */
const ON_SHOP: Record<string, { line: string; max: number; run(store: Store, args: Args, id: string, value?: string): Promise<void> }> = {
  show: { line: 'kopek shop show SHOP_ID', max: 1, run: show },
  scopes: {
    line: 'kopek shop scopes SHOP_ID S1,S2',
    max: 2,
    async run(store, args, id, value) {
      if (value === undefined) throw new Error(`cannot set scopes of shop "${id}": give the scope list (S1,S2, or "" for none)`);
      const list = await setShopScopes(store, id, value);
      output(args, { id, scopes: list }, [`scopes: ${list.join(',') || '(none)'}`]);
    },
  },
  'ip-allowlist': {
    line: 'kopek shop ip-allowlist SHOP_ID [ENTRY,...]',
    max: 2,
    async run(store, args, id, value) {
      const list = await setIpAllowlist(store, id, value ?? '');
      output(args, { id, ip_allowlist: list }, [list.length ? `allow-list: ${list.join(',')}` : 'allow-list cleared: any address']);
    },
  },
  'signing-secret': {
    line: 'kopek shop signing-secret SHOP_ID',
    max: 1,
    async run(store, args, id) {
      const s = await rotateSigningSecret(store, id);
      output(args, { id, secret: s }, [`${s}   (shown once; the old secret no longer verifies)`]);
    },
  },
  'require-signature': {
    line: 'kopek shop require-signature SHOP_ID on|off',
    max: 2,
    async run(store, args, id, value) {
      if (value !== 'on' && value !== 'off') throw new Error(`cannot set require-signature of shop "${id}": give on or off, got "${value ?? ''}"`);
      await setRequireSignature(store, id, value === 'on');
      output(args, { id, require_signature: value === 'on' }, [`require-signature ${value}`]);
    },
  },
};

async function show(store: Store, args: Args, id: string): Promise<void> {
  const s = await getShopSettings(store, id);
  if (!s) throw new Error(`cannot show shop "${id}": not found`);
  const view = {
    id: s.id,
    merchant_id: s.merchant_id,
    name: s.name,
    scopes: s.scopes.split(',').filter(Boolean),
    ip_allowlist: s.ip_allowlist.split(',').filter(Boolean),
    require_signature: s.require_signature === 1,
    test_clock_offset_seconds: s.test_clock_offset_ms / 1000,
  };
  output(args, view, Object.entries(view).map(([k, v]) => `${k.padEnd(26)} ${Array.isArray(v) ? v.join(',') || '(none)' : v}`));
}

/** `kopek shop` */
export const shop: Command = {
  name: 'shop',
  summary: 'create shops; set scopes, IP allow-list, request signing, the live acquirer and payout provider',
  usage,
  async run(argv) {
    if (argv[0] === 'acquirer') return runAcquirer(argv.slice(1));
    if (argv[0] === 'payouts') return runPayouts(argv.slice(1));
    const args = parseArgs(argv);
    const [sub] = args.positional;
    if (sub === 'create') {
      onlyFlags(args, ['merchant', 'name', 'scopes']);
      atMostPositionals(args.positional, 1, 'kopek shop create --merchant ID --name NAME [--scopes S1,S2]');
      const merchantId = flag(args, 'merchant');
      const name = flag(args, 'name');
      if (!merchantId || !name) throw new Error('cannot create shop: --merchant ID and --name NAME are required');
      const s = await withStore(args, async (store) => createShop(store, merchantId, name, flag(args, 'scopes'), Date.now()));
      output(args, { id: s.id, webhook_secret: s.webhook_secret, signing_secret: s.signing_secret, scopes: s.scopes.split(',').filter(Boolean) }, [
        `shop            ${s.id}`,
        `webhook secret  ${s.webhook_secret}   (shown once)`,
        `signing secret  ${s.signing_secret}   (shown once)`,
      ]);
      return 0;
    }
    const spec = sub === undefined || !Object.hasOwn(ON_SHOP, sub) ? undefined : ON_SHOP[sub];
    if (!spec) throw unknownSubcommand('shop', sub, ['create', ...Object.keys(ON_SHOP), 'acquirer', 'payouts']);
    onlyFlags(args, ['shop']);
    const { id, rest } = idArg(args, 'shop');
    if (!id) throw new Error(`cannot run shop ${sub}: SHOP_ID is required (or --shop SHOP_ID); usage: ${spec.line}`);
    atMostPositionals(rest, spec.max - 1, spec.line);
    await withStore(args, (store) => spec.run(store, args, id, rest[0]));
    return 0;
  },
};

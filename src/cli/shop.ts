import { readFileSync } from 'node:fs';
import { parseArgs, flag, onlyFlags, atMostPositionals, idArg, unknownSubcommand, type Args } from '../platform/args';
import { loadConfig } from '../platform/config';
import { COMMON_OPTIONS, io, output, splitList, withStore, type Command, runSubcommand, table } from './command';
import { createShop, getShopSettings, rotateSigningSecret, setIpAllowlist, setRequireSignature, setShopScopes, activateLive, createMerchant, createKey, findKeyToRevoke, getMerchant, listKeys, revokeKey } from '../money/shops/store';
import { ALL_SCOPES } from '../platform/auth/scopes';
import type { Store } from '../platform/storage/store';
import { TBANK } from '../banks/tbank/protocol';
import { removeAcquirer, setTBankAcquirer, showAcquirer } from '../banks/tbank/settings';
import { removePayoutProvider, setPayoutProvider, showPayoutProvider } from '../web/cabinet/shops';
import { allowListOf, literalRefusal } from '../money/webhooks/url-safety';
import { shopAcquirer, shopPayoutProvider } from '../money/bank-port/store';
import { iso, isoOrNull } from '../platform/util/time';

const usage = `Usage:
  kopek shop create --merchant ID --name NAME [--scopes S1,S2]
  kopek shop show SHOP_ID
  kopek shop scopes SHOP_ID S1,S2
  kopek shop ip-allowlist SHOP_ID [ENTRY,...]
  kopek shop signing-secret SHOP_ID
  kopek shop require-signature SHOP_ID on|off
  kopek shop acquirer --shop SHOP --provider tbank --terminal-key KEY --password-file FILE [--api-url URL]
  kopek shop acquirer --shop SHOP [--remove]
  kopek shop payouts --shop SHOP --provider yookassa --agent-id ID --secret-file FILE [--api-url URL]
  kopek shop payouts --shop SHOP [--remove]

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

/** Subcommands taking SHOP_ID; each takes the words its usage line shows after the subcommand (SHOP_ID first). */
const ON_SHOP: Record<string, (store: Store, args: Args, id: string, value?: string) => Promise<void>> = {
  show,
  async scopes(store, args, id, value) {
    if (value === undefined) throw new Error(`cannot set scopes of shop "${id}": give the scope list (S1,S2, or "" for none)`);
    const list = await setShopScopes(store, id, value);
    output(args, { id, scopes: list }, [`scopes: ${list.join(',') || '(none)'}`]);
  },
  async 'ip-allowlist'(store, args, id, value) {
    const list = await setIpAllowlist(store, id, value ?? '');
    output(args, { id, ip_allowlist: list }, [list.length ? `allow-list: ${list.join(',')}` : 'allow-list cleared: any address']);
  },
  async 'signing-secret'(store, args, id) {
    const s = await rotateSigningSecret(store, id);
    output(args, { id, secret: s }, [`${s}   (shown once; the old secret no longer verifies)`]);
  },
  async 'require-signature'(store, args, id, value) {
    if (value !== 'on' && value !== 'off') throw new Error(`cannot set require-signature of shop "${id}": give on or off, got "${value ?? ''}"`);
    await setRequireSignature(store, id, value === 'on');
    output(args, { id, require_signature: value === 'on' }, [`require-signature ${value}`]);
  },
};

async function show(store: Store, args: Args, id: string): Promise<void> {
  const s = await getShopSettings(store, id);
  if (!s) throw new Error(`cannot show shop "${id}": not found`);
  const view = {
    id: s.id, merchant_id: s.merchant_id, name: s.name, scopes: splitList(s.scopes), ip_allowlist: splitList(s.ip_allowlist),
    require_signature: s.require_signature === 1, test_clock_offset_seconds: s.test_clock_offset_ms / 1000,
  };
  output(args, view, Object.entries(view).map(([k, v]) => `${k.padEnd(26)} ${Array.isArray(v) ? v.join(',') || '(none)' : v}`));
}

/** A shop's live connection as `kopek shop acquirer` and `kopek shop payouts` set, show and remove it (a `setting` flag means "set"). */
interface Connection {
  sub: 'acquirer' | 'payouts';
  noun: string;
  line: string;
  setting: readonly string[];
  width: number;
  removed: string;
  show(store: Store, shopId: string): Promise<object | undefined>;
  remove(store: Store, shopId: string): Promise<boolean>;
  set(store: Store, shopId: string, args: Args): Promise<{ api_url: string }>;
}

/** A secret from a file; one trailing newline is not part of it. */
function readSecretFile(path: string, noun: string, what: string): string {
  try {
    return readFileSync(path, 'utf8').replace(/\r?\n$/, '');
  } catch (err) {
    throw new Error(`cannot set the ${noun}: cannot read the ${what} "${path}" (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

const ACQUIRER: Connection = {
  sub: 'acquirer',
  noun: 'acquirer',
  line: 'kopek shop acquirer --shop SHOP [--provider tbank --terminal-key KEY --password-file FILE [--api-url URL] | --remove]',
  setting: ['provider', 'terminal-key', 'password-file', 'api-url'],
  width: 13,
  removed: 'acquirer removed: live keys of the shop answer 403 acquirer_not_configured',
  show: showAcquirer,
  remove: removeAcquirer,
  async set(store, shopId, args) {
    const provider = flag(args, 'provider');
    if (provider !== TBANK) throw new Error(`cannot set the acquirer: --provider must be ${TBANK}, got "${provider ?? ''}"`);
    const terminalKey = flag(args, 'terminal-key');
    const file = flag(args, 'password-file');
    if (!terminalKey || !file) throw new Error(`cannot set the acquirer: --terminal-key KEY and --password-file FILE are required; usage: ${this.line}`);
    const password = readSecretFile(file, 'acquirer', 'password file');
    return setTBankAcquirer(store, shopId, { terminalKey, password, apiUrl: flag(args, 'api-url') }, Date.now());
  },
};

const PAYOUTS: Connection = {
  sub: 'payouts',
  noun: 'payout provider',
  line: 'kopek shop payouts --shop SHOP [--provider yookassa --agent-id ID --secret-file FILE [--api-url URL] | --remove]',
  setting: ['provider', 'agent-id', 'secret-file', 'api-url'],
  width: 9,
  removed: 'payout provider removed: live payouts of the shop answer 403 payouts_not_configured',
  show: showPayoutProvider,
  remove: removePayoutProvider,
  async set(store, shopId, args) {
    const [provider, agentId, file] = [flag(args, 'provider'), flag(args, 'agent-id'), flag(args, 'secret-file')];
    if (!provider || !agentId || !file) {
      throw new Error(`cannot set the payout provider: --provider yookassa, --agent-id ID and --secret-file FILE are required; usage: ${this.line}`);
    }
    const input = { provider, agentId, secret: readSecretFile(file, 'payout provider', 'secret key file'), apiUrl: flag(args, 'api-url') };
    // The credentials check waits as long as the server would: --acquirer-timeout (KOPEK_ACQUIRER_TIMEOUT, else its default).
    return setPayoutProvider(store, shopId, input, { now: Date.now(), timeoutMs: loadConfig([], process.env).acquirerTimeoutSeconds * 1000 });
  },
};

/** Set a shop's live connection (its secret sealed under the master key, never printed), show it, or remove it. */
async function runConnection(c: Connection, argv: string[]): Promise<number> {
  const args = parseArgs(argv, ['json', 'help', 'remove']);
  onlyFlags(args, ['shop', ...c.setting, 'remove']);
  atMostPositionals(args.positional, 0, c.line);
  const shopId = flag(args, 'shop');
  if (!shopId) throw new Error(`cannot run shop ${c.sub}: --shop SHOP is required; usage: ${c.line}`);
  const setting = c.setting.filter((f) => args.flags.has(f));
  if (args.flags.has('remove') && setting.length > 0) throw new Error(`cannot run shop ${c.sub}: --remove takes no other option but --shop; usage: ${c.line}`);
  return withStore(args, async (store) => {
    if (!(await getShopSettings(store, shopId))) throw new Error(`cannot run shop ${c.sub}: shop "${shopId}" not found`);
    if (args.flags.has('remove')) {
      const had = await c.remove(store, shopId);
      output(args, { shop_id: shopId, removed: had }, [had ? c.removed : `the shop had no ${c.noun}`]);
      return 0;
    }
    const v = setting.length === 0 ? await c.show(store, shopId) : await c.set(store, shopId, args);
    if (!v) throw new Error(`cannot show the ${c.noun} of shop "${shopId}": none is set`);
    output(args, v, Object.entries(v).map(([k, x]) => `${k.padEnd(c.width)} ${x}`));
    if (setting.length === 0) return 0;
    // Set as the operator asked; but the server calls such an address only inside its --webhook-allow ranges.
    const why = literalRefusal(new URL((v as { api_url: string }).api_url), allowListOf([]));
    if (why) io().err(`note: the API address is the ${why}: the server calls it only when started with --webhook-allow covering it\n`);
    return 0;
  });
}

export const shop: Command = {
  name: 'shop',
  summary: 'create shops; set scopes, IP allow-list, request signing, the live acquirer and payout provider',
  usage,
  async run(argv) {
    if (argv[0] === 'acquirer') return runConnection(ACQUIRER, argv.slice(1));
    if (argv[0] === 'payouts') return runConnection(PAYOUTS, argv.slice(1));
    const args = parseArgs(argv);
    const [sub] = args.positional;
    if (sub === 'create') {
      onlyFlags(args, ['merchant', 'name', 'scopes']);
      atMostPositionals(args.positional, 1, 'kopek shop create --merchant ID --name NAME [--scopes S1,S2]');
      const merchantId = flag(args, 'merchant');
      const name = flag(args, 'name');
      if (!merchantId || !name) throw new Error('cannot create shop: --merchant ID and --name NAME are required');
      const s = await withStore(args, async (store) => createShop(store, merchantId, name, flag(args, 'scopes'), Date.now()));
      output(args, { id: s.id, webhook_secret: s.webhook_secret, signing_secret: s.signing_secret, scopes: splitList(s.scopes) }, [
        `shop            ${s.id}`,
        `webhook secret  ${s.webhook_secret}   (shown once)`,
        `signing secret  ${s.signing_secret}   (shown once)`,
      ]);
      return 0;
    }
    if (sub === undefined || !Object.hasOwn(ON_SHOP, sub)) throw unknownSubcommand('shop', sub, ['create', ...Object.keys(ON_SHOP), 'acquirer', 'payouts']);
    const line = usage.split('\n').find((l) => l.startsWith(`  kopek shop ${sub} `))!.trim();
    onlyFlags(args, ['shop']);
    const { id, rest } = idArg(args, 'shop');
    if (!id) throw new Error(`cannot run shop ${sub}: SHOP_ID is required (or --shop SHOP_ID); usage: ${line}`);
    atMostPositionals(rest, line.split(' ').length - 4, line);
    await withStore(args, (store) => ON_SHOP[sub](store, args, id, rest[0]));
    return 0;
  },
};

const merchantUsage = `Usage:
  kopek merchant create --name NAME
  kopek merchant activate-live MERCHANT_ID

create          creates a merchant and prints its id (creates the database file if there is none)
activate-live   turns on live mode; refused, with the reason, until a shop of the merchant has an acquirer
                (kopek shop acquirer) or a payout provider (kopek shop payouts); live keys of shops with
                neither answer 403 acquirer_not_configured, and payments of a shop without an acquirer do;
                MERCHANT_ID may also be given as --merchant MERCHANT_ID

Options:
${COMMON_OPTIONS}

Examples:
  kopek merchant create --name "Tea shop LLC"
  kopek merchant create --name Acme --json
  kopek merchant activate-live 7f1c…
  kopek merchant activate-live --merchant 7f1c…`;

export const merchant: Command = {
  name: 'merchant',
  summary: 'create merchants; activate live mode',
  usage: merchantUsage,
  run: (argv) => runSubcommand('merchant', parseArgs(argv), {
    async create(args) {
      onlyFlags(args, ['name']);
      atMostPositionals(args.positional, 1, 'kopek merchant create --name NAME');
      const name = flag(args, 'name');
      if (!name?.trim()) throw new Error('cannot create merchant: --name NAME is required and must not be empty');
      const m = await withStore(args, async (store) => createMerchant(store, name, Date.now()), { create: true });
      output(args, { id: m.id, name: m.name }, [m.id]);
    },
    async 'activate-live'(args) {
      onlyFlags(args, ['merchant']);
      const { id, rest } = idArg(args, 'merchant');
      atMostPositionals(rest, 0, 'kopek merchant activate-live MERCHANT_ID');
      if (!id) throw new Error('cannot activate live mode: MERCHANT_ID is required (or --merchant MERCHANT_ID)');
      const r = await withStore(args, async (store) => activateLive(store, id));
      output(args, r, [
        `live mode on for merchant ${r.id}`,
        `shops with an acquirer: ${r.shops_with_acquirer.join(', ') || '(none)'}`,
        `shops with a payout provider: ${r.shops_with_payout_provider?.join(', ') ?? '(none)'}`,
      ]);
    },
  }),
};

const keyUsage = `Usage:
  kopek key create --shop ID --mode test|live [--scopes S1,S2]
  kopek key list --shop ID
  kopek key revoke KEY [--shop ID]

create   issues an API key (scopes default to the shop's) and prints it once; only its hash is stored.
         A live key is made even before live mode works for the shop, with a warning naming what is missing
         (live mode of the merchant, the shop's acquirer, a way to send payouts) and the command that adds it
list     lists the shop's keys under a header: id, mode, prefix, scopes, created, revoked
revoke   revokes a key at once (a running server refuses it from the next request; nodes on PostgreSQL
         within milliseconds). KEY is its id, the key itself, or the prefix key list shows (sk_test_AbCd…;
         a prefix two keys share is refused naming both); it may also be given as --key KEY. With --shop,
         only a key of that shop is found.

None of these reads a secret sealed under the master key, so on PostgreSQL they run without
KOPEK_MASTER_KEY (a live key's warnings too); keys are stored as hashes only.

Options:
${COMMON_OPTIONS}

Examples:
  kopek key create --shop 3b9e… --mode test
  kopek key create --shop 3b9e… --mode live --scopes api:reports:read --json
  kopek key list --shop 3b9e…
  kopek key revoke 0c55…
  kopek key revoke sk_test_AbCd… --shop 3b9e…
  kopek key revoke --key 0c55…`;

/** Acquirers whose BankPort sends no payouts: T-Bank's acquiring takes payments only (live payouts: 403 payouts_not_configured). */
const NO_PAYOUTS = new Set([TBANK]);

/** What a live key cannot do yet, each with the next step: the key is still made, but its first call would otherwise be the first sign. */
async function liveKeyWarnings(store: Store, shopId: string): Promise<string[]> {
  const shop = await getShopSettings(store, shopId);
  if (!shop) return [];
  const merchant = await getMerchant(store, shop.merchant_id);
  const acquirer = await shopAcquirer(store, shopId);
  const payouts = await shopPayoutProvider(store, shopId);
  const out: string[] = [];
  if (!merchant?.live_enabled) {
    out.push(
      `live mode is not activated for merchant ${shop.merchant_id}: the key answers 403 live_mode_not_activated until ` +
        `kopek merchant activate-live ${shop.merchant_id}${acquirer || payouts ? '' : ' (once a shop of the merchant has an acquirer or a payout provider)'}`,
    );
  }
  if (!acquirer) {
    const refused = payouts ? 'live payments, refunds, tokens and subscriptions answer' : 'the key answers';
    out.push(
      `shop ${shopId} has no acquirer: ${refused} 403 acquirer_not_configured until kopek shop acquirer --shop ${shopId} ` +
        `--provider tbank --terminal-key KEY --password-file FILE${payouts ? `; payouts go to ${payouts.provider}` : ''}`,
    );
  } else if (!payouts && NO_PAYOUTS.has(acquirer.provider)) {
    out.push(`shop ${shopId} has no payout provider (its ${acquirer.provider} acquirer takes payments only): live payouts answer 403 payouts_not_configured until kopek shop payouts --shop ${shopId} --provider yookassa --agent-id ID --secret-file FILE`);
  }
  return out;
}

export const key: Command = {
  name: 'key',
  summary: 'issue, list and revoke API keys',
  usage: keyUsage,
  run: (argv) => runSubcommand('key', parseArgs(argv), { create: keyCreate, list: keyList, revoke: keyRevoke }),
};

async function keyCreate(args: Args): Promise<void> {
  onlyFlags(args, ['shop', 'mode', 'scopes']);
  atMostPositionals(args.positional.slice(1), 0, 'kopek key create --shop ID --mode test|live [--scopes S1,S2]');
  const [shopId, mode] = [flag(args, 'shop'), flag(args, 'mode')];
  if (!shopId || !mode) throw new Error('cannot create key: --shop ID and --mode test|live are required');
  if (mode !== 'test' && mode !== 'live') throw new Error(`cannot create key: --mode must be test or live, got "${mode}"`);
  const { k, secret, warnings } = await withStore(args, async (store) => {
    const made = await createKey(store, shopId, mode, flag(args, 'scopes'), Date.now());
    return { k: made.key, secret: made.secret, warnings: mode === 'live' ? await liveKeyWarnings(store, shopId) : [] };
  });
  output(args, { id: k.id, key: secret, mode: k.mode, scopes: splitList(k.scopes), ...(mode === 'live' ? { warnings } : {}) }, [
    `key id  ${k.id}`,
    `key     ${secret}   (shown once)`,
  ]);
  // On stderr, so that --json stays one object on stdout and a script still sees the key was made (exit 0).
  for (const w of warnings) io().err(`kopek key: warning: ${w}\n`);
}

async function keyList(args: Args): Promise<void> {
  onlyFlags(args, ['shop']);
  atMostPositionals(args.positional.slice(1), 0, 'kopek key list --shop ID');
  const shopId = flag(args, 'shop');
  if (!shopId) throw new Error('cannot list keys: --shop ID is required');
  const keys = (await withStore(args, (store) => listKeys(store, shopId))).map((k) => ({
    id: k.id, mode: k.mode, prefix: k.key_prefix, scopes: splitList(k.scopes), created_at: iso(k.created_at),
    revoked_at: isoOrNull(k.revoked_at),
  }));
  const rows = keys.map((k) => [k.id, k.mode, `${k.prefix}…`, k.scopes.join(',') || '(none)', k.created_at, k.revoked_at ?? '-']);
  output(args, { items: keys }, keys.length === 0 ? ['(no keys)'] : table(['ID', 'MODE', 'PREFIX', 'SCOPES', 'CREATED', 'REVOKED'], rows));
}

async function keyRevoke(args: Args): Promise<void> {
  onlyFlags(args, ['key', 'shop']);
  const { id: ref, rest } = idArg(args, 'key');
  atMostPositionals(rest, 0, 'kopek key revoke KEY [--shop ID]');
  if (!ref) throw new Error('cannot revoke key: KEY is required: its id, the key itself or its prefix (or --key KEY)');
  const id = await withStore(args, async (store) => {
    const found = await findKeyToRevoke(store, ref, flag(args, 'shop'));
    await revokeKey(store, found.id, Date.now());
    return found.id;
  });
  output(args, { id, revoked: true }, [`revoked ${id}`]);
}

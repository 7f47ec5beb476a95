import { parseArgs, flag, onlyFlags, atMostPositionals, idArg, type Args } from '../platform/args';
import { COMMON_OPTIONS, io, output, runSubcommand, splitList, table, withStore, type Command } from './command';
import { createKey, findKeyToRevoke, getMerchant, getShopSettings, listKeys, revokeKey } from '../money/shops/store';
import { shopAcquirer, shopPayoutProvider } from '../money/bank-port/store';
import { TBANK } from '../banks/tbank/protocol';
import { iso, isoOrNull } from '../platform/util/time';
import type { Store } from '../platform/storage/store';

const usage = `Usage:
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
  usage,
  run: (argv) => runSubcommand('key', parseArgs(argv), { create, list, revoke }),
};

async function create(args: Args): Promise<void> {
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

async function list(args: Args): Promise<void> {
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

async function revoke(args: Args): Promise<void> {
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

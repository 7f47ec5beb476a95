import { readFileSync } from 'node:fs';
import { loadConfig } from '../platform/config';
import { parseArgs, flag, onlyFlags, atMostPositionals } from '../platform/args';
import { io, output, withStore } from './command';
import { getShopSettings } from '../money/shops/store';
import { removePayoutProvider, setPayoutProvider, showPayoutProvider, type PayoutProviderView } from '../web/cabinet/payout-provider';
import { allowListOf, literalRefusal } from '../money/webhooks/url-safety';

/** The usage lines of `kopek shop payouts`, part of `kopek shop --help`. */
export const PAYOUTS_USAGE = `  kopek shop payouts --shop SHOP --provider yookassa --agent-id ID --secret-file FILE [--api-url URL]
  kopek shop payouts --shop SHOP [--remove]`;

const LINE = 'kopek shop payouts --shop SHOP [--provider yookassa --agent-id ID --secret-file FILE [--api-url URL] | --remove]';

function lines(v: PayoutProviderView): string[] {
  return Object.entries(v).map(([k, x]) => `${k.padEnd(9)} ${x}`);
}

/** Read the secret key from a file; one trailing newline is not part of it. */
function readSecret(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot set the payout provider: cannot read the secret key file "${path}" (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return text.replace(/\r?\n$/, '');
}

/** How long the credentials check may wait: --acquirer-timeout as the server reads it (KOPEK_ACQUIRER_TIMEOUT, else its default). */
function checkTimeoutMs(): number {
  return loadConfig([], process.env).acquirerTimeoutSeconds * 1000;
}

/**
 * `kopek shop payouts`: set a shop's live payout provider (its credentials checked at the provider first, the
 * secret key sealed under the master key and never printed), show it, or remove it.
 */
export async function runPayouts(argv: string[]): Promise<number> {
  const args = parseArgs(argv, ['json', 'help', 'remove']);
  onlyFlags(args, ['shop', 'provider', 'agent-id', 'secret-file', 'api-url', 'remove']);
  atMostPositionals(args.positional, 0, LINE);
  const shopId = flag(args, 'shop');
  if (!shopId) throw new Error(`cannot run shop payouts: --shop SHOP is required; usage: ${LINE}`);
  const setting = ['provider', 'agent-id', 'secret-file', 'api-url'].filter((f) => args.flags.has(f));
  if (args.flags.has('remove') && setting.length > 0) throw new Error(`cannot run shop payouts: --remove takes no other option but --shop; usage: ${LINE}`);
  return withStore(args, async (store) => {
    if (!(await getShopSettings(store, shopId))) throw new Error(`cannot run shop payouts: shop "${shopId}" not found`);
    if (args.flags.has('remove')) {
      const had = await removePayoutProvider(store, shopId);
      output(args, { shop_id: shopId, removed: had }, [had ? 'payout provider removed: live payouts of the shop answer 403 payouts_not_configured' : 'the shop had no payout provider']);
      return 0;
    }
    if (setting.length === 0) {
      const p = await showPayoutProvider(store, shopId);
      if (!p) throw new Error(`cannot show the payout provider of shop "${shopId}": none is set`);
      output(args, p, lines(p));
      return 0;
    }
    const agentId = flag(args, 'agent-id');
    const file = flag(args, 'secret-file');
    if (!flag(args, 'provider') || !agentId || !file) {
      throw new Error(`cannot set the payout provider: --provider yookassa, --agent-id ID and --secret-file FILE are required; usage: ${LINE}`);
    }
    const input = { provider: flag(args, 'provider')!, agentId, secret: readSecret(file), apiUrl: flag(args, 'api-url') };
    const v = await setPayoutProvider(store, shopId, input, { now: Date.now(), timeoutMs: checkTimeoutMs() });
    output(args, v, lines(v));
    // Set as the operator asked; but the server calls such an address only inside its --webhook-allow ranges.
    const why = literalRefusal(new URL(v.api_url), allowListOf([]));
    if (why) io().err(`note: the API address is the ${why}: the server calls it only when started with --webhook-allow covering it\n`);
    return 0;
  });
}

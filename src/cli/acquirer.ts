import { readFileSync } from 'node:fs';
import { parseArgs, flag, onlyFlags, atMostPositionals } from '../platform/args';
import { io, output, withStore } from './command';
import { getShopSettings } from '../money/shops/store';
import { TBANK } from '../banks/tbank/protocol';
import { removeAcquirer, setTBankAcquirer, showAcquirer, type AcquirerView } from '../banks/tbank/settings';
import { allowListOf, literalRefusal } from '../money/webhooks/url-safety';

/** The usage lines of `kopek shop acquirer`, part of `kopek shop --help`. */
export const ACQUIRER_USAGE = `  kopek shop acquirer --shop SHOP --provider tbank --terminal-key KEY --password-file FILE [--api-url URL]
  kopek shop acquirer --shop SHOP [--remove]`;

const LINE = 'kopek shop acquirer --shop SHOP [--provider tbank --terminal-key KEY --password-file FILE [--api-url URL] | --remove]';

function lines(v: AcquirerView): string[] {
  return Object.entries(v).map(([k, x]) => `${k.padEnd(13)} ${x}`);
}

/** Read the terminal password from a file; one trailing newline is not part of it. */
function readPassword(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot set the acquirer: cannot read the password file "${path}" (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return text.replace(/\r?\n$/, '');
}

/**
 * `kopek shop acquirer`: set a shop's live acquirer (the password encrypted under the master key, never
 * printed), show it, or remove it.
 */
export async function runAcquirer(argv: string[]): Promise<number> {
  const args = parseArgs(argv, ['json', 'help', 'remove']);
  onlyFlags(args, ['shop', 'provider', 'terminal-key', 'password-file', 'api-url', 'remove']);
  atMostPositionals(args.positional, 0, LINE);
  const shopId = flag(args, 'shop');
  if (!shopId) throw new Error(`cannot run shop acquirer: --shop SHOP is required; usage: ${LINE}`);
  const setting = ['provider', 'terminal-key', 'password-file', 'api-url'].filter((f) => args.flags.has(f));
  if (args.flags.has('remove') && setting.length > 0) throw new Error(`cannot run shop acquirer: --remove takes no other option but --shop; usage: ${LINE}`);
  return withStore(args, async (store) => {
    if (!(await getShopSettings(store, shopId))) throw new Error(`cannot run shop acquirer: shop "${shopId}" not found`);
    if (args.flags.has('remove')) {
      const had = await removeAcquirer(store, shopId);
      output(args, { shop_id: shopId, removed: had }, [had ? 'acquirer removed: live keys of the shop answer 403 acquirer_not_configured' : 'the shop had no acquirer']);
      return 0;
    }
    if (setting.length === 0) {
      const a = await showAcquirer(store, shopId);
      if (!a) throw new Error(`cannot show the acquirer of shop "${shopId}": none is set`);
      output(args, a, lines(a));
      return 0;
    }
    const provider = flag(args, 'provider');
    if (provider !== TBANK) throw new Error(`cannot set the acquirer: --provider must be ${TBANK}, got "${provider ?? ''}"`);
    const terminalKey = flag(args, 'terminal-key');
    const file = flag(args, 'password-file');
    if (!terminalKey || !file) throw new Error(`cannot set the acquirer: --terminal-key KEY and --password-file FILE are required; usage: ${LINE}`);
    const v = await setTBankAcquirer(store, shopId, { terminalKey, password: readPassword(file), apiUrl: flag(args, 'api-url') }, Date.now());
    output(args, v, lines(v));
    // Set as the operator asked; but the server calls such an address only inside its --webhook-allow ranges.
    const why = literalRefusal(new URL(v.api_url), allowListOf([]));
    if (why) io().err(`note: the API address is the ${why}: the server calls it only when started with --webhook-allow covering it\n`);
    return 0;
  });
}

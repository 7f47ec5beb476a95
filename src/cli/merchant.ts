import { parseArgs, flag, onlyFlags, atMostPositionals, idArg } from '../platform/args';
import { COMMON_OPTIONS, output, runSubcommand, withStore, type Command } from './command';
import { activateLive, createMerchant } from '../money/shops/store';

const usage = `Usage:
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
  usage,
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

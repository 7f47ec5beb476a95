import { parseArgs, flag, onlyFlags } from './args';
import { COMMON_OPTIONS, openStore, output, type Command } from './command';
import { activateLive, createMerchant } from '../cabinet/store';

const usage = `Usage:
  kopek merchant create --name NAME
  kopek merchant activate-live MERCHANT_ID

create          creates a merchant and prints its id
activate-live   turns on live mode; refused, with the reason, until the merchant has a bank connector

Options:
${COMMON_OPTIONS}

Examples:
  kopek merchant create --name "Tea shop LLC"
  kopek merchant create --name Acme --json`;

/** `kopek merchant` */
export const merchant: Command = {
  name: 'merchant',
  summary: 'create merchants; activate live mode',
  usage,
  run(argv) {
    const args = parseArgs(argv);
    const [sub, id] = args.positional;
    const store = openStore(args);
    try {
      if (sub === 'create') {
        onlyFlags(args, ['name']);
        const name = flag(args, 'name');
        if (!name) throw new Error('merchant create needs --name NAME');
        const m = createMerchant(store, name, Date.now());
        output(args, { id: m.id, name: m.name }, [m.id]);
        return 0;
      }
      if (sub === 'activate-live') {
        onlyFlags(args, []);
        if (!id) throw new Error('merchant activate-live needs MERCHANT_ID');
        activateLive(store, id);
      }
      throw new Error(`unknown subcommand "${sub ?? ''}"; see kopek merchant --help`);
    } finally {
      store.db.close();
    }
  },
};

import { parseArgs, flag, onlyFlags } from './args';
import { COMMON_OPTIONS, openStore, output, type Command } from './command';
import { createKey, listKeys, revokeKey } from '../cabinet/store';
import { iso } from '../util/time';

const usage = `Usage:
  kopek key create --shop ID --mode test|live [--scopes S1,S2]
  kopek key list --shop ID
  kopek key revoke KEY_ID

create   issues an API key (scopes default to the shop's) and prints it once; only its hash is stored
list     lists the shop's keys: id, mode, prefix, scopes, created, revoked
revoke   revokes a key at once

Options:
${COMMON_OPTIONS}

Examples:
  kopek key create --shop 3b9e… --mode test
  kopek key create --shop 3b9e… --mode live --scopes api:reports:read --json
  kopek key revoke 0c55…`;

/** `kopek key` */
export const key: Command = {
  name: 'key',
  summary: 'issue, list and revoke API keys',
  usage,
  run(argv) {
    const args = parseArgs(argv);
    const [sub, id] = args.positional;
    const store = openStore(args);
    try {
      if (sub === 'create') {
        onlyFlags(args, ['shop', 'mode', 'scopes']);
        const shopId = flag(args, 'shop');
        const mode = flag(args, 'mode');
        if (!shopId || !mode) throw new Error('key create needs --shop ID and --mode test|live');
        if (mode !== 'test' && mode !== 'live') throw new Error(`--mode must be test or live, not "${mode}"`);
        const { key: k, secret } = createKey(store, shopId, mode, flag(args, 'scopes'), Date.now());
        output(args, { id: k.id, key: secret, mode: k.mode, scopes: k.scopes.split(',').filter(Boolean) }, [
          `key id  ${k.id}`,
          `key     ${secret}   (shown once)`,
        ]);
        return 0;
      }
      if (sub === 'list') {
        onlyFlags(args, ['shop']);
        const shopId = flag(args, 'shop');
        if (!shopId) throw new Error('key list needs --shop ID');
        const keys = listKeys(store, shopId).map((k) => ({
          id: k.id,
          mode: k.mode,
          prefix: k.key_prefix,
          scopes: k.scopes.split(',').filter(Boolean),
          created_at: iso(k.created_at),
          revoked_at: k.revoked_at === null ? null : iso(k.revoked_at),
        }));
        output(
          args,
          { items: keys },
          keys.length === 0
            ? ['(no keys)']
            : keys.map((k) => `${k.id}  ${k.mode.padEnd(4)}  ${k.prefix}…  ${k.revoked_at ? 'revoked ' + k.revoked_at : 'active'}  ${k.scopes.join(',')}`),
        );
        return 0;
      }
      if (sub === 'revoke') {
        onlyFlags(args, []);
        if (!id) throw new Error('key revoke needs KEY_ID');
        revokeKey(store, id, Date.now());
        output(args, { id, revoked: true }, [`revoked ${id}`]);
        return 0;
      }
      throw new Error(`unknown subcommand "${sub ?? ''}"; see kopek key --help`);
    } finally {
      store.db.close();
    }
  },
};

import { parseArgs, flag, onlyFlags, atMostPositionals } from './args';
import { COMMON_OPTIONS, output, withStore, type Command } from './command';
import { createKey, listKeys, revokeKey } from '../cabinet/store';
import { iso } from '../util/time';
import type { Store } from '../db/store';
import type { Args } from './args';

const usage = `Usage:
  kopek key create --shop ID --mode test|live [--scopes S1,S2]
  kopek key list --shop ID
  kopek key revoke KEY_ID

create   issues an API key (scopes default to the shop's) and prints it once; only its hash is stored
list     lists the shop's keys: id, mode, prefix, scopes, created, revoked
revoke   revokes a key at once (a running server refuses it from the next request)

Options:
${COMMON_OPTIONS}

Examples:
  kopek key create --shop 3b9e… --mode test
  kopek key create --shop 3b9e… --mode live --scopes api:reports:read --json
  kopek key list --shop 3b9e…
  kopek key revoke 0c55…`;

async function create(store: Store, args: Args): Promise<void> {
  const shopId = flag(args, 'shop')!;
  const mode = flag(args, 'mode') as 'test' | 'live';
  const { key: k, secret } = await createKey(store, shopId, mode, flag(args, 'scopes'), Date.now());
  output(args, { id: k.id, key: secret, mode: k.mode, scopes: k.scopes.split(',').filter(Boolean) }, [
    `key id  ${k.id}`,
    `key     ${secret}   (shown once)`,
  ]);
}

async function list(store: Store, args: Args): Promise<void> {
  const keys = (await listKeys(store, flag(args, 'shop')!)).map((k) => ({
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
}

/** `kopek key` */
export const key: Command = {
  name: 'key',
  summary: 'issue, list and revoke API keys',
  usage,
  async run(argv) {
    const args = parseArgs(argv);
    const [sub, id] = args.positional;
    let act: (store: Store) => Promise<void>;
    if (sub === 'create') {
      onlyFlags(args, ['shop', 'mode', 'scopes']);
      atMostPositionals(args, 1, 'kopek key create --shop ID --mode test|live [--scopes S1,S2]');
      const mode = flag(args, 'mode');
      if (!flag(args, 'shop') || !mode) throw new Error('cannot create key: --shop ID and --mode test|live are required');
      if (mode !== 'test' && mode !== 'live') throw new Error(`cannot create key: --mode must be test or live, got "${mode}"`);
      act = (store) => create(store, args);
    } else if (sub === 'list') {
      onlyFlags(args, ['shop']);
      atMostPositionals(args, 1, 'kopek key list --shop ID');
      if (!flag(args, 'shop')) throw new Error('cannot list keys: --shop ID is required');
      act = (store) => list(store, args);
    } else if (sub === 'revoke') {
      onlyFlags(args, []);
      atMostPositionals(args, 2, 'kopek key revoke KEY_ID');
      if (!id) throw new Error('cannot revoke key: KEY_ID is required');
      act = async (store) => {
        await revokeKey(store, id, Date.now());
        output(args, { id, revoked: true }, [`revoked ${id}`]);
      };
    } else {
      throw new Error(`unknown subcommand "${sub ?? ''}"; see kopek key --help`);
    }
    await withStore(args, act);
    return 0;
  },
};

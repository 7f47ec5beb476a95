import { parseArgs, flag, onlyFlags } from './args';
import { COMMON_OPTIONS, openStore, output, type Command } from './command';
import {
  createShop,
  getShop,
  rotateSigningSecret,
  setIpAllowlist,
  setRequireSignature,
  setShopScopes,
} from '../cabinet/store';
import { ALL_SCOPES } from '../auth/scopes';

const usage = `Usage:
  kopek shop create --merchant ID --name NAME [--scopes S1,S2]
  kopek shop show SHOP_ID
  kopek shop scopes SHOP_ID S1,S2
  kopek shop ip-allowlist SHOP_ID [ENTRY,...]
  kopek shop signing-secret SHOP_ID
  kopek shop require-signature SHOP_ID on|off

create             creates a shop (all scopes unless --scopes); prints its id and its fallback webhook secret once
show               prints the shop's settings (never its secrets)
scopes             replaces the scopes enabled for the shop
ip-allowlist       replaces the allow-list (IPv4, IPv6, CIDR of both); no entries clears it
signing-secret     rotates the thm_ request-signing secret and prints the new one once
require-signature  requires X-PSP-Signature on every request of the shop's keys, or not

Scopes: ${ALL_SCOPES.join(', ')}

Options:
${COMMON_OPTIONS}

Examples:
  kopek shop create --merchant 7f1c… --name "Main shop"
  kopek shop ip-allowlist 3b9e… 203.0.113.0/24,2001:db8::/32
  kopek shop require-signature 3b9e… on`;

/** `kopek shop` */
export const shop: Command = {
  name: 'shop',
  summary: 'create shops; set scopes, IP allow-list, request signing',
  usage,
  run(argv) {
    const args = parseArgs(argv);
    const [sub, id, value] = args.positional;
    const store = openStore(args);
    try {
      if (sub === 'create') {
        onlyFlags(args, ['merchant', 'name', 'scopes']);
        const merchantId = flag(args, 'merchant');
        const name = flag(args, 'name');
        if (!merchantId || !name) throw new Error('shop create needs --merchant ID and --name NAME');
        const s = createShop(store, merchantId, name, flag(args, 'scopes'), Date.now());
        output(args, { id: s.id, webhook_secret: s.webhook_secret, signing_secret: s.signing_secret }, [
          `shop            ${s.id}`,
          `webhook secret  ${s.webhook_secret}   (shown once)`,
          `signing secret  ${s.signing_secret}   (shown once)`,
        ]);
        return 0;
      }
      onlyFlags(args, []);
      if (!id) throw new Error(`shop ${sub ?? ''} needs SHOP_ID; see kopek shop --help`);
      if (sub === 'show') {
        const s = getShop(store, id);
        if (!s) throw new Error(`shop "${id}" not found`);
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
        return 0;
      }
      if (sub === 'scopes') {
        if (value === undefined) throw new Error('shop scopes needs SHOP_ID S1,S2');
        const list = setShopScopes(store, id, value);
        output(args, { id, scopes: list }, [`scopes: ${list.join(',') || '(none)'}`]);
        return 0;
      }
      if (sub === 'ip-allowlist') {
        const list = setIpAllowlist(store, id, value ?? '');
        output(args, { id, ip_allowlist: list }, [list.length ? `allow-list: ${list.join(',')}` : 'allow-list cleared: any address']);
        return 0;
      }
      if (sub === 'signing-secret') {
        const s = rotateSigningSecret(store, id);
        output(args, { id, secret: s }, [`${s}   (shown once; the old secret no longer verifies)`]);
        return 0;
      }
      if (sub === 'require-signature') {
        if (value !== 'on' && value !== 'off') throw new Error('shop require-signature needs on or off');
        setRequireSignature(store, id, value === 'on');
        output(args, { id, require_signature: value === 'on' }, [`require-signature ${value}`]);
        return 0;
      }
      throw new Error(`unknown subcommand "${sub ?? ''}"; see kopek shop --help`);
    } finally {
      store.db.close();
    }
  },
};

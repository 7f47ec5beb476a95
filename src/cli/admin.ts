import { readFileSync } from 'node:fs';
import { parseArgs, flag, onlyFlags, atMostPositionals } from '../platform/args';
import { defaultConfig } from '../platform/config';
import { COMMON_OPTIONS, output, outputList, runSubcommand, withStore, type Command } from './command';
import { createUser, disableUser, listUsers } from '../web/cabinet/users';
import { iso, isoOrNull } from '../platform/util/time';
import { hostForUrl } from '../money/core/build';

const usage = `Usage:
  kopek admin create --merchant MERCHANT_ID --email EMAIL --password-file FILE [--base-url URL]
  kopek admin list [--merchant MERCHANT_ID]
  kopek admin disable USER_ID|EMAIL

create    makes a user of the merchant cabinet (/cabinet/ on the server) for that merchant; the password is
          read from FILE (its first line; at least 10 characters) and only its scrypt hash is stored; prints
          the sign-in address under --base-url (else KOPEK_BASE_URL, else http://KOPEK_HOST:KOPEK_PORT, by
          default http://127.0.0.1:8080): the address the server is reached at
list      lists cabinet users: id, email, merchant, two-step sign-in, disabled
disable   disables a user and ends their sessions at once

Options:
${COMMON_OPTIONS}

Examples:
  kopek admin create --merchant 7f1c… --email owner@shop.example --password-file ./owner.pw
  kopek admin create --merchant 7f1c… --email ops@shop.example --password-file ./ops.pw --base-url https://pay.shop.example --json
  kopek admin list --merchant 7f1c…
  kopek admin disable ops@shop.example`;

function readPassword(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot create cabinet user: cannot read password file "${path}": ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return text.split(/\r?\n/)[0];
}

// The server's address as serve works it out (--base-url, KOPEK_BASE_URL, else http://HOST:PORT from KOPEK_HOST/KOPEK_PORT),
// checked before anything is written; `action` begins the error.
export function serverUrl(given: string | undefined, action = 'cannot create cabinet user'): string {
  const env = process.env;
  const raw = given ?? (env.KOPEK_BASE_URL || undefined);
  if (raw === undefined) {
    const d = defaultConfig();
    return `http://${hostForUrl(env.KOPEK_HOST || d.host)}:${env.KOPEK_PORT || d.port}`;
  }
  const protocol = URL.canParse(raw) ? new URL(raw).protocol : '';
  if (protocol !== 'http:' && protocol !== 'https:') throw new Error(`${action}: --base-url must be an http(s) URL, got "${raw}"`);
  return raw.replace(/\/+$/, '');
}

export const admin: Command = {
  name: 'admin',
  summary: 'create, list and disable merchant cabinet users',
  usage,
  run: (argv) => runSubcommand('admin', parseArgs(argv), {
    async create(args) {
      onlyFlags(args, ['merchant', 'email', 'password-file', 'base-url']);
      atMostPositionals(args.positional, 1, 'kopek admin create --merchant MERCHANT_ID --email EMAIL --password-file FILE [--base-url URL]');
      const [merchantId, email, file] = [flag(args, 'merchant'), flag(args, 'email'), flag(args, 'password-file')];
      if (!merchantId || !email || !file) throw new Error('cannot create cabinet user: --merchant, --email and --password-file are required');
      const signIn = `${serverUrl(flag(args, 'base-url'))}/cabinet/login`;
      const password = readPassword(file);
      const u = await withStore(args, async (store) => createUser(store, { merchantId, email, password }, Date.now()));
      output(args, { id: u.id, email: u.email, merchant_id: u.merchant_id }, [`user     ${u.id}`, `email    ${u.email}`, `sign in  ${signIn}`]);
    },
    async list(args) {
      onlyFlags(args, ['merchant']);
      atMostPositionals(args.positional, 1, 'kopek admin list [--merchant MERCHANT_ID]');
      const items = (await withStore(args, async (store) => listUsers(store, flag(args, 'merchant')))).map((u) => ({
        id: u.id, email: u.email, merchant_id: u.merchant_id, totp: u.totp_secret !== null, created_at: iso(u.created_at),
        disabled_at: isoOrNull(u.disabled_at),
      }));
      outputList(args, items, '(no users)', (u) => `${u.id}  ${u.email}  merchant ${u.merchant_id}  ${u.totp ? 'totp' : 'password'}  ${u.disabled_at ? 'disabled ' + u.disabled_at : 'active'}`);
    },
    async disable(args) {
      onlyFlags(args, []);
      atMostPositionals(args.positional, 2, 'kopek admin disable USER_ID|EMAIL');
      const id = args.positional[1];
      if (!id) throw new Error('cannot disable cabinet user: USER_ID or EMAIL is required');
      const u = await withStore(args, async (store) => disableUser(store, id, Date.now()));
      output(args, { id: u.id, email: u.email, disabled: true }, [`disabled ${u.email}; their sessions ended`]);
    },
  }),
};

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../helpers/cli';
import { ALL_SCOPES } from '../../src/platform/auth/scopes';
import { WEBHOOK_EVENTS } from '../../src/money/webhooks/store';

// Every command's flags as an operator or a script types them: `--x=y` and `--x y`, a flag given twice, an
// unknown flag, a flag without its value, switches (--json, --no-demo), positionals, `--` and --help. The
// error texts and exit codes are what scripts read, so each is compared whole.

const dir = mkdtempSync(join(tmpdir(), 'kopek-flags-'));
const db = join(dir, 'k.db');
let ids: Record<string, string>;
const savedEnv = { url: process.env.KOPEK_URL, key: process.env.KOPEK_KEY };

before(async () => {
  delete process.env.KOPEK_URL;
  delete process.env.KOPEK_KEY;
  const d = await runCli(['demo', '--json', '--db', db]);
  assert.equal(d.code, 0, d.err);
  ids = { $SHOP: d.json.shop_id, $M: d.json.merchant_id };
  writeFileSync(join(dir, 'pw'), 'a-long-enough-password\n');
});
after(() => {
  for (const [k, v] of [['KOPEK_URL', savedEnv.url], ['KOPEK_KEY', savedEnv.key]] as const) if (v !== undefined) process.env[k] = v;
  rmSync(dir, { recursive: true, force: true });
});

/** `words` with $DB, $DIR, $SHOP and $M replaced. */
function expand(words: string[]): string[] {
  return words.map((w) => w.replaceAll('$DB', db).replaceAll('$DIR', dir).replace(/\$SHOP|\$M/g, (k) => ids[k]));
}

/** A case: the words after `kopek`, and the one stderr line of the failure (exit 1), or a pattern of stdout (exit 0). */
type Case = [string[], string | RegExp];

async function check(cases: readonly Case[]): Promise<void> {
  for (const [words, expected] of cases) {
    const argv = expand(words);
    const r = await runCli(argv);
    const what = argv.join(' ');
    if (typeof expected === 'string') {
      assert.deepEqual({ code: r.code, out: r.out, err: r.err }, { code: 1, out: '', err: expand([expected])[0] + '\n' }, what);
    } else {
      assert.equal(r.code, 0, `${what}: ${r.err}`);
      assert.match(r.out, expected, what);
    }
  }
}

const COMMANDS_TESTED = ['serve', 'demo', 'merchant', 'shop', 'key', 'ledger', 'jobs', 'webhook', 'admin', 'backup', 'doctor', 'migrate', 'db', 'trigger', 'listen'];

test('kopek --help lists the commands this file covers; each --help and -h prints its usage, whatever else is given', async () => {
  const top = await runCli(['--help']);
  assert.equal(top.code, 0);
  const listed = [...top.out.split('Commands:\n')[1].matchAll(/^  (\S+) /gm)].map((m) => m[1]);
  assert.deepEqual(listed, COMMANDS_TESTED);
  for (const argv of [['-h'], ['help']]) assert.equal((await runCli(argv)).out, top.out);
  for (const c of COMMANDS_TESTED) {
    const help = await runCli([c, '--help']);
    assert.equal(help.code, 0, c);
    assert.match(help.out, /^Usage:/, c);
    for (const argv of [[c, '-h'], [c, '--bogus', '--help'], [c, 'no-such-sub', '-h']]) assert.deepEqual(await runCli(argv), help, argv.join(' '));
  }
  const unknown = await runCli(['frobnicate', '--help']);
  assert.deepEqual([unknown.code, unknown.err], [2, 'kopek: unknown command "frobnicate"; run \'kopek --help\'\n']);
});

test('serve (and no command): flags and their environment variables, as loadConfig reads them', async () => {
  const K = 'sk_test_0123456789abcdefgh';
  await check([
    [['--bogus'], 'kopek serve: unknown option "--bogus"'],
    [['serve', '--bogus'], 'kopek serve: unknown option "--bogus"'],
    [['serve', '--bogus=1'], 'kopek serve: unknown option "--bogus=1"'],
    [['serve', '--help=1'], 'kopek serve: unknown option "--help=1"'],
    [['serve', '--no-port'], 'kopek serve: unknown option "--no-port"'],
    [['serve', '-x'], 'kopek serve: unknown option "-x"'],
    [['serve', 'extra'], 'kopek serve: unknown option "extra"'],
    [['serve', '--', '--port'], 'kopek serve: unknown option "--port"'],
    [['serve', '--port'], 'kopek serve: option --port needs a value'],
    [['serve', '--host', '--port', '80'], 'kopek serve: option --host needs a value'],
    [['serve', '--port=99999'], 'kopek serve: --port must be at most 65535, got 99999'],
    [['serve', '--port', '99999'], 'kopek serve: --port must be at most 65535, got 99999'],
    [['--port', '99999'], 'kopek serve: --port must be at most 65535, got 99999'],
    // Given twice: each value is checked in order, and the last is the one used.
    [['serve', '--port', 'x', '--port', '1'], 'kopek serve: --port must be a whole number, got "x"'],
    [['serve', '--port', '99999', '--port', '1', '--body-limit', '0'], 'kopek serve: --body-limit must be at least 1 byte, got 0'],
    [['serve', '--sim-delay', '-2'], 'kopek serve: --sim-delay must be a non-negative number, got "-2"'],
    [['serve', '--sim-delay=-2'], 'kopek serve: --sim-delay must be a non-negative number, got "-2"'],
    // Switches: --flag, --no-flag, the last of both wins, and --flag=VALUE spelled as in the environment.
    [['serve', '--no-demo', '--demo-key', K], 'kopek serve: --demo-key names the key of the demo data; it cannot be used with --no-demo'],
    [['serve', '--demo', '--no-demo', '--demo-key', K], 'kopek serve: --demo-key names the key of the demo data; it cannot be used with --no-demo'],
    [['serve', '--no-demo', '--demo', '--demo-key', 'bad'], 'kopek serve: --demo-key must be a test key, sk_test_ and 16 to 128 of A-Z a-z 0-9 _ -, got "bad"'],
    [['serve', '--demo=false', '--demo-key', K], 'kopek serve: --demo-key names the key of the demo data; it cannot be used with --no-demo'],
    [['serve', '--no-demo', '--demo=yes', '--demo-key', 'bad'], 'kopek serve: --demo-key must be a test key, sk_test_ and 16 to 128 of A-Z a-z 0-9 _ -, got "bad"'],
    [['serve', '--demo=maybe'], 'kopek serve: --demo must be true or false, got "maybe"'],
    [['serve', '--no-demo=1'], 'kopek serve: option --no-demo takes no value'],
    [['serve', '--ephemeral', '--db', 'x.db'], 'kopek serve: --ephemeral keeps the database in memory; it cannot be used with --db "x.db"'],
  ]);
  // The environment: read and checked first, a flag wins over it.
  process.env.KOPEK_DEMO = 'no';
  try {
    await check([
      [['serve', '--demo-key', K], 'kopek serve: --demo-key names the key of the demo data; it cannot be used with --no-demo'],
      [['serve', '--demo', '--demo-key', 'bad'], 'kopek serve: --demo-key must be a test key, sk_test_ and 16 to 128 of A-Z a-z 0-9 _ -, got "bad"'],
    ]);
    process.env.KOPEK_DEMO = 'maybe';
    await check([[['serve', '--demo'], 'kopek serve: KOPEK_DEMO must be true or false, got "maybe"']]);
  } finally {
    delete process.env.KOPEK_DEMO;
  }
});

test('flags every admin command reads the same way: unknown, missing values, switches, short options, --', async () => {
  await check([
    [['demo', '--bogus', 'x', '--db', '$DB'], 'kopek demo: unknown option --bogus'],
    [['demo', '--bogus=1', '--db', '$DB'], 'kopek demo: unknown option --bogus'],
    // A flag nobody knows is read as one taking a value, so without one it is refused as such.
    [['demo', '--bogus', '--db', '$DB'], 'kopek demo: option --bogus needs a value'],
    [['demo', '--db', '$DB', '--bogus'], 'kopek demo: option --bogus needs a value'],
    [['demo', '--db'], 'kopek demo: option --db needs a value'],
    [['demo', '--db', '--json'], 'kopek demo: option --db needs a value'],
    [['demo', '-x', '--db', '$DB'], 'kopek demo: unknown option -x'],
    [['demo', '-hx'], 'kopek demo: unknown option -hx'],
    [['demo', '--json=yes', '--db', '$DB'], 'kopek demo: option --json takes no value'],
    [['demo', '--help=1'], 'kopek demo: option --help takes no value'],
    [['demo', '--no-json', '--db', '$DB'], 'kopek demo: option --no-json needs a value'],
    [['demo', '--no-json', 'x', '--db', '$DB'], 'kopek demo: unknown option --no-json'],
    [['demo', 'extra', '--db', '$DB'], 'kopek demo: unexpected argument "extra"; usage: kopek demo [--db PATH] [--base-url URL] [--json]'],
    [['demo', '--base-url', 'ftp://x', '--db', '$DB'], 'kopek demo: cannot create the demo data: --base-url must be an http(s) URL, got "ftp://x"'],
    [['demo', '--base-url=ftp://y', '--db', '$DB'], 'kopek demo: cannot create the demo data: --base-url must be an http(s) URL, got "ftp://y"'],
    [['demo', '--base-url=ftp://y', '--base-url', 'ftp://z', '--db', '$DB'], 'kopek demo: cannot create the demo data: --base-url must be an http(s) URL, got "ftp://z"'],
    [['demo', '-hh', '--db', '$DB', '--base-url', 'ftp://q'], 'kopek demo: cannot create the demo data: --base-url must be an http(s) URL, got "ftp://q"'],
    [['demo', '--db=$DB', '--base-url', 'http://a.example', '--json'], /"base_url":"http:\/\/a.example"/],
    [['jobs', 'retry', '-5', '--db', '$DB'], 'kopek jobs: unknown option -5'],
    [['jobs', '--limit', '-5', '--db', '$DB'], 'kopek jobs: --limit must be an integer from 1 to 1000, not "-5"'],
    [['webhook', 'delete', '--db', '$DB', '--', '--x', 'y'], 'kopek webhook: unexpected argument "y"; usage: kopek webhook delete ENDPOINT_ID'],
    [['webhook', 'delete', '--db', '$DB', '--', '--x'], 'kopek webhook: cannot delete webhook endpoint "--x": not found'],
  ]);
});

test('merchant, shop and key: ids as a word or as --merchant/--shop/--key, the last of a repeated flag, stray words', async () => {
  await check([
    [['merchant', 'create', '--name=A', '--name', 'B', '--json', '--db', '$DB'], /^\{"id":"[0-9a-f-]{36}","name":"B"\}\n$/],
    [['merchant', 'create', '--name', '--db', '$DB'], 'kopek merchant: option --name needs a value'],
    [['merchant', 'create', '--name', 'X', '--bogus', '1', '--db', '$DB'], 'kopek merchant: unknown option --bogus'],
    [['merchant', 'create', '--name', 'X', 'extra', '--db', '$DB'], 'kopek merchant: unexpected argument "extra"; usage: kopek merchant create --name NAME'],
    [['merchant', 'activate-live', '--merchant=nope', '--db', '$DB'], 'kopek merchant: cannot activate live mode for merchant "nope": not found'],
    [['merchant', 'activate-live', 'nope', '--db', '$DB'], 'kopek merchant: cannot activate live mode for merchant "nope": not found'],
    [['merchant', 'activate-live', '--merchant', 'nope', 'more', '--db', '$DB'], 'kopek merchant: unexpected argument "more"; usage: kopek merchant activate-live MERCHANT_ID'],
    [['merchant', 'creat', '--db', '$DB'], 'kopek merchant: unknown subcommand "creat"; did you mean "merchant create"?; see kopek merchant --help'],
    [['merchant', '--db', '$DB'], 'kopek merchant: unknown subcommand ""; see kopek merchant --help'],
    [['shop', 'create', '--merchant=$M', '--name', 'S', '--scopes', 'bad', '--db', '$DB'], `kopek shop: cannot create shop: unknown scope "bad"; known: ${ALL_SCOPES.join(', ')}`],
    [['shop', 'show', '--shop=$SHOP', '--json', '--db', '$DB'], /^\{"id":"[0-9a-f-]{36}","merchant_id"/],
    [['shop', 'show', '$SHOP', '--json', '--db=$DB'], /"name":"Demo shop"/],
    [['shop', 'show', '$SHOP', 'extra', '--db', '$DB'], 'kopek shop: unexpected argument "extra"; usage: kopek shop show SHOP_ID'],
    [['shop', 'show', '--db', '$DB'], 'kopek shop: cannot run shop show: SHOP_ID is required (or --shop SHOP_ID); usage: kopek shop show SHOP_ID'],
    [['shop', 'show', '--shop', '$SHOP', '--mode', 'x', '--db', '$DB'], 'kopek shop: unknown option --mode'],
    [['shop', 'require-signature', '$SHOP', 'maybe', '--db', '$DB'], 'kopek shop: cannot set require-signature of shop "$SHOP": give on or off, got "maybe"'],
    [['shop', 'require-signature', '--shop', '$SHOP', 'off', '--json', '--db', '$DB'], /"require_signature":false/],
    [['key', 'create', '--shop=$SHOP', '--mode', 'sideways', '--db', '$DB'], 'kopek key: cannot create key: --mode must be test or live, got "sideways"'],
    [['key', 'create', '--shop', '$SHOP', '--mode=live', '--mode', 'test', '--json', '--db', '$DB'], /"mode":"test"/],
    [['key', 'create', '--shop', '$SHOP', '--mode', 'test', 'extra', '--db', '$DB'], 'kopek key: unexpected argument "extra"; usage: kopek key create --shop ID --mode test|live [--scopes S1,S2]'],
    [['key', 'list', '--shop', '$SHOP', '--db', '$DB'], /^ID +MODE +PREFIX/],
    [['key', 'list', '--db', '$DB'], 'kopek key: cannot list keys: --shop ID is required'],
    [['key', 'revoke', '--key=nope', '--db', '$DB'], 'kopek key: cannot revoke key "nope": not found; give its id, the key itself, or the prefix kopek key list shows'],
    [['key', 'revoke', 'nope', '--shop', '$SHOP', '--db', '$DB'], 'kopek key: cannot revoke key "nope": not found in shop "$SHOP"; give its id, the key itself, or the prefix kopek key list shows'],
    [['key', 'revoke', '--db', '$DB'], 'kopek key: cannot revoke key: KEY is required: its id, the key itself or its prefix (or --key KEY)'],
    [['key', 'revoke', 'a', 'b', '--db', '$DB'], 'kopek key: unexpected argument "b"; usage: kopek key revoke KEY [--shop ID]'],
    [['key', 'revok', '--db', '$DB'], 'kopek key: unknown subcommand "revok"; did you mean "key revoke"?; see kopek key --help'],
  ]);
});

test('shop acquirer and shop payouts: --remove is a switch, the rest take values', async () => {
  const acq = 'kopek shop acquirer --shop SHOP [--provider tbank --terminal-key KEY --password-file FILE [--api-url URL] | --remove]';
  const pay = 'kopek shop payouts --shop SHOP [--provider yookassa --agent-id ID --secret-file FILE [--api-url URL] | --remove]';
  await check([
    [['shop', 'acquirer', '--shop=nope', '--db', '$DB'], 'kopek shop: cannot run shop acquirer: shop "nope" not found'],
    [['shop', 'acquirer', '--shop', '$SHOP', '--db', '$DB'], 'kopek shop: cannot show the acquirer of shop "$SHOP": none is set'],
    [['shop', 'acquirer', '--shop', '$SHOP', '--remove', '--json', '--db', '$DB'], /^\{"shop_id":"[0-9a-f-]{36}","removed":false\}\n$/],
    [['shop', 'acquirer', '--shop', '$SHOP', '--remove', '--provider', 'x', '--db', '$DB'], `kopek shop: cannot run shop acquirer: --remove takes no other option but --shop; usage: ${acq}`],
    [['shop', 'acquirer', '--shop', '$SHOP', '--remove=yes', '--db', '$DB'], 'kopek shop: option --remove takes no value'],
    [['shop', 'acquirer', '--shop', '$SHOP', '--provider=nope', '--db', '$DB'], 'kopek shop: cannot set the acquirer: --provider must be tbank, got "nope"'],
    [['shop', 'acquirer', '--shop', '$SHOP', '--provider', 'tbank', '--terminal-key', 'T', '--password-file', '$DIR/none', '--db', '$DB'], 'kopek shop: cannot set the acquirer: cannot read the password file "$DIR/none" (ENOENT)'],
    [['shop', 'acquirer', '--shop', '$SHOP', '--bogus', '1', '--db', '$DB'], 'kopek shop: unknown option --bogus'],
    [['shop', 'acquirer', 'extra', '--shop', '$SHOP', '--db', '$DB'], `kopek shop: unexpected argument "extra"; usage: ${acq}`],
    [['shop', 'acquirer', '--db', '$DB'], `kopek shop: cannot run shop acquirer: --shop SHOP is required; usage: ${acq}`],
    [['shop', 'payouts', '--shop=$SHOP', '--db', '$DB'], 'kopek shop: cannot show the payout provider of shop "$SHOP": none is set'],
    [['shop', 'payouts', '--shop', '$SHOP', '--remove', '--json', '--db', '$DB'], /^\{"shop_id":"[0-9a-f-]{36}","removed":false\}\n$/],
    [['shop', 'payouts', '--shop', '$SHOP', '--remove', '--agent-id', '1', '--db', '$DB'], `kopek shop: cannot run shop payouts: --remove takes no other option but --shop; usage: ${pay}`],
    [['shop', 'payouts', '--shop', '$SHOP', '--provider', 'yookassa', '--db', '$DB'], `kopek shop: cannot set the payout provider: --provider yookassa, --agent-id ID and --secret-file FILE are required; usage: ${pay}`],
    [['shop', 'payouts', '--shop', '$SHOP', '--remove=1', '--db', '$DB'], 'kopek shop: option --remove takes no value'],
    [['shop', 'payouts', '--shop', '$SHOP', '--bogus', '1', '--db', '$DB'], 'kopek shop: unknown option --bogus'],
  ]);
});

test('ledger, jobs, migrate and doctor', async () => {
  await check([
    [['ledger', 'check', '--db', '$DB'], /^ok: 0 books balance\n$/],
    [['ledger', 'check', '--db=$DB', '--json'], /^\{"ok":true/],
    [['ledger', 'check', '--limit', '1', '--db', '$DB'], 'kopek ledger: unknown option --limit'],
    [['ledger', '--db', '$DB'], 'kopek ledger: unknown subcommand ""; see kopek ledger --help'],
    [['jobs', '--limit=0', '--db', '$DB'], 'kopek jobs: --limit must be an integer from 1 to 1000, not "0"'],
    [['jobs', 'list', '--limit', '5', '--json', '--db', '$DB'], /^\{"counts":\[\],"failing":\[\]\}\n$/],
    [['jobs', '--limit', '1', '--limit', '2000', '--db', '$DB'], 'kopek jobs: --limit must be an integer from 1 to 1000, not "2000"'],
    [['jobs', '--limit', '2000', '--limit', '1', '--db', '$DB'], /^\(no pending or dead jobs\)\n$/],
    [['jobs', 'retry', '--db', '$DB'], 'kopek jobs: jobs retry needs a numeric JOB_ID, not ""'],
    [['jobs', 'retry', '99', '--db', '$DB'], 'kopek jobs: cannot retry job 99: no such job'],
    [['jobs', 'retry', '99', '--limit', '1', '--db', '$DB'], 'kopek jobs: unknown option --limit'],
    [['jobs', 'lst', '--db', '$DB'], 'kopek jobs: unknown subcommand "lst"; did you mean "jobs list"?; see kopek jobs --help'],
    [['jobs', '--bogus', '1', '--db', '$DB'], 'kopek jobs: unknown option --bogus'],
    [['migrate', '--db=$DB', '--json'], /^\{"db":"[^"]+","engine":"sqlite","schema_version":\d+\}\n$/],
    [['migrate', '--db', '$DB', '--limit', '1'], 'kopek migrate: unknown option --limit'],
    [['doctor', '--db', '$DB', '--json', '--bogus', '1'], 'kopek doctor: unknown option --bogus'],
    [['doctor', 'extra', '--db', '$DB'], 'kopek doctor: unexpected argument "extra"; usage: kopek doctor [--db PATH]'],
    [['doctor', '--db=$DB', '--json'], /^\{"ok":true/],
  ]);
});

test('webhook and admin', async () => {
  await check([
    [['webhook', 'add', '--shop=$SHOP', '--url', 'ftp://x', '--db', '$DB'], 'kopek webhook: cannot use webhook URL "ftp://x": scheme must be https (or http for test mode)'],
    [['webhook', 'add', '--shop', '$SHOP', '--url=http://127.0.0.1:9/h', '--events', 'payment.failed', '--json', '--db', '$DB'], /"url":"http:\/\/127.0.0.1:9\/h","events":\["payment.failed"\]/],
    [['webhook', 'add', '--shop', '$SHOP', '--db', '$DB'], 'kopek webhook: webhook add needs --shop ID and --url URL'],
    [['webhook', 'list', '--shop', '$SHOP', '--db', '$DB'], /active {2}http:\/\/127.0.0.1:9\/h {2}payment.failed\n$/],
    [['webhook', 'list', '--shop=nope', '--db', '$DB'], 'kopek webhook: cannot list webhook endpoints: shop "nope" not found'],
    [['webhook', 'list', 'extra', '--db', '$DB'], 'kopek webhook: unexpected argument "extra"; usage: kopek webhook list --shop ID'],
    [['webhook', 'delete', '--db', '$DB'], 'kopek webhook: webhook delete needs ENDPOINT_ID'],
    [['webhook', 'delete', 'x', 'y', '--db', '$DB'], 'kopek webhook: unexpected argument "y"; usage: kopek webhook delete ENDPOINT_ID'],
    [['webhook', 'rotate', 'x', '--overlap=soon', '--db', '$DB'], 'kopek webhook: cannot rotate webhook secret: --overlap must be a number of hours, got "soon"'],
    [['webhook', 'rotate', 'x', '--overlap', '2', '--db', '$DB'], 'kopek webhook: cannot rotate webhook secret of endpoint "x": not found'],
    [['webhook', 'rotate', 'x', '--events', 'a', '--db', '$DB'], 'kopek webhook: unknown option --events'],
    [['webhook', 'deliveries', '--shop=nope', '--db', '$DB'], 'kopek webhook: cannot show webhook deliveries: shop "nope" not found'],
    [['webhook', 'deliveries', '--event', 'evt_x', '--json', '--db', '$DB'], /^\{"items":\[\]\}\n$/],
    [['webhook', 'resend', '--db', '$DB'], 'kopek webhook: webhook resend needs EVT_ID'],
    [['webhook', 'resen', '--db', '$DB'], 'kopek webhook: unknown subcommand "resen"; did you mean "webhook resend"?; see kopek webhook --help'],
    [['admin', 'create', '--merchant=$M', '--email', 'a@b.c', '--password-file', '$DIR/none', '--db', '$DB'], 'kopek admin: cannot create cabinet user: cannot read password file "$DIR/none": ENOENT'],
    [['admin', 'create', '--merchant', '$M', '--email', 'a@b.c', '--db', '$DB'], 'kopek admin: cannot create cabinet user: --merchant, --email and --password-file are required'],
    [['admin', 'create', '--merchant', '$M', '--email', 'a@b.c', '--password-file=$DIR/pw', '--base-url', 'ftp://x', '--db', '$DB'], 'kopek admin: cannot create cabinet user: --base-url must be an http(s) URL, got "ftp://x"'],
    [['admin', 'create', '--merchant', '$M', '--email=ops@b.example', '--password-file', '$DIR/pw', '--base-url=http://b.example', '--db', '$DB'], /^user .*\nemail    ops@b.example\nsign in  http:\/\/b.example\/cabinet\/login\n$/],
    [['admin', 'list', '--merchant=$M', '--json', '--db', '$DB'], /"email":"demo@kopek.test"/],
    [['admin', 'list', 'extra', '--db', '$DB'], 'kopek admin: unexpected argument "extra"; usage: kopek admin list [--merchant MERCHANT_ID]'],
    [['admin', 'disable', '--db', '$DB'], 'kopek admin: cannot disable cabinet user: USER_ID or EMAIL is required'],
    [['admin', 'disable', 'a', 'b', '--db', '$DB'], 'kopek admin: unexpected argument "b"; usage: kopek admin disable USER_ID|EMAIL'],
    [['admin', 'disable', 'nobody@x', '--db', '$DB'], 'kopek admin: cannot disable cabinet user "nobody@x": not found'],
    [['admin', 'lst', '--db', '$DB'], 'kopek admin: unknown subcommand "lst"; did you mean "admin list"?; see kopek admin --help'],
  ]);
});

test('backup and db copy', async () => {
  await check([
    [['backup', '--db', '$DB'], 'kopek backup: cannot back up: PATH is required (where to write the copy)'],
    [['backup', '$DIR/b.db', '--db', '$DB', '--json'], /^\{"path":"[^"]+b\.db","pages":\d+/],
    [['backup', '$DIR/b.db', '--db', '$DB'], 'kopek backup: cannot back up to "$DIR/b.db": the file exists (pass --force to replace it)'],
    [['backup', '$DIR/b.db', '--force', '--db=$DB', '--json'], /^\{"path":"[^"]+b\.db","pages":\d+/],
    [['backup', '$DIR/b.db', '--force=yes', '--db', '$DB'], 'kopek backup: option --force takes no value'],
    [['backup', 'a', 'b', '--db', '$DB'], 'kopek backup: unexpected argument "b"; usage: kopek backup PATH [--force]'],
    [['backup', '$DIR/c.db', '--db=$DIR/missing.db'], 'kopek backup: cannot open database "$DIR/missing.db": no such file (pass --db)'],
    [['backup', '$DIR/b.db', '--bogus', '1', '--db', '$DB'], 'kopek backup: unknown option --bogus'],
    [['db', 'copy', '--db', '$DB'], 'kopek db: --from must name the SQLite database file to copy'],
    [['db', 'copy', '--from=$DIR/missing.db', '--to', 'postgres://x@127.0.0.1:1/db'], 'kopek db: cannot open database "$DIR/missing.db": no such file'],
    [['db', 'copy', '--from', '$DIR/missing.db', '--to=sqlite.db'], 'kopek db: --to (or KOPEK_DATABASE_URL) must be a postgres:// URL of an empty database'],
    [['db', 'copy', '--from', '$DB', '--to', 'postgres://a:secret@127.0.0.1:1/db', '--bogus', '1'], 'kopek db: unknown option --bogus'],
    [['db', 'cpy'], 'kopek db: unknown subcommand "cpy"; did you mean "db copy"?; see kopek db --help'],
    [['db'], 'kopek db: unknown subcommand ""; see kopek db --help'],
  ]);
});

test('trigger keeps every --set; listen and trigger take the last --key; neither takes --db', async () => {
  const set = 'kopek trigger: cannot trigger payment.succeeded';
  await check([
    [['trigger', 'payment.succeeded', '--key=sk_live_x'], `${set} with a live key: the trigger works in test mode only; pass a test key (sk_test_…)`],
    [['trigger', 'payment.succeeded', '--key', 'sk_test_a', '--key', 'sk_live_b'], `${set} with a live key: the trigger works in test mode only; pass a test key (sk_test_…)`],
    [['trigger', 'payment.succeeded', '--key', 'sk_test_a', '--url=ftp://x'], `${set}: --url "ftp://x" is not an http:// or https:// address; pass one like http://127.0.0.1:8080`],
    [['trigger', 'payment.succeeded', '--set', 'amount=1', '--set', 'bad', '--key', 'sk_live_x'], `${set}: --set "bad" is not FIELD=VALUE; write it like --set amount=25000 or --set metadata.cart=42`],
    [['trigger', 'payment.succeeded', '--set=amount=1', '--set', 'amount=2'], `${set}: --set amount is given twice; give each field once`],
    [['trigger', 'payment.succeeded', '--set', '-2'], `${set}: --set "-2" is not FIELD=VALUE; write it like --set amount=25000 or --set metadata.cart=42`],
    [['trigger', 'payment.succeeded', '--set'], 'kopek trigger: option --set needs a value'],
    [['trigger', 'payment.succeeded', '--bogus', '1'], 'kopek trigger: unknown option --bogus; kopek trigger talks to a running server (--url, --key), see kopek trigger --help'],
    [['trigger', 'payment.succeeded', '--db', 'x'], 'kopek trigger: unknown option --db; kopek trigger talks to a running server (--url, --key), see kopek trigger --help'],
    [['trigger', 'payment.succeeded', '--bogus'], 'kopek trigger: option --bogus needs a value'],
    [['trigger', '--list', '--json'], /^\{"event":"payment.succeeded","description":/],
    [['trigger', '--list=yes'], 'kopek trigger: option --list takes no value'],
    [['trigger', '--list', '--set', 'amount=1'], 'kopek trigger: cannot list events with --set: --set gives a field of a triggered event, kopek trigger EVENT --set FIELD=VALUE'],
    [['trigger', '--list', 'payment.succeeded'], 'kopek trigger: unexpected argument "payment.succeeded"; usage: kopek trigger --list [--json]'],
    [['trigger', 'payment.succeeded', 'payment.failed'], 'kopek trigger: unexpected argument "payment.failed"; usage: kopek trigger EVENT [--set FIELD=VALUE]... [--url BASE] [--key KEY] [--json]'],
    [['trigger'], 'kopek trigger: cannot trigger: name an EVENT, e.g. kopek trigger payment.succeeded (kopek trigger --list shows them all)'],
    [['trigger', '-x'], 'kopek trigger: unknown option -x'],
    [['trigger', '--json=1'], 'kopek trigger: option --json takes no value'],
    [['listen', '--forward-to=ftp://x', '--key', 'sk_test_x'], 'kopek listen: cannot use --forward-to "ftp://x": only http and https URLs work'],
    [['listen', '--forward-to', 'http://127.0.0.1:9/h', '--key=sk_live_x'], "kopek listen: kopek listen works with test keys only, and this is a live key (sk_live_…): pass the shop's sk_test_ key"],
    [['listen', '--forward-to', 'http://127.0.0.1:9/h', '--key', 'sk_test_1', '--key', 'sk_live_x'], "kopek listen: kopek listen works with test keys only, and this is a live key (sk_live_…): pass the shop's sk_test_ key"],
    [['listen', '--forward-to', 'http://127.0.0.1:9/h', '--key', 'sk_test_x', '--events', 'nope'], `kopek listen: cannot use event "nope" in --events: not a webhook event; known: ${WEBHOOK_EVENTS.join(', ')}`],
    [['listen', '--forward-to', 'http://127.0.0.1:9/h', '--key', 'sk_test_x', '--secret=bad'], 'kopek listen: cannot use --secret "bad…": a webhook secret is whs_ followed by 16 to 200 letters, digits, _ or -'],
    [['listen', '--forward-to', 'http://127.0.0.1:9/h', '--key', 'sk_test_x', '--url', 'nope'], 'kopek listen: cannot use --url "nope": not a URL; write it whole, e.g. http://127.0.0.1:8080'],
    [['listen', '--forward-to', 'http://127.0.0.1:9/h', '--db', 'x'], 'kopek listen: kopek listen talks to a running server, not to a database file: pass --url instead of --db'],
    [['listen', '--forward-to'], 'kopek listen: option --forward-to needs a value'],
    [['listen', '--bogus', '1'], 'kopek listen: unknown option --bogus'],
    [['listen', 'extra'], 'kopek listen: unexpected argument "extra"; usage: kopek listen --forward-to URL [--events E1,E2]'],
    [['listen', '--key', 'sk_test_x'], 'kopek listen: --forward-to URL is required: the address of your webhook receiver, e.g. http://127.0.0.1:3000/webhooks'],
    [['listen', '--json=true'], 'kopek listen: option --json takes no value'],
  ]);
});

test('in its own process, a refused flag exits 1 with the same one line on stderr', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(__dirname, '..', '..', 'src', 'main.ts'), 'demo', '--bogus', 'x'], { encoding: 'utf8', timeout: 60_000 });
  assert.deepEqual({ code: r.status, out: r.stdout, err: r.stderr }, { code: 1, out: '', err: 'kopek demo: unknown option --bogus\n' });
});

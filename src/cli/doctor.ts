import { parseArgs, onlyFlags, atMostPositionals } from '../platform/args';
import { COMMON_OPTIONS, dbOf, output, type Command, runSubcommand, withStore } from './command';
import { SCHEMA_VERSION, writeProblem } from '../platform/storage/sqlite/open';
import { BASE_VERSION } from '../platform/storage/migrations';
import { integrityCheck, journalMode, openEngine, openExistingStorage, probeDatabase, schemaVersion } from '../platform/storage/maintenance';
import { isPostgresUrl } from '../platform/storage/postgres/open';
import { redactUrl } from '../platform/redact-url';
import type { Reader, Store } from '../platform/storage/store';
import { checkLedger, type CheckResult } from '../money/ledger/check';
import { payoutsNeedingDecision } from '../money/payouts/store';
import { existsSync } from 'node:fs';
import { behindTheirTables, counters, describeCounter } from '../platform/storage/counters';

/** What the ledger check proves, in the words `kopek ledger check` and `kopek doctor` both print. */
const LEDGER_PROOF = 'balances equal their postings, nothing overdrawn, every movement in place';

/** The one-line verdict of a ledger check: `kopek ledger check` and `kopek doctor` print the same words. */
export function ledgerVerdict(r: CheckResult): string {
  const n = r.books.length;
  if (r.ok) return `${n} ${n === 1 ? 'book balances' : 'books balance'}`;
  const k = r.problems.length;
  return `${k} ${k === 1 ? 'problem' : 'problems'}, first: ${r.problems[0]}`;
}

const LEDGER_ACTION = 'report it as a bug, with the database and the list of problems (kopek ledger check)';

/** Failed runs in a row after which a job that still retries is worth the operator's look. */
const FAILING_RUNS = 3;

const usage = `Usage:
  kopek doctor [--db PATH] [--json]

Checks a database, safe while the server runs (reads only), and says what to do about each finding:
  database        the file opens as SQLite, or the PostgreSQL database answers
  permissions     the file and its folder are writable (a read-only mount or a wrong owner is named as such)
  integrity       PRAGMA integrity_check is ok
  journal         WAL mode (what the server sets; needed for reads beside writes)
                  (these three check a SQLite file: skipped on PostgreSQL, which checks its own files)
  schema          the schema version is this build's
  dead jobs       no scheduled job gave up after too many failures
  failing jobs    no scheduled job failed ${FAILING_RUNS} times in a row (it retries, but something keeps it failing)
  counters        every generated key's counter (a PostgreSQL sequence, SQLite's sqlite_sequence) stands at or
                  past its table's largest key: one behind would hand out numbers the table holds, and every
                  insert there would fail
  endpoints       no webhook endpoint is disabled (410 Gone) or failing (deliveries retrying or given up)
  bank amounts    no live acquirer's answer was left unapplied (its amount differs from the payment's, or
                  the bank confirmed a payment kopek had already closed)
  card payouts    no live card payout waits for a decision (pending with no provider id: its card number,
                  kept in memory only, may be lost with a restart; a notification naming it settles it)
  ledger          the proof of kopek ledger check: ${LEDGER_PROOF}
Exits 0 when nothing needs action, 1 otherwise.

Options:
${COMMON_OPTIONS}

Examples:
  kopek doctor
  kopek doctor --db /var/lib/kopek/kopek.db --json
  kopek doctor --db postgres://kopek@db.internal/kopek`;

interface Finding {
  check: string;
  ok: boolean;
  detail: string;
  action?: string;
}

function finding(check: string, okDetail: string, problem: string | null, action: string): Finding {
  return problem === null ? { check, ok: true, detail: okDetail } : { check, ok: false, detail: problem, action };
}

/** Run every check on an open database; later checks are skipped when the schema is not this build's. */
export async function diagnose(store: Store): Promise<Finding[]> {
  const f: Finding[] = store.engine === 'postgres' ? [PG_FILE_CHECKS] : await fileChecks(store);
  const version = await schemaVersion(store);
  const upgrade =
    version > SCHEMA_VERSION
      ? 'this kopek is older than the database: run the newer executable that wrote it'
      : version === 0
        ? 'this is not a kopek database (or an empty one): check --db'
        : store.engine === 'postgres'
          ? 'back up (pg_dump), then start kopek serve: it migrates on start'
          : version < BASE_VERSION
            ? 'back up (kopek backup PATH), then run kopek migrate: it upgrades a database older than kopek 0.1.0'
            : 'back up (kopek backup PATH), then start kopek serve: it migrates on start';
  f.push(finding('schema', `version ${version}`, version === SCHEMA_VERSION ? null : `version ${version}, this build expects ${SCHEMA_VERSION}`, upgrade));
  if (version !== SCHEMA_VERSION) return f;
  f.push(await deadJobs(store), await failingJobs(store), await counterFinding(store));
  f.push(...(await endpoints(store)), await bankAmounts(store), await cardPayouts(store));
  const ledger = await checkLedger(store);
  f.push(finding('ledger', ledgerVerdict(ledger), ledger.ok ? null : ledgerVerdict(ledger), LEDGER_ACTION));
  return f;
}

/** On PostgreSQL the file's permissions, integrity check and journal mode are the server's own monitoring's (and pg_amcheck's). */
const PG_FILE_CHECKS = finding('sqlite file', 'skipped on PostgreSQL (permissions, integrity and journal are checks of a SQLite file; '
  + 'PostgreSQL checks its own files)', null, '');

async function fileChecks(store: Store): Promise<Finding[]> {
  const integrity = await integrityCheck(store, 20);
  const journal = await journalMode(store);
  const damaged = integrity.length === 1 && integrity[0] === 'ok' ? null : integrity.slice(0, 5).join('; ');
  const restore = 'stop the server and restore the latest backup (docs/operations.md, "Restore"); keep the damaged file for analysis';
  const wal = journal === 'wal' ? null : `journal_mode is "${journal}", not wal`;
  const setWal = 'start kopek serve on it once: the server sets WAL mode';
  return [finding('integrity', 'ok', damaged, restore), finding('journal', 'wal', wal, setWal)];
}

async function deadJobs(q: Reader): Promise<Finding> {
  const rows = await q.all<{ kind: string; n: number }>(`SELECT kind, count(*) AS n FROM jobs WHERE state = 'dead' GROUP BY kind ORDER BY kind`);
  const problem = rows.length === 0 ? null : rows.map((r) => `${r.n} ${r.kind}`).join(', ');
  return finding('dead jobs', 'none', problem, 'kopek jobs shows each with its last error; fix the cause, then kopek jobs retry JOB_ID');
}

/** Jobs that failed FAILING_RUNS times in a row and still retry: not dead yet, but something keeps them failing. */
async function failingJobs(q: Reader): Promise<Finding> {
  const rows = await q.all<{ id: number; kind: string; shop_id: string | null; attempt: number; last_error: string | null }>(
    `SELECT id, kind, shop_id, attempt, last_error FROM jobs WHERE state = 'pending' AND attempt >= ? ORDER BY attempt DESC, id LIMIT 10`,
    FAILING_RUNS,
  );
  const total = rows.length === 0 ? 0 : (await q.get<{ n: number }>(`SELECT count(*) AS n FROM jobs WHERE state = 'pending' AND attempt >= ?`, FAILING_RUNS))!.n;
  const problem =
    rows.length === 0
      ? null
      : `${total} job(s) failed ${FAILING_RUNS} or more times in a row and retry: ` +
        rows.map((r) => `job ${r.id} ${r.kind}${r.shop_id ? ` of shop ${r.shop_id}` : ''}, ${r.attempt} failures, last: ${redactUrl(r.last_error ?? '')}`).join('; ');
  const action = 'kopek jobs shows each with its last error; fix the cause: the job runs again on its own, and is dead '
    + '(kopek jobs retry JOB_ID) once its attempts are used up';
  return finding('failing jobs', `none failed ${FAILING_RUNS} times in a row`, problem, action);
}

/** Counters behind their tables: the next number is taken, every insert into that table fails until it passes them. */
async function counterFinding(q: Reader): Promise<Finding> {
  const all = await counters(q);
  const behind = behindTheirTables(all);
  const pg = q.engine === 'postgres';
  const fix = behind.map((c) =>
    pg
      ? `SELECT setval('${c.sequence}', (SELECT max(${c.column}) FROM ${c.table}));`
      : `DELETE FROM sqlite_sequence WHERE name = '${c.table}'; INSERT INTO sqlite_sequence (name, seq) SELECT '${c.table}', max(rowid) FROM ${c.table};`,
  );
  const problem =
    behind.length === 0
      ? null
      : `${behind.length} counter(s) behind their table ` +
        // SQLite numbers past the largest row whatever its counter says; what it loses is the memory of deleted rows.
        (pg ? '(inserts there fail on a taken key)' : '(numbers of deleted rows may be handed out again)') +
        `: ${behind.map(describeCounter).join('; ')}`;
  const action = `move each past its table's largest key (${pg ? 'psql' : 'sqlite3, with the server stopped'}): ${fix.join(' ')}`;
  return finding('counters', `${all.length} counters, each at or past its table's largest key`, problem, action);
}

/** Bank answers not applied (the amount differs, or the bank took a payment kopek had closed): money kopek may not show. */
async function bankAmounts(q: Reader): Promise<Finding> {
  const rows = await q.all<{ shop_id: string; subject_id: string; expected_amount: number; bank_amount: number; answer: string }>(
    'SELECT shop_id, subject_id, expected_amount, bank_amount, answer FROM bank_mismatches ORDER BY id DESC LIMIT 10',
  );
  const total = rows.length === 0 ? 0 : (await q.get<{ n: number }>('SELECT count(*) AS n FROM bank_mismatches'))!.n;
  const problem =
    rows.length === 0
      ? null
      : `${total} bank answer(s) not applied: ` +
        rows.map((r) => `payment ${r.subject_id} of shop ${r.shop_id}: kopek ${r.expected_amount}, bank ${r.bank_amount} (${r.answer})`).join('; ');
  const action = "compare each with the acquirer's own records (docs/live-mode.md, \"What the operator watches\"); a payment taken "
    + 'at the bank for another amount is refunded or settled there';
  return finding('bank amounts', 'every bank answer was applied', problem, action);
}

/** Live card payouts pending with no provider id: their number, kept in memory only, may have gone with a restart. */
async function cardPayouts(q: Reader): Promise<Finding> {
  const rows = await payoutsNeedingDecision(q, undefined, 20);
  const problem =
    rows.length === 0
      ? null
      : `${rows.length}${rows.length === 20 ? '+' : ''} live card payout(s) pending with no provider id (the card number is kept in memory only and may be lost with a restart): ` +
        rows.map((r) => `payout ${r.id} of shop ${r.shop_id}, ${r.amount} kopecks, card *${r.card_last4 ?? ''}, created ${new Date(r.created_at).toISOString()}`).join('; ');
  return finding('card payouts', 'none waits for a decision', problem,
    "look each up in the payout provider's cabinet by metadata.payout_id: if the provider has it, its notification settles it (ask the provider to send it again); if not, it was never paid: the recipient asks again with a new payout. kopek never sends it again without its number");
}

async function endpoints(q: Reader): Promise<Finding[]> {
  const disabled = await q.all<{ id: string; shop_id: string; url: string; disabled_reason: string | null }>(
    'SELECT id, shop_id, url, disabled_reason FROM webhook_endpoints WHERE disabled_at IS NOT NULL ORDER BY disabled_at',
  );
  // Failing: retrying (its round began, no success yet) or given up; each row counted is one, so count(*) orders by both.
  const failing = await q.all<{ url: string; shop_id: string; retrying: number; failed: number }>(
    `SELECT url, shop_id, sum(CASE WHEN state = 'pending' AND attempts > round_start THEN 1 ELSE 0 END) AS retrying,
            sum(CASE WHEN state = 'failed' THEN 1 ELSE 0 END) AS failed
       FROM webhook_deliveries WHERE (state = 'pending' AND attempts > round_start) OR state = 'failed'
       GROUP BY url, shop_id ORDER BY count(*) DESC, shop_id, url LIMIT 10`,
  );
  const again = disabled.slice(0, 10).map((e) => `kopek webhook delete ${e.id}, kopek webhook add --shop ${e.shop_id} --url ${e.url}`);
  const shops = [...new Set(failing.map((r) => r.shop_id))].map((id) => `kopek webhook deliveries --shop ${id}`);
  const gone = disabled.map((e) => `${e.id} ${e.url} of shop ${e.shop_id} (${e.disabled_reason ?? 'disabled'})`).join(', ');
  const retrying = failing.map((r) => `${r.url} (shop ${r.shop_id}): ${r.retrying} retrying, ${r.failed} given up`).join('; ');
  return [
    finding('disabled endpoints', 'none', gone || null,
      `the receiver answered 410 Gone; once it accepts again: ${again.join('; ')}; then kopek webhook resend EVT_ID for the events it missed`),
    finding('failing endpoints', 'none', retrying || null,
      `${shops.join(', ')} shows the answers; fix the receiver, then kopek webhook resend EVT_ID for the given-up events`),
  ];
}

export const doctor: Command = {
  name: 'doctor',
  summary: 'check the database, schema, jobs, webhook endpoints, card payouts and ledger; say what to do',
  usage,
  async run(argv) {
    const args = parseArgs(argv);
    onlyFlags(args, []);
    atMostPositionals(args.positional, 0, 'kopek doctor [--db PATH]');
    const found = await findings(dbOf(args));
    const ok = found.every((x) => x.ok);
    const lines = found.flatMap((x) =>
      x.ok ? [`ok      ${x.check}: ${x.detail}`] : [`ACTION  ${x.check}: ${x.detail}`, `        → ${x.action}`],
    );
    lines.push(ok ? 'doctor: nothing needs action' : `doctor: ${found.filter((x) => !x.ok).length} finding(s) need action`);
    output(args, { ok, findings: found }, lines);
    return ok ? 0 : 1;
  },
};

/** The findings on a database opened as it is (no schema created, no migration): a SQLite file's permissions, then diagnose's. */
async function findings(path: string): Promise<Finding[]> {
  const pg = isPostgresUrl(path);
  let store: Store | null = null;
  const problem = !pg && existsSync(path) ? writeProblem(path) : null;
  const fix = 'the data is not damaged: make the file and its folder writable by the user kopek runs as (chown/chmod, or remount '
    + 'read-write); restoring a backup would not help';
  const access = problem ? [finding('permissions', '', problem, fix)] : [];
  try {
    store = pg ? await openEngine(path, { readonly: true }) : openExistingStorage(path);
    await probeDatabase(store);
    return [finding('database', pg ? redactUrl(path) : path, null, ''), ...access, ...(await diagnose(store))];
  } catch (err) {
    const message = (err as Error).message;
    if (pg) {
      const check = 'check --db (or KOPEK_DATABASE_URL), that the PostgreSQL server runs and that this user may connect';
      return [finding('database', '', redactUrl(message), check)];
    }
    const damaged = 'check --db and the file; if it is damaged, restore the latest backup (docs/operations.md)';
    return problem ? access : [finding('database', '', message, damaged)];
  } finally {
    await store?.close();
  }
}

const ledgerUsage = `Usage:
  kopek ledger check [--db PATH] [--json]

check    proves the ledger from its postings (${LEDGER_PROOF}), in one consistent snapshot, safe while the server runs:
         every entry's postings sum to zero and move the entry's amount between the right accounts;
         each book's stored balances equal the sums of its postings; reserves never went below 0 and
         no payout or refund left available below 0; every payout, payment and refund has the movements its
         status calls for. Prints each book's balance, available and reserved; exits 1 with the list
         of problems when any invariant is broken.

Options:
${COMMON_OPTIONS}

Examples:
  kopek ledger check
  kopek ledger check --db /var/lib/kopek/kopek.db --json`;

export const ledger: Command = {
  name: 'ledger',
  summary: 'prove the ledger: balances equal postings, nothing overdrawn',
  usage: ledgerUsage,
  run: (argv) => runSubcommand('ledger', parseArgs(argv), {
    async check(args) {
      onlyFlags(args, []);
      const r = await withStore(args, checkLedger);
      const lines = r.books.map((b) => `${b.shop_id} ${b.mode.padEnd(4)}  balance ${b.balance}  available ${b.available}  reserved ${b.reserved}  entries ${b.entries}`);
      lines.push(r.ok ? `ok: ${ledgerVerdict(r)}` : `FAILED: ${ledgerVerdict(r)}`);
      if (!r.ok) lines.push(`  → ${LEDGER_ACTION}`, 'problems:', ...r.problems.map((p) => `  ${p}`));
      output(args, r, lines);
      if (!r.ok) process.stderr.write(`kopek ledger: check failed: ${r.problems.length} problems\n`);
      return r.ok ? 0 : 1;
    },
  }),
};

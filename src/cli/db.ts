import { existsSync } from 'node:fs';
import { parseArgs, flag, onlyFlags, unknownSubcommand, type Args } from '../platform/args';
import { COMMON_OPTIONS, dbOf, io, output, type Command } from './command';
import { fileSchemaVersion, openEngine, openExistingStorage, schemaVersion } from '../platform/storage/maintenance';
import { isPostgresUrl, openPgStorage, redactUrl } from '../platform/storage/postgres/open';
import { copySqliteToPostgres, targetProblem, type CopyReport } from '../platform/storage/copy';
import { upgradeOldSqlite } from '../platform/storage/sqlite/migrations-old';
import type { SqliteStore } from '../platform/storage/sqlite/store';
import type { Store } from '../platform/storage/store';
import { checkLedger } from '../money/ledger/check';
import { masterKeySource } from '../platform/secrets/at-rest';
import { ledgerVerdict } from './ledger';

const usage = `Usage:
  kopek db copy --from PATH [--to URL] [--json]

copy   moves a merchant from one machine to a cluster: copies the whole SQLite database at PATH (every
       merchant, shop, key, payment, event, delivery, job and ledger entry) into the empty PostgreSQL
       database at URL, in one transaction read from one snapshot: the target gets all of it or nothing.
       A target that holds any data is refused. Every generated key continues where SQLite left it (its
       counters remember deleted rows too): each sequence of the target is set, then read back, and a
       counter behind its table's largest key fails the copy; so no public number, event id or row key is
       handed out again, and event-stream clients resume with their Last-Event-ID. Secrets stay sealed
       under the same master key: start the nodes with KOPEK_MASTER_KEY set to the key of PATH (its key
       file, PATH.key, holds it in base64).
       Ends by comparing the row count of every table and running the ledger check on both databases;
       exits 1 if anything differs. Stop the server on PATH first: writes after the snapshot are not copied.

Options:
  --from PATH   the SQLite database file
  --to URL      postgres://user:password@host:port/database[?sslmode=…] (default KOPEK_DATABASE_URL:
                a URL on the command line shows in the process list, password and all)
  --json        print one JSON object instead of text
  --help        show this help

Examples:
  kopek db copy --from /var/lib/kopek/kopek.db --to postgres://kopek@db.internal/kopek
  KOPEK_DATABASE_URL=postgres://kopek:PASSWORD@db.internal/kopek kopek db copy --from /var/lib/kopek/kopek.db`;

export const dbCommand: Command = {
  name: 'db',
  summary: 'copy a SQLite database into an empty PostgreSQL one (moving to a cluster)',
  usage,
  async run(argv) {
    const args = parseArgs(argv);
    const [sub] = args.positional;
    if (sub !== 'copy') throw unknownSubcommand('db', sub, ['copy']);
    onlyFlags(args, ['from', 'to']);
    const from = flag(args, 'from');
    const to = flag(args, 'to') ?? process.env.KOPEK_DATABASE_URL;
    if (!from || isPostgresUrl(from)) throw new Error('--from must name the SQLite database file to copy');
    if (!to || !isPostgresUrl(to)) throw new Error('--to (or KOPEK_DATABASE_URL) must be a postgres:// URL of an empty database');
    if (!existsSync(from)) throw new Error(`cannot open database "${from}": no such file`);
    if (fileSchemaVersion(from) === 0) throw new Error(`cannot copy "${from}": it is not a kopek database`);
    const source = openExistingStorage(from);
    let target: Store | null = null;
    try {
      const pgTarget = await openPgStorage(to);
      target = pgTarget;
      const problem = await targetProblem(pgTarget);
      if (problem) throw new Error(`cannot copy into "${redactUrl(to)}": ${problem}`);
      const report = await copySqliteToPostgres(source as SqliteStore, pgTarget, progressLine());
      return await verify(args, from, to, report, source, pgTarget);
    } finally {
      await target?.close();
      await source.close();
    }
  },
};

async function verify(args: Args, from: string, to: string, report: CopyReport, source: Store, target: Store): Promise<number> {
  const [a, b] = [await checkLedger(source), await checkLedger(target)];
  const differ = report.tables.filter((t) => t.source !== t.target);
  const ok = differ.length === 0 && a.ok && b.ok;
  const key = masterKeySource(from);
  const keyNote =
    key.kind === 'file' ? `start every node with KOPEK_MASTER_KEY set to the content of ${key.path}` : key.kind === 'env' ? 'start every node with the same KOPEK_MASTER_KEY' : 'the source has no master key yet';
  const rows = report.tables.reduce((n, t) => n + t.source, 0);
  output(
    args,
    { ok, from, to: redactUrl(to), tables: report.tables, sequences: report.sequences, ledger: { source: a.ok, target: b.ok } },
    [
      ...report.tables.filter((t) => t.source > 0).map((t) => `  ${t.table.padEnd(24)} ${String(t.source).padStart(9)} → ${t.target}`),
      `counters: ${report.sequences.length} continued, each at or past its table's largest key`,
      `ledger check: source ${ledgerVerdict(a)}; target ${ledgerVerdict(b)}`,
      ok ? `copied ${rows} rows of ${report.tables.length} tables into "${redactUrl(to)}"; ${keyNote}` : `FAILED: ${differ.map((t) => `${t.table} ${t.source} → ${t.target}`).join(', ') || 'a ledger check failed'}`,
    ],
  );
  return ok ? 0 : 1;
}

/** Progress on stderr: a line per table, and every 10 % of a large one. */
function progressLine(): (table: string, done: number, total: number) => void {
  let lastTenth = -1;
  return (table, done, total) => {
    if (total === 0) return;
    if (done === 0) lastTenth = -1;
    const tenth = Math.floor((done / total) * 10);
    if (done !== 0 && tenth === lastTenth) return;
    lastTenth = tenth;
    if (done === 0 || total >= 10_000 || done === total) io().err(`kopek db copy: ${table} ${done}/${total}\n`);
  };
}

const migrateUsage = `Usage:
  kopek migrate [--db PATH|URL] [--json]

Creates the schema in an empty database, or upgrades an older one to this build's schema, and exits;
serve does the same when it starts, for a database of kopek 0.1.0 or later (an older SQLite database
it refuses: only this command upgrades that). On PostgreSQL the work runs under a database lock, so nodes started
together against one empty database end with one schema. A database newer than this build is refused
with both versions named.

Options:
${COMMON_OPTIONS}

Examples:
  kopek migrate --db /var/lib/kopek/kopek.db
  kopek migrate --db postgres://kopek@db.internal/kopek --json`;

export const migrate: Command = {
  name: 'migrate',
  summary: 'create or upgrade the schema of a database, then exit',
  usage: migrateUsage,
  async run(argv) {
    const args = parseArgs(argv);
    onlyFlags(args, []);
    const db = dbOf(args);
    if (!isPostgresUrl(db)) upgradeOldSqlite(db);
    const store = await openEngine(db);
    try {
      const v = await schemaVersion(store);
      output(args, { db: store.path, engine: store.engine, schema_version: v }, [`${store.path}: schema version ${v} (${store.engine})`]);
      return 0;
    } finally {
      await store.close();
    }
  },
};


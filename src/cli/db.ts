import { existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { parseArgs, flag, onlyFlags, type Args, atMostPositionals } from '../platform/args';
import { COMMON_OPTIONS, dbOf, io, output, runSubcommand, type Command, processIo } from './command';
import { fileSchemaVersion, openEngine, openExistingStorage, schemaVersion, openBackupSource, verifyCopy } from '../platform/storage/maintenance';
import { isPostgresUrl, openPgStorage, redactUrl } from '../platform/storage/postgres/open';
import { copySqliteToPostgres, targetProblem, type CopyReport } from '../platform/storage/copy';
import { upgradeOldSqlite } from '../platform/storage/sqlite/migrations-old';
import type { SqliteStore } from '../platform/storage/sqlite/store';
import type { Store } from '../platform/storage/store';
import { checkLedger } from '../money/ledger/check';
import { masterKeySource } from '../platform/secrets/at-rest';
import { ledgerVerdict } from './doctor';
import { dirname, resolve } from 'node:path';

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
  run: (argv) => runSubcommand('db', parseArgs(argv), {
    async copy(args) {
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
  }),
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

const backupUsage = `Usage:
  kopek backup PATH [--force] [--db PATH]

Copies the database to PATH while the server keeps running and writing: SQLite's online backup, so the
copy is one consistent moment of the database (every committed write before it, none after). The copy is
written beside PATH first and renamed into place only once complete and checked (PRAGMA integrity_check),
so PATH never holds half a backup. Shows a progress bar on a terminal, plain progress lines otherwise.

A PostgreSQL database (--db postgres://…) is refused: back it up with PostgreSQL's own tools (pg_dump, or
pg_basebackup with WAL archiving for point-in-time recovery).

To restore: stop the server, replace its database file with the copy (and remove any -wal and -shm files
beside the old one), start the server. See docs/operations.md.

The master key is not in the copy: keep the key file beside the database (<db file>.key), or the value of
KOPEK_MASTER_KEY, with the backup. Without it a restored database cannot decrypt the secrets it holds
(acquirer terminal passwords, saved-method references): they must be set again (kopek shop acquirer) and
saved cards bound again.

Options:
  --force     replace PATH if it exists (refused otherwise)
${COMMON_OPTIONS}

Examples:
  kopek backup /backups/kopek-$(date +%F).db
  kopek backup /backups/kopek.db --force --db /var/lib/kopek/kopek.db --json`;

const PG_REFUSAL =
  'cannot back up a PostgreSQL database with kopek backup: use PostgreSQL\'s own tools (pg_dump for a consistent copy, pg_basebackup with WAL archiving for point-in-time recovery)';

/** Draws progress: a bar redrawn in place on a terminal, else one line per 10 % step. */
function progressPrinter(args: Args): (done: number, total: number) => void {
  if (args.flags.has('json')) return () => {};
  const tty = io() === processIo && process.stdout.isTTY === true;
  let lastTenth = -1;
  return (done, total) => {
    const frac = total === 0 ? 1 : done / total;
    if (tty) {
      const width = 30;
      const full = Math.round(frac * width);
      io().out(`\r[${'#'.repeat(full)}${'.'.repeat(width - full)}] ${String(Math.floor(frac * 100)).padStart(3)}%  ${done}/${total} pages`);
      if (done >= total) io().out('\n');
      return;
    }
    const tenth = Math.floor(frac * 10);
    if (tenth > lastTenth) {
      lastTenth = tenth;
      io().out(`backup: ${tenth * 10}% (${done}/${total} pages)\n`);
    }
  };
}

export const backup: Command = {
  name: 'backup',
  summary: 'copy the database online, consistent while the server writes',
  usage: backupUsage,
  async run(argv) {
    const args = parseArgs(argv, ['json', 'help', 'force']);
    onlyFlags(args, ['force']);
    atMostPositionals(args.positional, 1, 'kopek backup PATH [--force]');
    const [target] = args.positional;
    if (!target) throw new Error('cannot back up: PATH is required (where to write the copy)');
    const sourcePath = dbOf(args);
    if (isPostgresUrl(sourcePath)) throw new Error(PG_REFUSAL);
    const dest = resolve(target);
    if (dest === resolve(sourcePath)) throw new Error(`cannot back up "${sourcePath}" onto itself`);
    if (existsSync(dest) && !args.flags.has('force')) {
      throw new Error(`cannot back up to "${target}": the file exists (pass --force to replace it)`);
    }
    if (!existsSync(dirname(dest))) throw new Error(`cannot back up to "${target}": no such directory "${dirname(dest)}"`);
    const partial = `${dest}.partial`;
    rmSync(partial, { force: true });
    const source = openBackupSource(sourcePath);
    const started = Date.now();
    let result: { pages: number; restarts: number };
    try {
      result = await source.copyTo(partial, progressPrinter(args));
    } catch (err) {
      rmSync(partial, { force: true });
      throw new Error(`cannot back up "${sourcePath}" to "${target}": ${(err as Error).message}`);
    } finally {
      source.close();
    }
    const check = verifyCopy(partial);
    if (check.integrity !== 'ok') {
      rmSync(partial, { force: true });
      throw new Error(`cannot back up "${sourcePath}": the copy failed integrity_check: ${check.integrity}`);
    }
    for (const suffix of ['', '-wal', '-shm']) rmSync(dest + suffix, { force: true });
    renameSync(partial, dest);
    const bytes = statSync(dest).size;
    const ms = Date.now() - started;
    const key = masterKeySource(sourcePath);
    const keep = key.kind === 'file' ? key.path : 'the value of KOPEK_MASTER_KEY';
    const keyLine = key.kind === 'none' ? 'master key: none yet (the database holds no encrypted secret)'
      : `master key: not in the copy; keep ${keep} with this backup (without it the encrypted secrets cannot be read)`;
    output(args, { path: dest, pages: result.pages, bytes, schema_version: check.version, restarts: result.restarts, duration_ms: ms, master_key: key.kind === 'file' ? key.path : key.kind }, [
      `backup written to ${dest}: ${result.pages} pages, ${bytes} bytes, schema version ${check.version}, integrity ok, ${ms} ms`,
      keyLine,
    ]);
    return 0;
  },
};

import { existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs, onlyFlags, atMostPositionals, type Args } from '../platform/args';
import { COMMON_OPTIONS, dbOf, io, output, processIo, type Command } from './command';
import { openBackupSource, verifyCopy } from '../platform/storage/maintenance';
import { isPostgresUrl } from '../platform/storage/postgres/open';
import { masterKeySource } from '../platform/secrets/at-rest';

const usage = `Usage:
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
  usage,
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

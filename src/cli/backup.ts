import Database from 'better-sqlite3';
import { chmodSync, closeSync, existsSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs, flag, onlyFlags, atMostPositionals, type Args } from './args';
import { COMMON_OPTIONS, io, output, processIo, type Command } from './command';
import { defaultConfig } from '../config';
import { nativeBinding } from '../db/native';
import { masterKeySource } from '../secrets/master-key';

const usage = `Usage:
  kopek backup PATH [--force] [--db PATH]

Copies the database to PATH while the server keeps running and writing: SQLite's online backup, so the
copy is one consistent moment of the database (every committed write before it, none after). The copy is
written beside PATH first and renamed into place only once complete and checked (PRAGMA integrity_check),
so PATH never holds half a backup. Shows a progress bar on a terminal, plain progress lines otherwise.

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

/** Open an existing database file for reading its pages, without migrating or creating anything. */
export function openExisting(path: string): Database.Database {
  if (!existsSync(path)) throw new Error(`cannot open database "${path}": no such file (pass --db)`);
  const opts: Database.Options = { fileMustExist: true };
  if (nativeBinding.addon) (opts as { nativeBinding?: unknown }).nativeBinding = nativeBinding.addon;
  try {
    const db = new Database(path, opts);
    db.pragma('busy_timeout = 5000');
    return db;
  } catch (err) {
    throw new Error(`cannot open database "${path}": ${(err as Error).message}`);
  }
}

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

/** Copy `source` to `dest` online; resolves with the page count and how often a concurrent write restarted the copy. */
export async function backupDatabase(
  source: Database.Database,
  dest: string,
  onProgress: (done: number, total: number) => void = () => {},
): Promise<{ pages: number; restarts: number }> {
  let step = 256;
  let lastRemaining = Infinity;
  let restarts = 0;
  let pages = 0;
  // The copy holds what the database holds: the owner's alone from its first byte, whatever the umask.
  if (!existsSync(dest)) closeSync(openSync(dest, 'a', 0o600));
  chmodSync(dest, 0o600);
  const final = await source.backup(dest, {
    progress({ totalPages, remainingPages }) {
      pages = totalPages;
      // A write by another connection (the server) restarts the copy. Small steps under a steady write load
      // could restart forever, so after a restart the rest is copied in one step: one read snapshot, which in
      // WAL mode does not block the server's writers.
      if (remainingPages > lastRemaining) {
        restarts++;
        step = totalPages;
      }
      lastRemaining = remainingPages;
      onProgress(totalPages - remainingPages, totalPages);
      return Math.max(step, Math.ceil(totalPages / 20));
    },
  });
  // The last step resolves without a progress call.
  pages = final.totalPages;
  onProgress(pages, pages);
  return { pages, restarts };
}

/** `kopek backup` */
export const backup: Command = {
  name: 'backup',
  summary: 'copy the database online, consistent while the server writes',
  usage,
  async run(argv) {
    const args = parseArgs(argv, ['json', 'help', 'force']);
    onlyFlags(args, ['force']);
    atMostPositionals(args, 1, 'kopek backup PATH [--force]');
    const [target] = args.positional;
    if (!target) throw new Error('cannot back up: PATH is required (where to write the copy)');
    const sourcePath = flag(args, 'db') ?? process.env.KOPEK_DB ?? defaultConfig().db;
    const dest = resolve(target);
    if (dest === resolve(sourcePath)) throw new Error(`cannot back up "${sourcePath}" onto itself`);
    if (existsSync(dest) && !args.flags.has('force')) {
      throw new Error(`cannot back up to "${target}": the file exists (pass --force to replace it)`);
    }
    if (!existsSync(dirname(dest))) throw new Error(`cannot back up to "${target}": no such directory "${dirname(dest)}"`);
    const partial = `${dest}.partial`;
    rmSync(partial, { force: true });
    const source = openExisting(sourcePath);
    const started = Date.now();
    let result: { pages: number; restarts: number };
    try {
      result = await backupDatabase(source, partial, progressPrinter(args));
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
    const keyLine =
      key.kind === 'file'
        ? `master key: not in the copy; keep ${key.path} with this backup (without it the encrypted secrets cannot be read)`
        : key.kind === 'env'
          ? 'master key: not in the copy; keep the value of KOPEK_MASTER_KEY with this backup (without it the encrypted secrets cannot be read)'
          : 'master key: none yet (the database holds no encrypted secret)';
    output(args, { path: dest, pages: result.pages, bytes, schema_version: check.version, restarts: result.restarts, duration_ms: ms, master_key: key.kind === 'file' ? key.path : key.kind }, [
      `backup written to ${dest}: ${result.pages} pages, ${bytes} bytes, schema version ${check.version}, integrity ok, ${ms} ms`,
      keyLine,
    ]);
    return 0;
  },
};

/** Integrity and schema version of a finished copy; the copy's file is left closed with no -wal/-shm beside it. */
function verifyCopy(path: string): { integrity: string; version: number } {
  const db = openExisting(path);
  try {
    const rows = db.pragma('integrity_check') as Array<{ integrity_check: string }>;
    const version = db.pragma('user_version', { simple: true }) as number;
    return { integrity: rows.map((r) => r.integrity_check).join('; '), version };
  } finally {
    db.close();
  }
}

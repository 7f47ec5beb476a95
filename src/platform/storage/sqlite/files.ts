// SQLite files as they are on disk, opened without migrating or creating anything: for doctor, backups and the
// check of a finished copy.
import Database from 'better-sqlite3';
import { chmodSync, closeSync, existsSync, openSync } from 'node:fs';
import { nativeBinding } from './native';
import { SqliteStore } from './store';
import type { Store } from '../store';

/** Open an existing database file for reading its pages, without migrating or creating anything. */
function openExisting(path: string): Database.Database {
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

/** A Store on an existing database file as it is (no schema installed, no migration): for kopek doctor. */
export function openExistingStorage(path: string): Store {
  return new SqliteStore(openExisting(path));
}

/** An open source of an online backup: copy it, then close it. */
export interface BackupSource {
  /** Copy the database to `dest` online; resolves with the page count and how often a concurrent write restarted the copy. */
  copyTo(dest: string, onProgress?: (done: number, total: number) => void): Promise<{ pages: number; restarts: number }>;
  close(): void;
}

/** Open an existing database file as the source of an online backup (nothing migrated or created). */
export function openBackupSource(path: string): BackupSource {
  const db = openExisting(path);
  return {
    copyTo: (dest, onProgress) => backupDatabase(db, dest, onProgress),
    close: () => db.close(),
  };
}

/** Copy `source` to `dest` online; resolves with the page count and how often a concurrent write restarted the copy. */
async function backupDatabase(
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

/** Integrity and schema version of a finished copy; the copy's file is left closed with no -wal/-shm beside it. */
export function verifyCopy(path: string): { integrity: string; version: number } {
  const db = openExisting(path);
  try {
    const rows = db.pragma('integrity_check') as Array<{ integrity_check: string }>;
    const version = db.pragma('user_version', { simple: true }) as number;
    return { integrity: rows.map((r) => r.integrity_check).join('; '), version };
  } finally {
    db.close();
  }
}

// Opening SQLite files: the server's and the commands' connection (WAL, schema and migrations), a file as it is
// (doctor, backups, the check of a finished copy), whether this process may write it, and where better-sqlite3
// finds its native addon.
import Database from 'better-sqlite3';
import { accessSync, chmodSync, closeSync, constants, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { SCHEMA_SQL } from '../schema-text';
import { BASE_VERSION, MIGRATIONS, SCHEMA_VERSION } from '../migrations';

export { SCHEMA_VERSION };

/** Bytes of WAL file kept when the WAL starts over (journal_size_limit). */
export const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

/** Largest part of the database file read through a memory map (SQLite caps it at its build's limit). */
export const MMAP_SIZE_BYTES = 4 * 1024 * 1024 * 1024;

/** Options for opening the database. */
export interface OpenOptions {
  /** `FULL` (default) makes every commit durable against power loss. */
  synchronous?: 'FULL' | 'NORMAL';
  readonly?: boolean;
}

/** Open (creating if needed) the SQLite file: WAL, busy timeout, foreign keys, schema and migrations applied. */
export function openDatabase(path: string, opts: OpenOptions = {}): Database.Database {
  if (path !== ':memory:') {
    mkdirSync(dirname(path), { recursive: true });
    if (!opts.readonly) ownerOnly(path);
  }
  const db = connect(path, opts.readonly ? { readonly: true } : {});
  if (!opts.readonly) {
    enableWal(db, path);
    db.pragma(`synchronous = ${opts.synchronous ?? 'FULL'}`);
    // When the WAL starts over after a checkpoint, its file is cut back to this size: a burst of writes (a
    // long clock advance) leaves no file of its peak size behind.
    db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
  }
  db.pragma('foreign_keys = ON');
  // Pages are read through a memory map instead of a read call and a copy each: a read that misses SQLite's
  // own cache (the first read of an old payment, a webhook-driven lookup) then costs a memory access. Writes
  // still go through the WAL; SQLite maps no more than the file holds, so a small database maps little.
  db.pragma(`mmap_size = ${MMAP_SIZE_BYTES}`);
  if (!opts.readonly) {
    try {
      migrate(db, path);
    } catch (err) {
      db.close();
      throw err;
    }
  }
  return db;
}

/**
 * The database holds a shop's data and sealed secrets: its file is the owner's alone (0600), whatever the
 * umask. SQLite gives the -wal and -shm files the mode of the database file, so they follow; files an older
 * version left readable are narrowed too.
 */
function ownerOnly(path: string): void {
  if (!existsSync(path)) closeSync(openSync(path, 'a', 0o600));
  for (const f of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      if ((statSync(f).mode & 0o077) !== 0) chmodSync(f, 0o600);
    } catch {
      // Not there (yet): SQLite creates it with the database file's mode.
    }
  }
}

/**
 * Apply schema.sql to an empty database, or the pending migrations to an older one. The version is read again
 * under the write lock (BEGIN IMMEDIATE), so that processes opening a new or older file at once (admin commands
 * started together, a server and a command) apply each step once: the first installs, the others find it done.
 * A database older than release 0.1.0's schema is refused: `kopek migrate` upgrades it.
 */
function migrate(db: Database.Database, path: string): void {
  const seen = db.pragma('user_version', { simple: true }) as number;
  if (seen === SCHEMA_VERSION) return;
  const apply = db.transaction(() => {
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version === SCHEMA_VERSION) return;
    if (version > SCHEMA_VERSION) {
      throw new Error(`cannot use database: its schema version ${version} is newer than this build's ${SCHEMA_VERSION}`);
    }
    if (version > 0 && version < BASE_VERSION) {
      throw new Error(`cannot use database "${path}": its schema version ${version} is older than kopek 0.1.0's (${BASE_VERSION}); upgrade it once with \`kopek migrate --db ${path}\``);
    }
    if (version === 0) {
      db.exec(SCHEMA_SQL);
    } else {
      for (let v = version; v < SCHEMA_VERSION; v++) {
        const step = MIGRATIONS[v - BASE_VERSION];
        db.exec(typeof step === 'string' ? step : step.sqlite);
      }
    }
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  });
  apply.immediate();
}

/** How long opening waits for other processes opening a new file at the same time to let it switch to WAL. */
const WAL_SWITCH_WAIT_MS = 10_000;

/**
 * Switch to WAL. The switch needs the file to itself for a moment; processes opening a new file together (admin
 * commands started at once) can find it busy, and SQLite's busy timeout does not cover every such case: try
 * again for a while before giving up.
 */
function enableWal(db: Database.Database, path: string): void {
  const until = Date.now() + WAL_SWITCH_WAIT_MS;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      if (String(db.pragma('journal_mode = WAL', { simple: true })) === 'wal' || db.memory) return;
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err;
    }
    if (Date.now() > until) throw new Error(`cannot open database "${path}": it stayed busy for ${WAL_SWITCH_WAIT_MS / 1000} s while switching to WAL mode`);
    Atomics.wait(pause, 0, 0, 20);
  }
}

/**
 * Where better-sqlite3 finds its native addon. In development it finds it itself; the single executable
 * sets a loaded addon here before the database opens, with the addon's file and a bundled copy of
 * better-sqlite3's JavaScript for threads (see build.mjs and src/sea.ts).
 */
export const nativeBinding: { addon?: unknown; path?: string; libSource?: string } = {};

/** The addon's file: the one the executable unpacked, else better-sqlite3's own build. */
export function nativeBindingPath(): string {
  if (nativeBinding.path) return nativeBinding.path;
  return join(dirname(packageRequire().resolve('better-sqlite3/package.json')), 'build', 'Release', 'better_sqlite3.node');
}

/**
 * better-sqlite3's JavaScript for a worker thread to load: the package's entry file in development, the
 * executable's bundled copy as text otherwise.
 */
export function betterSqliteLib(): { file: string } | { source: string } {
  if (nativeBinding.libSource !== undefined) return { source: nativeBinding.libSource };
  return { file: packageRequire().resolve('better-sqlite3') };
}

// Resolved at run time (never by the bundler): only development runs from node_modules.
function packageRequire(): NodeJS.Require {
  return createRequire(__filename);
}

/**
 * Why this process could not write the database, or null when it can: the file itself (when it exists) and
 * its folder, where SQLite keeps the -wal and -shm files beside it and creates the file when it is new.
 * A read-only mount answers EROFS even to root; a file or folder without write permission, EACCES.
 */
export function writeProblem(dbPath: string): string | null {
  if (dbPath === ':memory:') return null;
  const file = resolve(dbPath);
  const folder = dirname(file);
  const targets = existsSync(file) ? [['file', file], ['folder', folder]] : existsSync(folder) ? [['folder', folder]] : [];
  for (const [what, path] of targets) {
    try {
      accessSync(path, constants.W_OK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const why = code === 'EROFS' ? 'it is on a read-only file system' : code === 'EACCES' ? 'this user may not write it' : (err as Error).message;
      return `the database ${what} "${path}" is not writable (${code}: ${why})`;
    }
  }
  return null;
}

/** Open an existing database file for reading its pages, without migrating or creating anything. */
export function openExisting(path: string): Database.Database {
  if (!existsSync(path)) throw new Error(`cannot open database "${path}": no such file (pass --db)`);
  return connect(path, { fileMustExist: true });
}

/** A connection to `path` through the addon in use, waiting up to 5 s for another process's lock. */
function connect(path: string, opts: Database.Options): Database.Database {
  if (nativeBinding.addon) (opts as { nativeBinding?: unknown }).nativeBinding = nativeBinding.addon;
  try {
    const db = new Database(path, opts);
    db.pragma('busy_timeout = 5000');
    return db;
  } catch (err) {
    throw new Error(`cannot open database "${path}": ${(err as Error).message}`);
  }
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

import Database from 'better-sqlite3';
import { accessSync, chmodSync, closeSync, constants, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { SCHEMA_SQL } from '../schema-text';
import { BASE_VERSION, MIGRATIONS, SCHEMA_VERSION } from '../migrations';

export { SCHEMA_VERSION };

export const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

/** SQLite caps it at its build's limit. */
export const MMAP_SIZE_BYTES = 4 * 1024 * 1024 * 1024;

export interface OpenOptions {
  /** `FULL` (default) makes every commit durable against power loss. */
  synchronous?: 'FULL' | 'NORMAL';
  readonly?: boolean;
}

/** WAL, busy timeout, foreign keys, schema and migrations applied. */
export function openDatabase(path: string, opts: OpenOptions = {}): Database.Database {
  if (path !== ':memory:') {
    mkdirSync(dirname(path), { recursive: true });
    if (!opts.readonly) ownerOnly(path);
  }
  const db = connect(path, opts.readonly ? { readonly: true } : {});
  db.pragma('foreign_keys = ON');
  // A read missing SQLite's cache then costs a memory access, not a read call and a copy.
  db.pragma(`mmap_size = ${MMAP_SIZE_BYTES}`);
  if (opts.readonly) return db;
  try {
    enableWal(db, path);
    db.pragma(`synchronous = ${opts.synchronous ?? 'FULL'}`);
    // A burst of writes (a long clock advance) leaves no WAL file of its peak size behind.
    db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
    migrate(db, path);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/** The file holds a shop's secrets: 0600 whatever the umask (the -wal and -shm files follow its mode). */
function ownerOnly(path: string): void {
  if (!existsSync(path)) closeSync(openSync(path, 'a', 0o600));
  for (const f of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      if ((statSync(f).mode & 0o077) !== 0) chmodSync(f, 0o600);
    } catch {
    }
  }
}

/**
 * Schema or pending migrations, with the version read again under BEGIN IMMEDIATE so processes opening the file
 * at once apply each step once. A database older than 0.1.0's schema is refused: `kopek migrate` upgrades it.
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

/** Processes opening a new file together can hold the WAL switch off this long. */
const WAL_SWITCH_WAIT_MS = 10_000;

/** SQLite's busy timeout does not cover every case of the switch finding the file busy: retry for a while. */
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

/** Set by the single executable before the database opens (see build.mjs and src/sea.ts); empty in development. */
export const nativeBinding: { addon?: unknown; path?: string; libSource?: string } = {};

export function nativeBindingPath(): string {
  return nativeBinding.path || join(dirname(packageRequire().resolve('better-sqlite3/package.json')), 'build', 'Release', 'better_sqlite3.node');
}

/** The package's entry file in development, the executable's bundled copy otherwise. */
export function betterSqliteLib(): { file: string } | { source: string } {
  return nativeBinding.libSource !== undefined ? { source: nativeBinding.libSource } : { file: packageRequire().resolve('better-sqlite3') };
}

// Resolved at run time, never by the bundler.
function packageRequire(): NodeJS.Require {
  return createRequire(__filename);
}

/**
 * Why this process could not write the database (the file, or its folder where SQLite creates the file and its
 * -wal and -shm), or null. A read-only mount answers EROFS even to root.
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

/** For reading its pages: nothing migrated or created. */
export function openExisting(path: string): Database.Database {
  if (!existsSync(path)) throw new Error(`cannot open database "${path}": no such file (pass --db)`);
  return connect(path, { fileMustExist: true });
}

/** Waits up to 5 s for another process's lock. */
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

export interface BackupSource {
  /** Resolves with the page count and how often a concurrent write restarted the copy. */
  copyTo(dest: string, onProgress?: (done: number, total: number) => void): Promise<{ pages: number; restarts: number }>;
  close(): void;
}

export function openBackupSource(path: string): BackupSource {
  const db = openExisting(path);
  return { copyTo: (dest, onProgress = () => {}) => backupDatabase(db, dest, onProgress), close: () => db.close() };
}

async function backupDatabase(source: Database.Database, dest: string, onProgress: (done: number, total: number) => void): Promise<{ pages: number; restarts: number }> {
  let step = 256;
  let lastRemaining = Infinity;
  let restarts = 0;
  let pages = 0;
  // The owner's alone from its first byte.
  if (!existsSync(dest)) closeSync(openSync(dest, 'a', 0o600));
  chmodSync(dest, 0o600);
  const final = await source.backup(dest, {
    progress({ totalPages, remainingPages }) {
      pages = totalPages;
      // A write by another connection restarts the copy; under steady writes small steps could restart forever,
      // so after a restart the rest goes in one step (one snapshot, which does not block writers in WAL mode).
      if (remainingPages > lastRemaining) {
        restarts++;
        step = totalPages;
      }
      lastRemaining = remainingPages;
      onProgress(totalPages - remainingPages, totalPages);
      return Math.max(step, Math.ceil(totalPages / 20));
    },
  });
  pages = final.totalPages;
  onProgress(pages, pages);
  return { pages, restarts };
}

/** The copy's file is left closed with no -wal/-shm beside it. */
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

import Database from 'better-sqlite3';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { SCHEMA_SQL } from '../schema-text';
import { BASE_VERSION, MIGRATIONS, SCHEMA_VERSION } from '../migrations';
import { nativeBinding } from './native';

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
  const dbOpts: Database.Options = {};
  if (nativeBinding.addon) (dbOpts as { nativeBinding?: unknown }).nativeBinding = nativeBinding.addon;
  if (opts.readonly) dbOpts.readonly = true;
  let db: Database.Database;
  try {
    db = new Database(path, dbOpts);
  } catch (err) {
    throw new Error(`cannot open database "${path}": ${(err as Error).message}`);
  }
  db.pragma('busy_timeout = 5000');
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

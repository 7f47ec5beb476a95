import type { Logger } from '../log';
import { openDatabase, openExisting } from './sqlite/open';
import type { QueryResult } from 'pg';
import { isPostgresUrl, openPgStorage, pgSchemaVersion } from './postgres/open';
import { SqliteStore } from './sqlite/store';
export { openBackupSource, verifyCopy, type BackupSource } from './sqlite/open';
import { type Reader, type Store } from './store';

// What the admin commands and the server's start need of SQLite itself: opening a store on a file, the
// file's own checks (integrity, journal mode, schema version) and the online backup. Nothing outside src/platform/storage/
// speaks SQLite; this file does it for them.

/** Options of openStorage. */
export interface StorageOptions {
  /** How commits are made durable (see StoreOptions.sync); default `sqlite`. */
  sync?: 'sqlite' | 'store';
  /** Where the store logs failed syncs, checkpoints and after-commit actions. */
  log?: Logger;
  /** Open without writing: no schema installed, no migration. */
  readonly?: boolean;
}

/**
 * Open (creating if needed, schema and migrations applied unless read-only) the database file as a Store.
 * `:memory:` opens a database in memory (kopek serve --ephemeral): one connection and no file, so no WAL, sync,
 * checkpoint or lock; its commits count as durable once made, and group commit, the body watchdog and the
 * change signal work as on a file.
 */
export function openStorage(path: string, opts: StorageOptions = {}): Store {
  return new SqliteStore(openDatabase(path, { readonly: opts.readonly }), { sync: opts.sync, log: opts.log });
}

/** A Store on an existing database file as it is (no schema installed, no migration): for kopek doctor. */
export function openExistingStorage(path: string): Store {
  return new SqliteStore(openExisting(path));
}

/**
 * Open the database `db` names on its engine: a PostgreSQL URL opens a pool on that database (schema created or
 * upgraded under the migration lock), anything else the SQLite file (see openStorage).
 */
export async function openEngine(db: string, opts: StorageOptions & { pgPool?: number; pgConnectTimeoutMs?: number } = {}): Promise<Store> {
  if (isPostgresUrl(db)) return openPgStorage(db, { log: opts.log, pool: opts.pgPool, connectTimeoutMs: opts.pgConnectTimeoutMs, migrate: !opts.readonly });
  return openStorage(db, opts);
}

/**
 * The schema version stored in the file at `path` (`PRAGMA user_version`; 0 for a database without kopek's
 * schema), read through a read-only connection that is closed again. Throws when the file cannot be opened.
 */
export function fileSchemaVersion(path: string): number {
  const probe = openDatabase(path, { readonly: true });
  try {
    return probe.pragma('user_version', { simple: true }) as number;
  } finally {
    probe.close();
  }
}

/**
 * The schema version of the database (SQLite's `PRAGMA user_version`, PostgreSQL's kopek_schema table): 0 when
 * it holds no kopek schema.
 */
export async function schemaVersion(q: Reader): Promise<number> {
  if (q.engine === 'postgres') return pgSchemaVersion({ query: async (sql: string) => ({ rows: await q.all(sql) }) as unknown as QueryResult });
  return (await q.get<{ user_version: number }>('PRAGMA user_version'))?.user_version ?? 0;
}

/** Reads the file's header (`PRAGMA schema_version`), or asks the PostgreSQL server: throws when there is no database. */
export async function probeDatabase(q: Reader): Promise<void> {
  await q.get(q.engine === 'postgres' ? 'SELECT 1 AS ok' : 'PRAGMA schema_version');
}

/** `PRAGMA integrity_check(max)`: `['ok']` when the database is sound, else up to `max` problems. */
export async function integrityCheck(q: Reader, max?: number): Promise<string[]> {
  const rows = await q.all<{ integrity_check: string }>(max === undefined ? 'PRAGMA integrity_check' : `PRAGMA integrity_check(${Math.trunc(max)})`);
  return rows.map((r) => r.integrity_check);
}

/** The journal mode (`wal` when the server has set it). */
export async function journalMode(q: Reader): Promise<string> {
  return String((await q.get<{ journal_mode: string }>('PRAGMA journal_mode'))?.journal_mode);
}

/**
 * Make the store's connection refuse every write (`PRAGMA query_only`), as storage that cannot take one does
 * (SQLITE_READONLY), until called again with `false`: for tests of how the server answers such a refusal.
 */
export function refuseWrites(store: Store, refuse: boolean): void {
  if (!(store instanceof SqliteStore)) throw new Error('refuseWrites is for a SQLite store');
  store.sqliteHandle.pragma(`query_only = ${refuse ? 'ON' : 'OFF'}`);
}

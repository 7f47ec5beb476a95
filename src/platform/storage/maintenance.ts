import { openDatabase, openExisting } from './sqlite/open';
import type { QueryResult } from 'pg';
import { isPostgresUrl, openPgStorage, pgSchemaVersion } from './postgres/open';
import { SqliteStore } from './sqlite/store';
export { openBackupSource, verifyCopy, type BackupSource } from './sqlite/open';
import { type Reader, type Store } from './store';
import type { StoreOptions } from './limits';

// What the admin commands and the server's start need of SQLite itself (opening, checks, backup): nothing outside
// src/platform/storage/ speaks SQLite.

export interface StorageOptions extends StoreOptions {
  /** Open without writing: no schema installed, no migration. */
  readonly?: boolean;
}

/**
 * Open (creating if needed, migrating unless read-only) the file as a Store. `:memory:` (serve --ephemeral) has
 * one connection and no file (no WAL, sync, checkpoint or lock): commits count as durable once made.
 */
export function openStorage(path: string, opts: StorageOptions = {}): Store {
  return new SqliteStore(openDatabase(path, { readonly: opts.readonly }), { sync: opts.sync, log: opts.log });
}

/** No schema installed, no migration: for kopek doctor. */
export function openExistingStorage(path: string): Store {
  return new SqliteStore(openExisting(path));
}

/** A PostgreSQL URL opens a pool (schema created or upgraded under the migration lock), anything else the SQLite file. */
export async function openEngine(db: string, opts: StorageOptions & { pgPool?: number; pgConnectTimeoutMs?: number } = {}): Promise<Store> {
  if (isPostgresUrl(db)) return openPgStorage(db, { log: opts.log, pool: opts.pgPool, connectTimeoutMs: opts.pgConnectTimeoutMs, migrate: !opts.readonly });
  return openStorage(db, opts);
}

/** `PRAGMA user_version` of the file (0 without kopek's schema), through a read-only connection; throws if it cannot open. */
export function fileSchemaVersion(path: string): number {
  const probe = openDatabase(path, { readonly: true });
  try {
    return probe.pragma('user_version', { simple: true }) as number;
  } finally {
    probe.close();
  }
}

/** SQLite's `PRAGMA user_version`, PostgreSQL's kopek_schema table; 0 without kopek's schema. */
export async function schemaVersion(q: Reader): Promise<number> {
  if (q.engine === 'postgres') return pgSchemaVersion({ query: async (sql: string) => ({ rows: await q.all(sql) }) as unknown as QueryResult });
  return (await q.get<{ user_version: number }>('PRAGMA user_version'))?.user_version ?? 0;
}

/** Throws when there is no database. */
export async function probeDatabase(q: Reader): Promise<void> {
  await q.get(q.engine === 'postgres' ? 'SELECT 1 AS ok' : 'PRAGMA schema_version');
}

/** `PRAGMA integrity_check(max)`: `['ok']` when the database is sound, else up to `max` problems. */
export async function integrityCheck(q: Reader, max?: number): Promise<string[]> {
  const rows = await q.all<{ integrity_check: string }>(max === undefined ? 'PRAGMA integrity_check' : `PRAGMA integrity_check(${Math.trunc(max)})`);
  return rows.map((r) => r.integrity_check);
}

export async function journalMode(q: Reader): Promise<string> {
  return String((await q.get<{ journal_mode: string }>('PRAGMA journal_mode'))?.journal_mode);
}

/** `PRAGMA query_only` until called with `false`, as storage that refuses writes (SQLITE_READONLY): for tests. */
export function refuseWrites(store: Store, refuse: boolean): void {
  if (!(store instanceof SqliteStore)) throw new Error('refuseWrites is for a SQLite store');
  store.sqliteHandle.pragma(`query_only = ${refuse ? 'ON' : 'OFF'}`);
}

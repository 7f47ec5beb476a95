import type Database from 'better-sqlite3';
import type { Migration } from '../migrations';

/**
 * A step of the SQLite migrations before the base version (migrations-old.ts): SQL, or a function for a step
 * that must look at the schema first.
 */
export type OldMigration = Migration | ((db: Database.Database) => void);

/** Whether `table` has a column named `column`. */
export function hasColumn(db: Database.Database, table: string, column: string): boolean {
  return (db.pragma(`table_info(${table})`) as Array<{ name: string }>).some((c) => c.name === column);
}

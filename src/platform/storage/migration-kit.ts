import type Database from 'better-sqlite3';

/**
 * A step: SQL, or a function for a step that must look at the schema first (SQLite only: the steps below
 * postgres/open.ts's PG_FIRST_VERSION). A step from that version on runs on both engines: one SQL text both
 * read, or its SQL per engine; and both schema files (schema.sql, postgres/schema.sql) take its change, as
 * test/db/schema-engines.test.ts checks.
 */
export type Migration = string | { sqlite: string; postgres: string } | ((db: Database.Database) => void);

/** Whether `table` has a column named `column`. */
export function hasColumn(db: Database.Database, table: string, column: string): boolean {
  return (db.pragma(`table_info(${table})`) as Array<{ name: string }>).some((c) => c.name === column);
}

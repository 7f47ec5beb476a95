/**
 * Migrations from one schema version to the next: MIGRATIONS[0] takes version 1 to 2, and so on.
 * schema.sql always holds the newest whole schema; a new database gets it in one step.
 */
export const MIGRATIONS: readonly string[] = [];

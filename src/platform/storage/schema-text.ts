import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// The build replaces this module with the texts of both schema files, so the executable carries them.
/** The whole SQLite schema, as written in schema.sql at the top of the project. */
export const SCHEMA_SQL: string = readFileSync(join(__dirname, '..', '..', '..', 'schema.sql'), 'utf8');
/** The whole PostgreSQL schema, as written in postgres/schema.sql beside this folder's PostgreSQL engine. */
export const PG_SCHEMA_SQL: string = readFileSync(join(__dirname, 'postgres', 'schema.sql'), 'utf8');

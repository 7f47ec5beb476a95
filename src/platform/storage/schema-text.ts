import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// The build replaces this module with the text of schema.sql, so the executable carries it.
/** The whole schema, as written in schema.sql at the top of the project. */
export const SCHEMA_SQL: string = readFileSync(join(__dirname, '..', '..', '..', 'schema.sql'), 'utf8');

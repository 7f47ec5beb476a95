import { readFileSync } from 'node:fs';
import { listTables } from '../../src/platform/storage/dialect';
import type { TestServer } from './server';

/**
 * Everything the test server's database holds, as text, for checks that a secret is never stored in clear.
 * On SQLite that is the file and its WAL byte for byte (free pages and old versions included); on PostgreSQL,
 * whose files are the server's, every row of every table.
 */
export async function storedText(s: TestServer): Promise<string> {
  if (s.store.engine !== 'postgres') {
    return [s.dbPath, `${s.dbPath}-wal`].map((f) => readFileSync(f).toString('latin1')).join('\n');
  }
  const parts: string[] = [];
  for (const table of await listTables(s.store)) {
    const rows = await s.store.all<{ row: string }>(`SELECT t::text AS row FROM "${table}" t`);
    for (const r of rows) parts.push(r.row);
  }
  return parts.join('\n');
}

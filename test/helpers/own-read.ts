import { openDatabase } from '../../src/platform/storage/sqlite/open';
import { openEngine } from '../../src/platform/storage/maintenance';
import { isPostgresUrl } from '../../src/platform/storage/postgres/open';

/**
 * Rows read on a connection of the test's own to the database at `db` (a SQLite file or a PostgreSQL URL), for
 * when the test server is stopped or a child process owns the database: opened as it is, read, closed.
 */
export async function readOwn<T>(db: string, sql: string, ...params: unknown[]): Promise<T[]> {
  if (!isPostgresUrl(db)) {
    const conn = openDatabase(db, { readonly: true });
    try {
      return conn.prepare(sql).all(...params) as T[];
    } finally {
      conn.close();
    }
  }
  const store = await openEngine(db, { readonly: true });
  try {
    return await store.all<T>(sql, ...params);
  } finally {
    await store.close();
  }
}

import { createHash, randomBytes } from 'node:crypto';
import type { Reader } from '../../src/platform/storage/store';
import pg from 'pg';
import { migratePg, pgPool } from '../../src/platform/storage/postgres/open';
import { PG_SCHEMA_SQL } from '../../src/platform/storage/schema-text';
import { SCHEMA_VERSION } from '../../src/platform/storage/migrations';

/**
 * The PostgreSQL server the suite runs against, when it runs on that engine: `KOPEK_TEST_PG` is a URL without a
 * database (`postgres://kopek@127.0.0.1:PORT`). Unset, every test server uses a SQLite file as before.
 */
export const TEST_PG: string | null = process.env.KOPEK_TEST_PG || null;

/**
 * For `test(…, { skip: sqliteOnly('why') })`: a test of SQLite's own file (its WAL, its backup, its lock) has no
 * PostgreSQL counterpart to run. The reason is printed with the skip.
 */
export function sqliteOnly(why: string): string | false {
  return TEST_PG ? `SQLite only: ${why}` : false;
}

/** For tests of the PostgreSQL engine itself: skipped when the suite runs on SQLite alone. */
export function postgresOnly(): string | false {
  return TEST_PG ? false : 'needs KOPEK_TEST_PG (a PostgreSQL server to test against)';
}

/** The URL of database `name` on the test server. */
export function pgUrl(name: string, base = TEST_PG): string {
  if (!base) throw new Error('KOPEK_TEST_PG is unset');
  return `${base.replace(/\/+$/, '')}/${name}`;
}

const TEMPLATE = `kopek_template_v${SCHEMA_VERSION}_${createHash('sha256').update(PG_SCHEMA_SQL).digest('hex').slice(0, 10)}`;
let template: Promise<void> | null = null;

/** Run `sql` on the server's maintenance database. */
async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: pgUrl('postgres') });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/**
 * A migrated template database, made once per server and schema version: every test database is a copy of it
 * (CREATE DATABASE … TEMPLATE copies files, far quicker than creating the schema again). Test processes that
 * start together make it under one advisory lock.
 */
function ensureTemplate(): Promise<void> {
  return (template ??= admin(async (c) => {
    await c.query('SELECT pg_advisory_lock(7142001)');
    try {
      const seen = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [TEMPLATE]);
      if (seen.rowCount) return;
      const building = `${TEMPLATE}_building`;
      await c.query(`DROP DATABASE IF EXISTS ${building}`);
      await c.query(`CREATE DATABASE ${building}`);
      const pool = pgPool(pgUrl(building), { pool: 1 });
      try {
        await migratePg(pool);
      } finally {
        await pool.end();
      }
      await c.query(`ALTER DATABASE ${building} RENAME TO ${TEMPLATE}`);
    } finally {
      await c.query('SELECT pg_advisory_unlock(7142001)');
    }
  }));
}

/** A new database with kopek's schema, for one test server; drop it with dropPgDatabase. */
export async function freshPgDatabase(): Promise<string> {
  await ensureTemplate();
  const name = `kopek_t_${randomBytes(6).toString('hex')}`;
  await admin(async (c) => {
    // Copying a template needs it free of connections: another process copying at the same instant is waited for.
    for (let i = 0; ; i++) {
      try {
        await c.query(`CREATE DATABASE ${name} TEMPLATE ${TEMPLATE}`);
        return;
      } catch (err) {
        if ((err as { code?: string }).code !== '55006' || i > 50) throw err;
        await new Promise((r) => setTimeout(r, 20 + Math.random() * 40));
      }
    }
  });
  return pgUrl(name);
}

/** A new database with nothing in it, not even kopek's schema; drop it with dropPgDatabase. */
export async function emptyPgDatabase(): Promise<string> {
  const name = `kopek_t_${randomBytes(6).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  return pgUrl(name);
}

/** Drop a database freshPgDatabase made (its connections are ended first). */
export async function dropPgDatabase(url: string): Promise<void> {
  const name = new URL(url).pathname.slice(1);
  if (!/^kopek_t_[0-9a-f]+$/.test(name)) throw new Error(`not a test database: ${name}`);
  await admin(async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });
}

/** A master key for this test process, set in the environment as PostgreSQL mode requires. */
export function ensureMasterKey(): void {
  process.env.KOPEK_MASTER_KEY ||= randomBytes(32).toString('base64');
}

/** What the stream calls an event (its `id:`): seq on SQLite; on PostgreSQL the position a numbering pass gave it. */
export async function streamIdsOf(store: Reader, seqs: number[]): Promise<number[]> {
  if (store.engine !== 'postgres') return seqs;
  const deadline = Date.now() + 5_000;
  for (;;) {
    const out: number[] = [];
    for (const seq of seqs) {
      const r = await store.get<{ pos: number }>('SELECT pos FROM event_positions WHERE seq = ?', seq);
      if (!r) break;
      out.push(r.pos);
    }
    if (out.length === seqs.length) return out;
    if (Date.now() > deadline) throw new Error(`events ${seqs.join(',')} were not numbered within 5 s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A shop's stream ids in stream order (every event numbered so far, on PostgreSQL). */
export async function streamIdsOfShop(store: Reader, shopId: string): Promise<number[]> {
  const sql =
    store.engine === 'postgres'
      ? 'SELECT pos AS id FROM event_positions WHERE shop_id = ? ORDER BY pos'
      : 'SELECT seq AS id FROM events WHERE shop_id = ? ORDER BY seq';
  return (await store.all<{ id: number }>(sql, shopId)).map((r) => r.id);
}

/**
 * An answer once a change committed on another connection (an admin command) applies. A SQLite server sees such a
 * change at its very next request; a PostgreSQL node hears of it by an announcement a moment after the commit
 * (Store.keyTablesVersion, src/platform/storage/postgres/events.ts), so there `read` is repeated until `ok` holds, for up to a second (the contract's bound
 * for a revoked key). The last answer is returned either way, for the caller's assertions.
 */
export async function onceApplied<T>(read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + 1_000;
  for (;;) {
    const v = await read();
    if (!TEST_PG || ok(v) || Date.now() > deadline) return v;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

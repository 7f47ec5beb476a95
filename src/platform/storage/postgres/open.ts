import pg from 'pg';
import type { Logger } from '../../log';
import { redactUrl } from '../../redact-url';
import { PG_SCHEMA_SQL } from '../schema-text';
import { BASE_VERSION, MIGRATIONS, SCHEMA_VERSION } from '../migrations';
import { PgStore } from './store';
import { PG_LIMITS } from '../limits';

/** Held while a node creates or upgrades the schema ("kopek" in ASCII). */
const MIGRATE_LOCK = 0x6b6f70656b;

export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}

// The URL with its password replaced, for logs, errors and listings.
export { redactUrl };

export interface PgOpenOptions {
  log?: Logger;
  /** Default PG_LIMITS.pool. */
  pool?: number;
  /** Longer a wait for a connection and the database counts as unavailable. */
  connectTimeoutMs?: number;
  /** Default true; false opens as it is (doctor). */
  migrate?: boolean;
}

/** int8, numeric and bool as SQLite gives them: numbers, and 1/0. */
function typeParser(oid: number, format?: string): (text: string) => unknown {
  if (oid === 20 || oid === 1700) return (v: string) => Number(v);
  if (oid === 16) return (v: string) => (v === 't' ? 1 : 0);
  return pg.types.getTypeParser(oid, format as 'text');
}

/** Durable commits whatever the server's default, no dependence on its zone, no JIT (dearer than kopek's statements). */
const SESSION_OPTIONS = '-c synchronous_commit=on -c TimeZone=UTC -c jit=off';

export function pgPool(url: string, opts: PgOpenOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.pool ?? PG_LIMITS.pool,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? PG_LIMITS.connect_timeout_ms,
    idleTimeoutMillis: 30_000,
    statement_timeout: PG_LIMITS.statement_timeout_ms,
    idle_in_transaction_session_timeout: PG_LIMITS.idle_in_transaction_ms,
    application_name: 'kopek',
    // A transaction's BEGIN travels with its first statement.
    pipeline: true,
    options: SESSION_OPTIONS,
    types: { getTypeParser: typeParser } as pg.CustomTypesConfig,
  });
  // An idle client whose server went away emits here; unheard, that would end the process.
  pool.on('error', (err) => opts.log?.warn('postgres connection lost while idle', { error: redactUrl(String(err.message)) }));
  pool.on('connect', (client) => {
    // Dying while checked out: the next statement fails and the store drops it. Unheard, the process would end.
    client.on('error', (err) => opts.log?.warn('postgres connection lost', { error: redactUrl(String(err.message)) }));
  });
  return pool;
}

export async function openPgStorage(url: string, opts: PgOpenOptions = {}): Promise<PgStore> {
  const pool = pgPool(url, opts);
  const listenClient = (): pg.Client =>
    new pg.Client({ connectionString: url, application_name: 'kopek-listen', options: SESSION_OPTIONS, types: { getTypeParser: typeParser } as pg.CustomTypesConfig });
  let store: PgStore | null = null;
  try {
    if (opts.migrate !== false) await migratePg(pool);
    store = new PgStore(pool, { path: redactUrl(url), log: opts.log, listenClient });
    await store.measureClock();
    return store;
  } catch (err) {
    if (store) await store.close();
    else await pool.end().catch(() => {});
    throw new Error(`cannot open database "${redactUrl(url)}": ${redactUrl((err as Error).message)}`);
  }
}

/** 0 when it holds no kopek schema. */
export async function pgSchemaVersion(q: { query(sql: string): Promise<pg.QueryResult> }): Promise<number> {
  const t = await q.query(`SELECT to_regclass('kopek_schema') IS NOT NULL AS present`);
  if (!t.rows[0].present) return 0;
  const r = await q.query('SELECT version FROM kopek_schema');
  return Number(r.rows[0]?.version ?? 0);
}

/**
 * In one transaction under an advisory lock: nodes starting together wait and find the first's work done. A
 * database newer than this build is refused with both versions named.
 */
export async function migratePg(pool: pg.Pool): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATE_LOCK]);
    const seen = await pgSchemaVersion(client);
    if (seen > SCHEMA_VERSION) {
      throw new Error(`the database's schema is version ${seen}, newer than this build's ${SCHEMA_VERSION}: run a newer kopek`);
    }
    if (seen === 0) {
      await client.query(PG_SCHEMA_SQL);
      await client.query('CREATE TABLE kopek_schema (version BIGINT NOT NULL)');
      await client.query('INSERT INTO kopek_schema (version) VALUES ($1)', [SCHEMA_VERSION]);
    } else {
      for (let v = Math.max(seen, BASE_VERSION); v < SCHEMA_VERSION; v++) {
        const step = MIGRATIONS[v - BASE_VERSION];
        await client.query(typeof step === 'string' ? step : step.postgres);
      }
      if (seen !== SCHEMA_VERSION) await client.query('UPDATE kopek_schema SET version = $1', [SCHEMA_VERSION]);
    }
    await client.query('COMMIT');
    return seen;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { openEngine } from '../../src/platform/storage/maintenance';
import { openPgStorage } from '../../src/platform/storage/postgres/open';
import type { Store } from '../../src/platform/storage/store';
import { toApiError } from '../../src/platform/http/errors';
import { dropPgDatabase, freshPgDatabase, postgresOnly } from '../helpers/pg';
import { SCHEMA_VERSION } from '../../src/platform/storage/migrations';

// The PostgreSQL engine's traps, each with a test: what runs again and what never does, what the driver gives
// back as strings, and what an idle connection's death must not do.

const skip = postgresOnly();
let url: string;
let store: Store;
before(async () => {
  if (skip) return;
  url = await freshPgDatabase();
  store = await openEngine(url);
  await store.tx((tx) => tx.run('CREATE TABLE counters (id TEXT PRIMARY KEY, n BIGINT NOT NULL)'));
  await store.tx((tx) => tx.run(`INSERT INTO counters (id, n) VALUES ('a', 0)`));
});
after(async () => {
  if (skip) return;
  await store.close();
  await dropPgDatabase(url);
});

test('a serialization failure runs the body again from the start; after-commit actions run once, for the run that committed', { skip }, async () => {
  let runs = 0;
  let committed = 0;
  // 20 read-then-write increments at once: under SERIALIZABLE some lose their race and run again.
  await Promise.all(
    Array.from({ length: 20 }, () =>
      store.tx(async (tx) => {
        runs++;
        const r = await tx.get<{ n: number }>(`SELECT n FROM counters WHERE id = 'a'`);
        await tx.run(`UPDATE counters SET n = ? WHERE id = 'a'`, r!.n + 1);
        tx.afterCommit(() => committed++);
      }),
    ),
  );
  assert.equal((await store.get<{ n: number }>(`SELECT n FROM counters WHERE id = 'a'`))!.n, 20, 'no increment lost');
  assert.equal(committed, 20);
  assert.ok(runs > 20, `some bodies ran again (${runs} runs for 20 commits)`);
});

test('statements sent side by side, one losing a serialization race: the transaction runs again (the others\' 25P02 is not the answer)', { skip }, async () => {
  let runs = 0;
  const n = await store.tx(async (tx) => {
    runs++;
    // The first run's first statement fails as a lost race would; the one sent beside it then only hears that
    // the transaction is aborted, and may be the error the body throws.
    const race = runs === 1 ? `DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = '40001', MESSAGE = 'lost the race'; END $$` : 'SELECT 1';
    // The failing statement is wrapped in a few async steps, as a domain function's would be, so that its
    // error reaches Promise.all after the aborted one's.
    const deep = async (k: number): Promise<unknown> => (k === 0 ? tx.run(race) : await deep(k - 1));
    const [, row] = await Promise.all([deep(4), tx.get<{ n: number }>(`SELECT n FROM counters WHERE id = 'a'`)]);
    return row!.n;
  });
  assert.equal(runs, 2);
  assert.equal(typeof n, 'number');
});

test('a connection lost during COMMIT is an unknown outcome: the body ran once, never again, and the answer is 503', { skip }, async () => {
  // A deferred constraint trigger runs at COMMIT; this one ends its own session there.
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(`CREATE TABLE doomed (id TEXT PRIMARY KEY)`);
    await admin.query(`CREATE FUNCTION die_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); RETURN NULL; END $$`);
    await admin.query(`CREATE CONSTRAINT TRIGGER doomed_commit AFTER INSERT ON doomed DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION die_at_commit()`);
  } finally {
    await admin.end();
  }
  let runs = 0;
  let after = 0;
  const err = await store
    .tx(async (tx) => {
      runs++;
      await tx.run(`INSERT INTO doomed (id) VALUES ('x')`);
      tx.afterCommit(() => after++);
    })
    .then(
      () => null,
      (e: unknown) => e as Error & { code?: string },
    );
  assert.ok(err, 'the transaction did not report success');
  assert.equal(err.code, 'DB_COMMIT_UNKNOWN', String(err));
  assert.equal(runs, 1, 'never run again');
  assert.equal(after, 0);
  assert.equal(toApiError(err).status, 503);
  // The pool dropped the dead connection: the next transaction works.
  assert.equal((await store.get<{ one: number }>('SELECT 1 AS one'))!.one, 1);
});

test('an idle pooled connection whose server session ends does not crash the node; the next statement gets a new one', { skip }, async () => {
  await Promise.all(Array.from({ length: 5 }, () => store.get('SELECT pg_sleep(0.01)')));
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    const r = await admin.query(`SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'kopek' AND pid <> pg_backend_pid()`);
    assert.ok(Number(r.rows[0].n) >= 1);
  } finally {
    await admin.end();
  }
  await new Promise((r) => setTimeout(r, 100));
  let answered = false;
  for (let i = 0; i < 20 && !answered; i++) {
    answered = await store.get('SELECT 1 AS one').then(
      () => true,
      () => false,
    );
  }
  assert.ok(answered, 'the store reconnects');
});

test('int8, count and sum come back as numbers, booleans as 1 and 0, as on SQLite', { skip }, async () => {
  const r = await store.get<{ big: unknown; c: unknown; s: unknown; b: unknown; f: unknown }>(
    `SELECT CAST(9007199254740991 AS BIGINT) AS big, count(*) AS c, sum(n) AS s, (1 = 1) AS b, (1 = 0) AS f FROM counters`,
  );
  assert.deepEqual(r, { big: 9007199254740991, c: 1, s: 20, b: 1, f: 0 });
});

test('a statement past its timeout is cancelled and answered 503, not left hanging', { skip }, async () => {
  const err = await store.tx(async (tx) => {
    await tx.run(`SET LOCAL statement_timeout = 50`);
    await tx.get('SELECT pg_sleep(1)');
  }).then(
    () => null,
    (e: unknown) => e as Error & { code?: string },
  );
  assert.equal(err?.code, '57014');
  assert.equal(toApiError(err).status, 503);
});

test('the database clock is the nodes\' clock: store.now() agrees with the server within a few milliseconds', { skip }, async () => {
  const before = store.now();
  const server = Number((await store.get<{ t: number }>('SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS t'))!.t);
  const afterMs = store.now();
  assert.ok(server >= before - 20 && server <= afterMs + 20, `${before} ≤ ${server} ≤ ${afterMs}`);
});

test('a statement prepared before another node changed its table runs again on a fresh connection, in and out of a transaction', { skip }, async () => {
  // One connection, so that every read below meets the statement it prepared before the change.
  const one = await openPgStorage(url, { pool: 1, migrate: false });
  try {
    await store.tx((tx) => tx.run('CREATE TABLE shapes (id TEXT PRIMARY KEY, a BIGINT NOT NULL)'));
    await store.tx((tx) => tx.run(`INSERT INTO shapes (id, a) VALUES ('x', 1)`));
    const sql = 'SELECT * FROM shapes WHERE id = ?';
    assert.deepEqual(await one.get(sql, 'x'), { id: 'x', a: 1 });
    assert.deepEqual(await one.tx((tx) => tx.get(sql, 'x')), { id: 'x', a: 1 });
    await store.tx((tx) => tx.run('ALTER TABLE shapes ADD COLUMN b BIGINT NOT NULL DEFAULT 2'));
    assert.deepEqual(await one.get(sql, 'x'), { id: 'x', a: 1, b: 2 });
    await store.tx((tx) => tx.run('ALTER TABLE shapes ADD COLUMN c BIGINT NOT NULL DEFAULT 3'));
    let runs = 0;
    const row = await one.tx(async (tx) => {
      runs++;
      return tx.get(sql, 'x');
    });
    assert.deepEqual(row, { id: 'x', a: 1, b: 2, c: 3 });
    assert.equal(runs, 2, 'the body ran again once, on a fresh connection');
  } finally {
    await one.close();
  }
});

test('a database laid out before the change announcements gets them when a node next starts on it', { skip }, async () => {
  const older = await freshPgDatabase();
  try {
    const c = new pg.Client({ connectionString: older });
    await c.connect();
    const announcing = async (): Promise<number> =>
      Number((await c.query(`SELECT count(*) AS n FROM pg_trigger WHERE tgname LIKE '%\\_announce' AND NOT tgisinternal`)).rows[0].n);
    try {
      assert.equal(await announcing(), 5, 'a new database announces changes of five tables');
      // As a database of schema 21 laid out before them: no announcements (migration 21 -> 22 adds them).
      await c.query('DROP FUNCTION kopek_announce_change() CASCADE');
      await c.query('UPDATE kopek_schema SET version = 21');
      assert.equal(await announcing(), 0);
      const node = await openPgStorage(older);
      await node.close();
      assert.equal(await announcing(), 5);
      assert.equal(Number((await c.query('SELECT version FROM kopek_schema')).rows[0].version), SCHEMA_VERSION);
    } finally {
      await c.end();
    }
  } finally {
    await dropPgDatabase(older);
  }
});

/**
 * Databases older than the build can start on. A start upgrades a database of kopek 0.1.0's schema (version 20)
 * or later, as before; a SQLite database of versions 1 to 19 it refuses, naming `kopek migrate`, which alone
 * upgrades it. The idempotency records and schemas of those versions are built by the migration tests of their
 * areas (test/auth/idempotency-migration.test.ts and others), which upgrade them the way `kopek migrate` does.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../helpers/cli';
import { sqliteOnly } from '../helpers/pg';
import { openStorage } from '../../src/platform/storage/maintenance';
import { BASE_VERSION, SCHEMA_VERSION } from '../../src/platform/storage/migrations';

const skip = sqliteOnly('SQLite files of old schema versions');
let dir: string;
let current: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kopek-old-schema-'));
  current = join(dir, 'current.db');
  await openStorage(current).close();
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** A copy of a database of this build, marked as a build of schema version `v` left it; `fn` edits it first. */
function markedCopy(name: string, v: number, fn: (db: Database.Database) => void = () => {}): string {
  const path = join(dir, name);
  copyFileSync(current, path);
  const db = new Database(path);
  try {
    fn(db);
    db.pragma(`user_version = ${v}`);
  } finally {
    db.close();
  }
  return path;
}

function versionOf(path: string): number {
  const db = new Database(path, { readonly: true });
  try {
    return db.pragma('user_version', { simple: true }) as number;
  } finally {
    db.close();
  }
}

test('serve refuses a SQLite database of every schema version before 0.1.0, naming kopek migrate, and leaves it as it was', { skip }, async () => {
  for (let v = 1; v < BASE_VERSION; v++) {
    const path = markedCopy(`v${v}.db`, v);
    const r = await runCli(['serve', '--db', path, '--port', '0']);
    assert.equal(r.code, 1, `version ${v}: ${r.out}`);
    assert.equal(r.err, `kopek serve: cannot use database "${path}": its schema version ${v} is older than kopek 0.1.0's (${BASE_VERSION}); upgrade it once with \`kopek migrate --db ${path}\`\n`);
    assert.equal(versionOf(path), v, `version ${v} is left as it was`);
  }
});

test('kopek migrate upgrades a database of before 0.1.0 to this build\'s schema; the server then starts on it', { skip }, async () => {
  // Versions 7 to 19 left the schema of every step after them ready for a database marked older than it is.
  const path = markedCopy('v7-migrate.db', 7);
  const r = await runCli(['migrate', '--db', path, '--json']);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(r.json, { db: path, engine: 'sqlite', schema_version: SCHEMA_VERSION });
  assert.equal(versionOf(path), SCHEMA_VERSION);
  await openStorage(path).close();
  assert.equal((await runCli(['migrate', '--db', path, '--json'])).json.schema_version, SCHEMA_VERSION, 'a second run finds nothing to do');
});

test('a database of kopek 0.1.0 opens at start: its per-payment expiry jobs become one sweep per shop and mode', { skip }, async () => {
  const job = (kind: string, subject: string, shop: string, due: number, state = 'pending') =>
    `INSERT INTO jobs (kind, subject_id, shop_id, mode, due_at, run_at, state, created_at) VALUES ('${kind}', '${subject}', '${shop}', 'test', ${due}, ${due}, '${state}', 1);`;
  const path = markedCopy('v20.db', BASE_VERSION, (db) =>
    db.exec(
      [
        job('payment.link_expiry', 'p1', 'shop-a', 300),
        job('payment.link_expiry', 'p2', 'shop-a', 200),
        job('payment.link_sweep', 'shop-a/test', 'shop-a', 400),
        job('payment.link_expiry', 'p3', 'shop-b', 500, 'dead'),
        job('payment.link_expiry', 'p4', 'shop-b', 100, 'done'),
        job('payment.session_expiry', 'p5', 'shop-b', 600),
        job('payment.link_sweep', 'shop-c/test', 'shop-c', 700),
      ].join('\n'),
    ),
  );
  const store = openStorage(path);
  try {
    const rows = await store.all('SELECT kind, subject_id, due_at, state FROM jobs ORDER BY state, kind, due_at');
    assert.deepEqual(
      rows.map((r) => ({ ...r })),
      [
        { kind: 'payment.link_sweep', subject_id: 'shop-b/test', due_at: 500, state: 'dead' },
        { kind: 'payment.link_expiry', subject_id: 'p4', due_at: 100, state: 'done' },
        { kind: 'payment.link_sweep', subject_id: 'shop-a/test', due_at: 200, state: 'pending' },
        { kind: 'payment.link_sweep', subject_id: 'shop-c/test', due_at: 700, state: 'pending' },
        { kind: 'payment.session_sweep', subject_id: 'shop-b/test', due_at: 600, state: 'pending' },
      ],
    );
  } finally {
    await store.close();
  }
  assert.equal(versionOf(path), SCHEMA_VERSION);
});

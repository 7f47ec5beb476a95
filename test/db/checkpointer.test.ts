import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Checkpointer } from '../../src/platform/storage/sqlite/wal';
import { openDatabase } from '../../src/platform/storage/sqlite/open';
import { SqliteStore } from '../../src/platform/storage/sqlite/store';
import { type Store } from '../../src/platform/storage/store';
import { createLogger } from '../../src/platform/log';
import { doRequest, startTestServer } from '../helpers/server';
import { spawnServer, type ChildServer } from '../helpers/child-server';
import { createPayment } from '../helpers/payments';
import { sqliteOnly } from '../helpers/pg';

test('a checkpoint thread that cannot open the database says so through the logger and the writer checkpoints again', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-ckpt-'));
  const db = openDatabase(join(dir, 'kopek.db'));
  const lines: string[] = [];
  // The thread opens the file it is given with fileMustExist, as better-sqlite3's public API allows.
  const ckpt = new Checkpointer(db, join(dir, 'missing', 'kopek.db'), createLogger('info', (l) => lines.push(l)));
  try {
    assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), 0, 'the thread checkpoints while it lives');
    const deadline = Date.now() + 10_000;
    while (lines.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const entry = JSON.parse(lines[0] ?? '{}') as Record<string, unknown>;
    assert.equal(entry.level, 'warn');
    assert.equal(entry.msg, 'WAL checkpoint thread stopped; checkpointing on the writer');
    assert.match(String(entry.error), /directory does not exist|unable to open/);
    assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), 1000, 'SQLite checkpoints on the writer again');
  } finally {
    ckpt.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Resolves once `ok()` holds, polling every 20 ms; fails after `ms` with `what`. */
async function until(ok: () => boolean, what: () => string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) assert.fail(what());
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function storeAt(dir: string): Promise<{ store: Store; path: string }> {
  const path = join(dir, 'kopek.db');
  const store = new SqliteStore(openDatabase(path), { sync: 'store' });
  await store.tx((tx) => tx.run('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)'));
  return { store, path };
}

/** About 4 MiB through the WAL in 40 group commits, far more than the 1 MiB an idle WAL is cut from. */
async function burst(store: Store): Promise<void> {
  const blob = 'x'.repeat(3000);
  for (let round = 0; round < 40; round++) {
    const group: Array<Promise<unknown>> = [];
    for (let i = 0; i < 25; i++) group.push(store.write((tx) => tx.run('INSERT INTO t (v) VALUES (?)', blob)));
    await Promise.all(group);
  }
}

const walSize = (path: string): number => {
  try {
    return statSync(path + '-wal').size;
  } catch {
    return -1;
  }
};

// A crash right after a long clock advance left the WAL of its last steps (25 MB) fully checkpointed but in
// place, and the next start read and checksummed all of it before it could listen.
test('a long WAL left by a large transaction is cut to nothing once the writer is idle, with every commit in the database file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-ckpt-'));
  const { store, path } = await storeAt(dir);
  try {
    // About 4 MiB in one transaction (as one step of a long clock advance writes), then nothing.
    const blob = 'x'.repeat(3000);
    await store.tx(async (tx) => {
      for (let i = 0; i < 1000; i++) await tx.run('INSERT INTO t (v) VALUES (?)', blob);
    });
    assert.ok(walSize(path) > 1024 * 1024, `the transaction went through the WAL (${walSize(path)} bytes)`);
    await until(() => walSize(path) === 0, () => `the idle WAL is still ${walSize(path)} bytes`);
    // What a crash now leaves: the database file alone holds every commit.
    const copy = join(dir, 'copy.db');
    copyFileSync(path, copy);
    const db = new Database(copy, { readonly: true });
    try {
      assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 1000);
    } finally {
      db.close();
    }
    // Writing goes on in the cut file.
    await store.write((tx) => tx.run(`INSERT INTO t (v) VALUES ('after')`));
    assert.ok(walSize(path) > 0);
    assert.equal((await store.get<{ n: number }>('SELECT count(*) AS n FROM t'))?.n, 1001);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a reader of another connection that holds the WAL through a burst delays the cut until it ends', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-ckpt-'));
  const { store, path } = await storeAt(dir);
  // As an admin command or a backup would: a read transaction open on its own connection.
  const reader = new Database(path, { readonly: true });
  try {
    reader.exec('BEGIN');
    assert.equal(reader.prepare('SELECT count(*) FROM t').pluck().get(), 0);
    await burst(store);
    // Its snapshot keeps the burst's frames out of the database file: they can be neither copied nor cut.
    assert.equal(reader.prepare('SELECT count(*) FROM t').pluck().get(), 0);
    assert.ok(walSize(path) > 1024 * 1024);
    // Held over several checkpoint intervals (50 ms each), so that the checkpoints after the burst meet it.
    await new Promise((r) => setTimeout(r, 400));
    assert.ok(walSize(path) > 1024 * 1024, 'not cut under the reader');
    reader.exec('COMMIT');
    await until(() => walSize(path) === 0, () => `the idle WAL is still ${walSize(path)} bytes after the reader ended`);
    assert.equal(reader.prepare('SELECT count(*) FROM t').pluck().get(), 1000);
  } finally {
    reader.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('killed right after a long clock advance has settled: the WAL was cut, and the next start finds every expiry', { skip: sqliteOnly('the WAL of a SQLite file') }, async () => {
  const s = await startTestServer();
  const child: { server: ChildServer | null } = { server: null };
  try {
    // 1,500 pending payments whose links run out within the hour (TTL_DEFAULT_MIN).
    const ids: string[] = [];
    for (let round = 0; round < 30; round++) {
      const made = await Promise.all(Array.from({ length: 50 }, () => createPayment(s, { amount: 1000 })));
      ids.push(...made.map((c) => c.payment.id as string));
    }
    await s.running.close();
    child.server = await spawnServer(['--db', s.dbPath, '--no-demo', '--sim-delay', '0', '--log-level', 'warn']);
    const call = (method: string, path: string, body?: unknown) => doRequest(child.server!.url, method, path, { body }, s.demo.key);
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, walSize(s.dbPath))), 5);
    const r = await call('POST', '/v1/test/clock/advance', { seconds: 2 * 3600 });
    clearInterval(sampler);
    assert.equal(r.status, 200, r.text);
    assert.ok(peak > 1024 * 1024, `the expiries went through the WAL (${peak} bytes at most)`);
    // Cut to nothing once idle (or, had the advance paused long enough to be cut midway, left under 1 MiB).
    await until(() => walSize(s.dbPath) < 1024 * 1024, () => `the WAL is still ${walSize(s.dbPath)} bytes once the server is idle`);
    child.server.proc.kill('SIGKILL');
    assert.equal(await child.server.exited, 'SIGKILL');
    child.server = await spawnServer(['--db', s.dbPath, '--no-demo', '--log-level', 'warn']);
    for (const id of [ids[0], ids[749], ids[1499]]) {
      const p = await call('GET', `/v1/public/payments/${id}`);
      assert.equal(p.status, 200, p.text);
      assert.equal(p.body.status, 'expired');
    }
    const pending = await call('GET', '/v1/public/payments?status=pending&limit=10');
    assert.equal(pending.status, 200, pending.text);
    assert.deepEqual(pending.body.items, [], 'no payment is pending after the restart');
    let expired = 0;
    for (let cursor: string | null = '', n = 0; cursor !== null && n < 20; n++) {
      const page = await call('GET', `/v1/public/payments?status=expired&limit=200${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(page.status, 200, page.text);
      expired += page.body.items.length;
      cursor = page.body.next_cursor;
    }
    assert.equal(expired, ids.length, 'every expiry survived the crash');
  } finally {
    child.server?.proc.kill('SIGKILL');
    if (child.server) await child.server.exited;
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('one payment on a quiet server reaches the database file within seconds: a few writes are checkpointed too, not only a hundred', { skip: sqliteOnly('the WAL checkpoint thread is SQLite\'s') }, async () => {
  const s = await startTestServer();
  try {
    const created = await s.request('POST', '/v1/public/payments', { body: { amount: 10_000 } });
    assert.equal(created.status, 201, created.text);
    const id = created.body.payment.id as string;
    await until(() => readFileSync(s.dbPath).includes(id), () => `payment ${id} never left the WAL for the database file`, 5_000);
  } finally {
    await s.close();
  }
});

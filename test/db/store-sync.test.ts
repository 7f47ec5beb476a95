import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../src/platform/storage/sqlite/store';
import { type Store } from '../../src/platform/storage/store';
import { openDatabase } from '../../src/platform/storage/sqlite/open';
import { CATCH_UP_FRAMES } from '../../src/platform/storage/sqlite/wal';

async function tempStore(sync: 'sqlite' | 'store'): Promise<{ store: SqliteStore; path: string; done: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-store-'));
  const path = join(dir, 'kopek.db');
  const store = new SqliteStore(openDatabase(path), { sync });
  await store.tx((tx) => tx.run('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)'));
  return { store, path, done: () => rmSync(dir, { recursive: true, force: true }) };
}

/** True while some commit of `store` is not on disk yet (the engine's own bookkeeping). */
function behind(store: SqliteStore): boolean {
  return (store as unknown as { durability: { settled(): Promise<void> | null } }).durability.settled() !== null;
}

test('a store that syncs the WAL itself: SQLite does not sync commits, the store does before a write settles', async () => {
  const { store, done } = await tempStore('store');
  try {
    assert.equal(store.sqliteHandle.pragma('synchronous', { simple: true }), 1, 'NORMAL: commits reach the WAL unsynced');
    assert.equal(store.sqliteHandle.pragma('wal_autocheckpoint', { simple: true }), 0, 'checkpoints run on their own thread');
    const before = store.commits;
    let settled = false;
    const p = store.write(async (tx) => (await tx.run(`INSERT INTO t (v) VALUES ('a')`)).lastInsertRowid).then((v) => ((settled = true), v));
    // The group commits on the next turn; its sync runs on the thread pool.
    await new Promise((r) => setImmediate(r));
    assert.equal(store.commits, before + 1, 'committed');
    assert.equal(settled, false, 'not settled before the WAL sync');
    assert.ok(behind(store), 'the commit is not on disk yet');
    // A read through the store sees the commit, and answers only once it is on disk.
    const read = await store.get<{ v: string }>('SELECT v FROM t WHERE id = 1');
    assert.equal(read?.v, 'a');
    assert.equal(behind(store), false, 'the read answered once the commit it saw was on disk');
    assert.equal(await p, 1);
  } finally {
    await store.close();
    done();
  }
});

test('tx() settles once its commit is on disk, and runs its after-commit hooks then; a refusal waits for what it read', async () => {
  const { store, done } = await tempStore('store');
  try {
    let hooked = false;
    const id = await store.tx(async (tx) => {
      tx.afterCommit(() => (hooked = true));
      return (await tx.run(`INSERT INTO t (v) VALUES ('x')`)).lastInsertRowid;
    });
    assert.equal(id, 1);
    assert.equal(hooked, true, 'the hooks ran before the promise settled');
    assert.equal(behind(store), false, 'durable when tx() settles');
    const write = store.write((tx) => tx.run(`INSERT INTO t (v) VALUES ('y')`));
    await new Promise((r) => setImmediate(r));
    assert.ok(behind(store), 'the group commit is being synced');
    await assert.rejects(
      store.tx(async (tx) => {
        if ((await tx.get('SELECT v FROM t WHERE v = ?', 'y')) !== undefined) throw new Error('seen y');
      }),
      /seen y/,
    );
    assert.equal(behind(store), false, 'the refusal, resting on the unsynced commit, came once it was on disk');
    await write;
  } finally {
    await store.close();
    done();
  }
});

test('a body that throws rolls back alone and its promise rejects after the group is durable; the others commit', async () => {
  const { store, path, done } = await tempStore('store');
  try {
    const results = await Promise.allSettled([
      store.write((tx) => tx.run(`INSERT INTO t (v) VALUES ('ok1')`)),
      store.write(async (tx) => {
        await tx.run(`INSERT INTO t (v) VALUES ('rolled back')`);
        throw new Error('refused');
      }),
      store.write((tx) => tx.run(`INSERT INTO t (v) VALUES ('ok2')`)),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    const other = new Database(path, { readonly: true });
    try {
      assert.deepEqual(other.prepare('SELECT v FROM t ORDER BY id').pluck().all(), ['ok1', 'ok2']);
    } finally {
      other.close();
    }
  } finally {
    await store.close();
    done();
  }
});

test('close() while a sync is on the thread pool settles every write and leaves the data on the file', async () => {
  const { store, path, done } = await tempStore('store');
  try {
    const writes = Array.from({ length: 50 }, (_, i) => store.write((tx) => tx.run('INSERT INTO t (v) VALUES (?)', `row ${i}`)));
    await new Promise((r) => setImmediate(r));
    // More bodies queue while the first group's sync runs; close() commits and syncs them at once.
    for (let i = 50; i < 60; i++) writes.push(store.write((tx) => tx.run('INSERT INTO t (v) VALUES (?)', `row ${i}`)));
    const closing = store.close();
    const settled = await Promise.allSettled(writes);
    await closing;
    assert.equal(settled.filter((r) => r.status === 'fulfilled').length, 60);
    await new Promise((r) => setTimeout(r, 20));
    const again = new Database(path, { readonly: true });
    try {
      assert.equal(again.prepare('SELECT count(*) FROM t').pluck().get(), 60);
    } finally {
      again.close();
    }
  } finally {
    done();
  }
});

test('the checkpoint thread keeps the WAL short under steady group commits', async () => {
  const { store, path, done } = await tempStore('store');
  try {
    const blob = 'x'.repeat(3000);
    // Three times the catch-up mark through the WAL (a page or more per row).
    const mark = CATCH_UP_FRAMES * 4096;
    const rounds = Math.ceil((3 * mark) / (50 * 4096));
    for (let round = 0; round < rounds; round++) {
      const group: Array<Promise<unknown>> = [];
      for (let i = 0; i < 50; i++) group.push(store.write((tx) => tx.run('INSERT INTO t (v) VALUES (?)', blob)));
      await Promise.all(group);
    }
    const wal = statSync(path + '-wal').size;
    assert.ok(wal < mark + 16 * 1024 * 1024, `WAL is ${(wal / 1048576).toFixed(1)} MiB`);
    // Had the thread failed, the writer would have gone back to checkpointing inline (wal_autocheckpoint 1000).
    assert.equal(store.sqliteHandle.pragma('wal_autocheckpoint', { simple: true }), 0, 'the checkpoint thread kept working');
    assert.equal((await store.get<{ n: number }>('SELECT count(*) AS n FROM t'))?.n, rounds * 50);
  } finally {
    await store.close();
    done();
  }
});

test('a store left to SQLite (the admin commands) keeps synchronous=FULL and settles at commit', async () => {
  const { store, done } = await tempStore('sqlite');
  try {
    assert.equal(store.sqliteHandle.pragma('synchronous', { simple: true }), 2, 'FULL');
    await store.write((tx) => tx.run(`INSERT INTO t (v) VALUES ('a')`));
    assert.equal(behind(store), false);
  } finally {
    await store.close();
    done();
  }
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../src/platform/storage/sqlite/store';
import { TX_ENDED, type Store, type Tx } from '../../src/platform/storage/store';
import { AWAITED_OUTSIDE } from '../../src/platform/storage/sqlite/store';
import { openDatabase } from '../../src/platform/storage/sqlite/open';

async function tempStore(): Promise<{ store: Store; path: string; done: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-async-tx-'));
  const path = join(dir, 'kopek.db');
  const store = new SqliteStore(openDatabase(path), { sync: 'store' });
  await store.tx((tx) => tx.run('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)'));
  return {
    store,
    path,
    done: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const values = async (store: Store): Promise<string[]> => (await store.all<{ v: string }>('SELECT v FROM t ORDER BY id')).map((r) => r.v);

test('a body that awaits a timer is rolled back with a loud error, and the other bodies of its group commit', async () => {
  const { store, done } = await tempStore();
  try {
    const results = await Promise.allSettled([
      store.write((tx) => tx.run(`INSERT INTO t (v) VALUES ('before')`)),
      store.write(async (tx) => {
        await tx.run(`INSERT INTO t (v) VALUES ('held')`);
        await new Promise((r) => setTimeout(r, 30));
        await tx.run(`INSERT INTO t (v) VALUES ('after the timer')`);
      }),
      store.write((tx) => tx.run(`INSERT INTO t (v) VALUES ('after')`)),
    ]);
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
    assert.equal(((results[1] as PromiseRejectedResult).reason as Error).message, AWAITED_OUTSIDE);
    // The body goes on after its timer; its Tx refuses the call, and nothing of it is written.
    await new Promise((r) => setTimeout(r, 60));
    assert.deepEqual(await values(store), ['before', 'after']);
  } finally {
    await done();
  }
});

test('a body that reads through the store instead of its Tx is failed, not left waiting for itself', async () => {
  const { store, done } = await tempStore();
  try {
    await assert.rejects(
      store.tx(async (tx) => {
        await tx.run(`INSERT INTO t (v) VALUES ('x')`);
        await store.get('SELECT count(*) AS n FROM t');
      }),
      { message: AWAITED_OUTSIDE },
    );
    assert.deepEqual(await values(store), []);
  } finally {
    await done();
  }
});

test('a call on a Tx that was not awaited inside its body is refused once the body ended', async () => {
  const { store, done } = await tempStore();
  try {
    let kept: Tx | null = null;
    await store.write(async (tx) => {
      kept = tx;
      await tx.run(`INSERT INTO t (v) VALUES ('in')`);
    });
    await assert.rejects(kept!.run(`INSERT INTO t (v) VALUES ('late')`), { message: TX_ENDED });
    assert.deepEqual(await values(store), ['in']);
  } finally {
    await done();
  }
});

test('a read outside a transaction never sees rows another body has not committed', async () => {
  const { store, path, done } = await tempStore();
  try {
    let seen: string[] | null = null;
    const body = store.tx(async (tx) => {
      await tx.run(`INSERT INTO t (v) VALUES ('uncommitted')`);
      // While this body is stalled (and about to be failed), a request reads through the store.
      setImmediate(() => void values(store).then((v) => (seen = v)));
      await new Promise((r) => setTimeout(r, 20));
    });
    await assert.rejects(body, { message: AWAITED_OUTSIDE });
    await new Promise((r) => setTimeout(r, 40));
    assert.deepEqual(seen, [], 'the read waited for the transaction and saw nothing of it');
    const other = new Database(path, { readonly: true });
    try {
      assert.equal((other.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n, 0);
    } finally {
      other.close();
    }
  } finally {
    await done();
  }
});

test('a savepoint rolls back only its own writes, and the body goes on', async () => {
  const { store, done } = await tempStore();
  try {
    const r = await store.tx(async (tx) => {
      await tx.run(`INSERT INTO t (v) VALUES ('outer')`);
      await assert.rejects(
        tx.savepoint(async (sp) => {
          await sp.run(`INSERT INTO t (v) VALUES ('inner')`);
          throw new Error('inner failed');
        }),
        { message: 'inner failed' },
      );
      return tx.savepoint(async (sp) => (await sp.run(`INSERT INTO t (v) VALUES ('second')`)).lastInsertRowid);
    });
    assert.equal(r, 2);
    assert.deepEqual(await values(store), ['outer', 'second']);
  } finally {
    await done();
  }
});

test('transactions started together run one after another, in order', async () => {
  const { store, done } = await tempStore();
  try {
    const order: string[] = [];
    await Promise.all(
      ['a', 'b', 'c'].map((v) =>
        store.tx(async (tx) => {
          order.push(`${v} begins`);
          await tx.run('INSERT INTO t (v) VALUES (?)', v);
          order.push(`${v} ends`);
        }),
      ),
    );
    assert.deepEqual(order, ['a begins', 'a ends', 'b begins', 'b ends', 'c begins', 'c ends']);
    assert.deepEqual(await values(store), ['a', 'b', 'c']);
  } finally {
    await done();
  }
});

test('a snapshot reads one consistent state and does not hold up another connection\'s writer', async () => {
  const { store, path, done } = await tempStore();
  const other = new Database(path);
  try {
    await store.tx((tx) => tx.run(`INSERT INTO t (v) VALUES ('a')`));
    other.pragma('busy_timeout = 0');
    const seen = await store.snapshot(async (q) => {
      const first = (await q.all<{ v: string }>('SELECT v FROM t ORDER BY id')).map((r) => r.v);
      // Another process commits while the snapshot is open: its write lock is free, and the snapshot does not see it.
      other.prepare(`INSERT INTO t (v) VALUES ('b')`).run();
      const second = (await q.all<{ v: string }>('SELECT v FROM t ORDER BY id')).map((r) => r.v);
      return { first, second };
    });
    assert.deepEqual(seen, { first: ['a'], second: ['a'] });
    assert.deepEqual(await values(store), ['a', 'b'], 'the commit is there once the snapshot ended');
  } finally {
    other.close();
    await done();
  }
});

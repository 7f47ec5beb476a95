import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, writeFileSync, unlinkSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { startTestServer } from '../helpers/server';
import { mountTmpfs } from '../helpers/tmpfs';
import { sqliteOnly } from '../helpers/pg';

test('disk full during a group commit crashes nothing: the group is answered 503, /healthz says so, and writes resume when space returns', { skip: sqliteOnly('a full disk under the SQLite file (PostgreSQL away is tested in test/cluster)') }, async (t) => {
  const d = mountTmpfs(24);
  if (typeof d === 'string') return void t.skip(d);
  const filler = join(d.dir, 'filler');
  // Room to give back later: 6 MiB of the 24.
  writeFileSync(filler, Buffer.alloc(6 * 1024 * 1024, 1));
  const s = await startTestServer({}, { dir: d.dir });
  try {
    const metadata = { blob: 'x'.repeat(900 * 1024) };
    const seen = new Map<number, number>();
    let refused: Awaited<ReturnType<typeof s.request>> | null = null;
    // 48 clients at a time, each creating a payment of ~900 KB: the disk fills within a few rounds.
    for (let round = 0; round < 20 && !refused; round++) {
      const rs = await Promise.all(Array.from({ length: 48 }, () => s.request('POST', '/v1/public/payments', { body: { amount: 10_000, metadata } })));
      for (const r of rs) {
        seen.set(r.status, (seen.get(r.status) ?? 0) + 1);
        if (r.status === 503) refused ??= r;
      }
    }
    assert.ok(refused, `the disk never filled: ${JSON.stringify([...seen])}`);
    assert.deepEqual([...seen.keys()].filter((st) => st !== 201 && st !== 503), [], `only 201 and 503: ${JSON.stringify([...seen])}`);
    assert.equal(refused!.body.error.code, 'unavailable');
    assert.equal(refused!.headers['retry-after'], '1');
    // The process is alive and says what is wrong.
    const sick = await s.request('GET', '/healthz', { key: null });
    assert.equal(sick.status, 503);
    assert.match(sick.body.error.message, /SQLITE_FULL|SQLITE_IOERR/);
    // Space returns: writes and health come back without a restart.
    unlinkSync(filler);
    const after = await s.request('POST', '/v1/public/payments', { body: { amount: 10_000 } });
    assert.equal(after.status, 201, after.text);
    assert.equal((await s.request('GET', '/healthz', { key: null })).status, 200);
    assert.equal((await s.request('GET', `/v1/public/payments/${after.body.payment.id}`)).status, 200);
  } finally {
    await s.close().catch(() => {});
    d.remove();
  }
});

test('a shutdown on a full disk still closes: the last key-use flush is refused, the server lock is released, and the next server starts', { skip: sqliteOnly('a full disk under the SQLite file') }, async (t) => {
  const d = mountTmpfs(16);
  if (typeof d === 'string') return void t.skip(d);
  const s = await startTestServer({}, { dir: d.dir });
  try {
    // A request notes its key's use; that note is written only by the flush at shutdown.
    assert.equal((await s.request('POST', '/v1/public/payments', { body: { amount: 10_000 } })).status, 201);
    // Fill every byte that is left, then close: the flush's commit has no room.
    const filler = join(d.dir, 'filler');
    writeFileSync(filler, Buffer.alloc(0));
    for (let i = 0; ; i++) {
      try {
        appendFileSync(filler, Buffer.alloc(i < 64 ? 256 * 1024 : 4096, 1));
      } catch {
        break;
      }
    }
    const closed = await Promise.race([s.close().then(() => 'closed', (e: Error) => `refused: ${e.message}`), sleep(10_000, 'still closing')]);
    assert.notEqual(closed, 'still closing');
    unlinkSync(filler);
    // The same file opens in a new server: the first one let go of its lock.
    await s.restart();
    assert.equal((await s.request('GET', '/healthz', { key: null })).status, 200);
  } finally {
    await s.close().catch(() => {});
    d.remove();
  }
});

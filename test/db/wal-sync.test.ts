import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/platform/storage/sqlite/open';
import { SqliteStore } from '../../src/platform/storage/sqlite/store';
import { createLogger } from '../../src/platform/log';

const ROOT = join(__dirname, '..', '..');

/**
 * Run the WAL sync (wal.ts) in a child process over a descriptor whose sync fails (a pipe: EINVAL, as a disk that
 * cannot sync would), logging through the app's logger to stdout.
 */
function failingSync(call: 'committed' | 'syncNow'): { status: number | null; stdout: string; stderr: string } {
  const code = `
    const { Durability } = require(${JSON.stringify(join(ROOT, 'src', 'platform', 'storage', 'sqlite', 'wal.ts'))});
    const { createLogger } = require(${JSON.stringify(join(ROOT, 'src', 'platform', 'log.ts'))});
    const sync = new Durability(createLogger('info'), 0);
    const synced = () => process.stdout.write('synced\\n');
    sync.committed()?.then(synced, synced);
    if ('${call}' === 'syncNow') sync.syncNow();
    setTimeout(() => process.stdout.write('still running\\n'), 2000);`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', code], { cwd: ROOT, input: '', encoding: 'utf8', timeout: 20_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

for (const call of ['committed', 'syncNow'] as const) {
  test(`a failed WAL sync (${call}) stops the process with exit 70 and says why through the logger`, () => {
    const r = failingSync(call);
    assert.equal(r.status, 70, `stdout: ${r.stdout}\nstderr: ${r.stderr}`);
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines.length, 1, 'nothing marked durable, nothing after the failure');
    const entry = JSON.parse(lines[0]) as Record<string, unknown>;
    assert.equal(entry.level, 'error');
    assert.equal(entry.msg, 'cannot sync the database WAL; stopping');
    assert.match(String(entry.error), /EINVAL/);
    assert.equal(typeof entry.time, 'string', 'a line of the app logger');
    assert.doesNotMatch(r.stderr, /cannot sync/, 'not written beside the logger');
  });
}

test('a store reports a failed after-commit action through its logger and keeps the commit', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-store-'));
  const lines: string[] = [];
  const store = new SqliteStore(openDatabase(join(dir, 'kopek.db')), { sync: 'store', log: createLogger('info', (l) => lines.push(l)) });
  try {
    await store.tx((tx) => tx.run('CREATE TABLE t (v TEXT NOT NULL)'));
    await store.write(async (tx) => {
      await tx.run(`INSERT INTO t (v) VALUES ('kept')`);
      tx.afterCommit(() => {
        throw new Error('push failed');
      });
    });
    assert.equal((await store.get<{ n: number }>('SELECT count(*) AS n FROM t'))?.n, 1);
    const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(
      entries.map((e) => [e.level, e.msg, e.error]),
      [['error', 'after-commit action failed', 'Error: push failed']],
    );
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

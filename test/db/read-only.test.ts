import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startApp } from '../../src/app';
import { defaultConfig } from '../../src/platform/config';
import { createLogger } from '../../src/platform/log';
import { openDatabase } from '../../src/platform/storage/sqlite/open';
import { SqliteStore } from '../../src/platform/storage/sqlite/store';
import { createDemo } from '../../src/money/shops/store';
import { runCli } from '../helpers/cli';
import { mountTmpfs } from '../helpers/tmpfs';

test('a read-only database starts no server (every write would fail); doctor names it a permission problem, not damage', async (t) => {
  const fs = mountTmpfs(16);
  if (typeof fs === 'string') return void t.skip(fs);
  const dir = fs.dir;
  try {
    const db = join(dir, 'k.db');
    const setup = new SqliteStore(openDatabase(db));
    await createDemo(setup, Date.now());
    setup.sqliteHandle.pragma('wal_checkpoint(TRUNCATE)');
    await setup.close();
    fs.remount('ro');
    await assert.rejects(
      startApp({ ...defaultConfig(), port: 0, db, demo: false }, { log: createLogger('silent') }),
      (err: Error) => {
        assert.match(err.message, /^cannot start on ".*k\.db": the database (file|folder) ".*" is not writable \(EROFS: it is on a read-only file system\)/);
        return true;
      },
    );
    const doc = await runCli(['doctor', '--db', db, '--json']);
    assert.equal(doc.code, 1);
    const perm = doc.json.findings.find((f: { check: string }) => f.check === 'permissions');
    assert.ok(perm && !perm.ok, doc.out);
    assert.match(perm.action, /writable/);
    assert.doesNotMatch(doc.out, /restore the latest backup/, 'a permission problem is not advised as damage');
  } finally {
    fs.remove();
  }
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp } from '../../src/app';
import { defaultConfig } from '../../src/config';
import { createLogger } from '../../src/log';
import { openDatabase } from '../../src/db/open';
import { Store } from '../../src/db/store';
import { createDemo } from '../../src/cabinet/store';
import { runCli } from '../helpers/cli';

const root = process.getuid?.() === 0 ? false : 'needs root to mount a tmpfs and remount it read-only';

test('a read-only database starts no server (every write would fail); doctor names it a permission problem, not damage', { skip: root }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-ro-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m,mode=0700', 'tmpfs', dir]);
  try {
    const db = join(dir, 'k.db');
    const setup = new Store(openDatabase(db));
    createDemo(setup, Date.now());
    setup.db.pragma('wal_checkpoint(TRUNCATE)');
    setup.db.close();
    execFileSync('mount', ['-o', 'remount,ro', dir]);
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
    execFileSync('umount', ['-l', dir]);
    rmSync(dir, { recursive: true, force: true });
  }
});

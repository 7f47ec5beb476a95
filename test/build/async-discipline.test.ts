import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

// The type checker sees what a run of the tests may not: a promise a transaction body forgot to await runs its
// statement after the body ended, outside the transaction; a file outside the engine that reaches SQLite
// itself bypasses the storage interface. scripts/check-async.ts fails on either, and on any type error.
test('the program type-checks, leaves no promise floating, and only the engine reaches SQLite', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'check-async.ts')], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  assert.match(r.stdout, /check-async: ok/);
});

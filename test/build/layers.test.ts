import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

// docs/architecture.md draws src/ as layers: a folder that imports one above it (even a type) ties the two
// together, so neither can change or be tested alone, and an import circle between files makes their
// start-up order depend on who is imported first. scripts/check-layers.ts fails on either, and on files and
// functions past their size limits.
test('the folders of src/ form layers with no import circle; files and functions stay within their limits', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'check-layers.ts')], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  assert.match(r.stdout, /check-layers: ok/);
});

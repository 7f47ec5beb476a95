import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'kopek-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Run the real command line in its own process (slow on a busy machine: only for what needs a real exit code). */
function kopek(...argv: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'main.ts'), ...argv], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

test('the process exits 0 with JSON on stdout on success, and 1 with one stderr line on failure', () => {
  const db = join(dir, 'k.db');
  const ok = kopek('demo', '--json', '--db', db);
  assert.equal(ok.code, 0, ok.err);
  assert.match(JSON.parse(ok.out).key, /^sk_test_/);
  const bad = kopek('key', 'revoke', 'no-such-key', '--db', db);
  assert.equal(bad.code, 1);
  assert.equal(bad.out, '');
  assert.equal(bad.err, 'kopek key: cannot revoke key "no-such-key": not found; give its id, the key itself, or the prefix kopek key list shows\n');
});

test('a bad serve option exits 1 with one line, before opening anything', () => {
  const r = kopek('serve', '--port', 'eighty', '--db', join(dir, 'never.db'));
  assert.equal(r.code, 1);
  assert.equal(r.err, 'kopek serve: --port must be a whole number, got "eighty"\n');
  assert.equal(existsSync(join(dir, 'never.db')), false);
});

test('--version and -v name kopek and the Node.js it runs on, and exit 0', () => {
  const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  for (const flag of ['--version', '-v']) {
    const r = kopek(flag);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, `kopek ${version} (node ${process.version})\n`);
    assert.equal(r.err, '');
  }
});

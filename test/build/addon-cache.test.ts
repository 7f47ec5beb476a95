import { existsSync } from 'node:fs';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { ADDON_ASSET, cacheRoots, loadAddon, unpackAddon } from '../../src/sea';

// The executable unpacks exactly these bytes: the addon npm ci built for this Node.
const addonPath = join(
  dirname(createRequire(__filename).resolve('better-sqlite3/package.json')),
  'build',
  'Release',
  'better_sqlite3.node',
);
const addonBytes = readFileSync(addonPath);

function tempRoot(): string {
  return mkdtempSync(join(tmpdir(), 'kopek-addon-test-'));
}

test('the unpacked addon loads and better-sqlite3 runs on it', (t) => {
  const base = tempRoot();
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const addon = loadAddon(unpackAddon(addonBytes, [join(base, 'cache', 'kopek')]));
  const db = new Database(':memory:', { nativeBinding: addon } as Database.Options);
  assert.equal((db.prepare('select 40 + 2 as n').get() as { n: number }).n, 42);
  db.close();
  const [hashDir] = readdirSync(join(base, 'cache', 'kopek'));
  assert.match(hashDir, /^[0-9a-f]{64}$/);
  assert.equal(statSync(join(base, 'cache', 'kopek')).mode & 0o777, 0o700);
});

test('a second start reuses the unpacked file; an altered copy is replaced, never loaded', (t) => {
  const base = tempRoot();
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const roots = [join(base, 'kopek')];
  const file = unpackAddon(addonBytes, roots);
  const firstWrite = statSync(file).mtimeMs;
  assert.equal(unpackAddon(addonBytes, roots), file);
  assert.equal(statSync(file).mtimeMs, firstWrite);

  chmodSync(file, 0o600);
  writeFileSync(file, 'not a shared library');
  assert.equal(unpackAddon(addonBytes, roots), file);
  assert.ok(readFileSync(file).equals(addonBytes));
});

test('a cache root others can write into is skipped for the next one', (t) => {
  const base = tempRoot();
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const shared = join(base, 'shared');
  mkdirSync(shared, { mode: 0o777 });
  chmodSync(shared, 0o777);
  const own = join(base, 'own');
  const file = unpackAddon(addonBytes, [shared, own]);
  assert.ok(file.startsWith(own + '/'), `expected the addon under "${own}", got "${file}"`);
});

test('when no cache root can be used, the error names every place tried', (t) => {
  const base = tempRoot();
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const notADir = join(base, 'file');
  writeFileSync(notADir, '');
  assert.throws(
    () => unpackAddon(addonBytes, [join(notADir, 'a'), join(notADir, 'b')]),
    (err: Error) =>
      err.message.startsWith('cannot unpack the SQLite addon: ') &&
      err.message.includes(join(notADir, 'a')) &&
      err.message.includes(join(notADir, 'b')),
  );
});

test('cache roots follow KOPEK_CACHE_DIR, XDG_CACHE_HOME, then HOME, then per-user folders in the temp folder and /dev/shm', () => {
  const roots = cacheRoots({ KOPEK_CACHE_DIR: '/srv/kopek-cache', XDG_CACHE_HOME: '/x/cache', HOME: '/home/u' });
  assert.deepEqual(roots.slice(0, 3), ['/srv/kopek-cache', '/x/cache/kopek', '/home/u/.cache/kopek']);
  assert.equal(roots[3], join(tmpdir(), `kopek-${process.getuid!()}`));
  if (existsSync('/dev/shm')) assert.equal(roots[4], `/dev/shm/kopek-${process.getuid!()}`);
  assert.deepEqual(cacheRoots({ HOME: '/home/u' }).slice(0, 1), ['/home/u/.cache/kopek']);
  assert.equal(ADDON_ASSET, 'better_sqlite3.node');
});

test('a read-only root file system: the unpack falls back past every folder it cannot write, and says how to choose one when none is left', (t) => {
  const base = tempRoot();
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const notADir = join(base, 'ro');
  writeFileSync(notADir, '');
  const writable = join(base, 'shm', 'kopek');
  const file = unpackAddon(addonBytes, [join(notADir, 'cache'), join(notADir, 'home'), writable]);
  assert.ok(file.startsWith(writable));
  assert.throws(() => unpackAddon(addonBytes, [join(notADir, 'x')]), /set KOPEK_CACHE_DIR to a writable folder/);
});

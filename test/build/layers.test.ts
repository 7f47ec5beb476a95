import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';

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

// The checker itself: a tree that breaks each rule once is refused, each break named where it is.
test('check-layers names an import up a layer, an import circle, and a file and a function past their limits', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-layers-'));
  try {
    const src = join(dir, 'src');
    for (const f of ['db', 'payments', 'util']) mkdirSync(join(src, f), { recursive: true });
    writeFileSync(join(src, 'db', 'up.ts'), "import { b } from '../payments/b';\nexport const up = b;\n");
    writeFileSync(join(src, 'payments', 'b.ts'), 'export const b = 1;\n');
    writeFileSync(join(src, 'util', 'c.ts'), "import { d } from './d';\nexport const c = () => d;\n");
    writeFileSync(join(src, 'util', 'd.ts'), "import type { c } from './c';\nexport const d = 1;\nexport type C = typeof c;\n");
    writeFileSync(join(src, 'util', 'long.ts'), `export function long(): number {\n${'  void 0;\n'.repeat(90)}  return 1;\n}\n`);
    writeFileSync(join(src, 'util', 'big.ts'), 'export const x = 1;\n'.repeat(360));
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'check-layers.ts'), '--src', src], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /src\/db\/up\.ts:1: db\/ imports src\/payments\/b\.ts, which is in a layer above/);
    assert.match(r.stdout, /import circle: src\/util\/c\.ts ⇄ src\/util\/d\.ts/);
    assert.match(r.stdout, /src\/util\/long\.ts:1: function long has 93 lines; the limit is 80/);
    assert.match(r.stdout, /src\/util\/big\.ts:1: 360 lines; the limit is 350/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

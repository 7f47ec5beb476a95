import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';

const ROOT = join(__dirname, '..', '..');

// docs/architecture.md draws src/ as tiers: a file that imports a tier above its own (even a type) ties the two
// together, so neither can change or be tested alone; two folders of one tier that import each other round a
// circle are one unit in two places; and an import circle between files makes their start-up order depend on
// who is imported first. scripts/check-layers.ts fails on each, and on files and functions past their size limits.
test('the folders of src/ form tiers with no folder or import circle; files and functions stay within their limits', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'check-layers.ts')], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  assert.match(r.stdout, /check-layers: ok/);
});

// The checker itself: a tree that breaks each rule once is refused, each break named where it is, and the
// imports the rules allow (down a tier, between two folders of a tier one way) are not named.
test('check-layers names an import up a tier, a folder circle in a tier, an import circle, an unknown tier, and a file and a function past their limits', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-layers-'));
  try {
    const src = join(dir, 'src');
    for (const f of ['platform/util', 'money/pay', 'money/ref', 'money/books', 'extra']) mkdirSync(join(src, f), { recursive: true });
    const put = (path: string, text: string): void => writeFileSync(join(src, path), text);
    // up a tier: platform is the lowest
    put('platform/up.ts', "import { b } from '../money/books/b';\nexport const up = b;\n");
    // down a tier, and one way between two folders of a tier: allowed
    put('money/books/b.ts', "import { d } from '../../platform/util/d';\nexport const b = d;\n");
    put('money/pay/down.ts', "import { b } from '../books/b';\nexport const down = b;\n");
    // a folder circle without a file circle: pay/a → ref/r → pay/p
    put('money/pay/a.ts', "import { r } from '../ref/r';\nexport const a = r;\n");
    put('money/ref/r.ts', "import { p } from '../pay/p';\nexport const r = p;\n");
    put('money/pay/p.ts', 'export const p = 1;\n');
    // a file circle
    put('platform/util/c.ts', "import { d } from './d';\nexport const c = () => d;\n");
    put('platform/util/d.ts', "import type { c } from './c';\nexport const d = 1;\nexport type C = typeof c;\n");
    put('platform/util/long.ts', `export function long(): number {\n${'  void 0;\n'.repeat(90)}  return 1;\n}\n`);
    put('platform/util/big.ts', 'export const x = 1;\n'.repeat(510));
    put('extra/x.ts', 'export const x = 1;\n');
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'check-layers.ts'), '--src', src], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /src\/platform\/up\.ts:1: platform\/ imports src\/money\/books\/b\.ts, which is in a tier above/);
    assert.match(r.stdout, /src\/money\/pay\/a\.ts:1: folder circle in money\/: money\/pay ⇄ money\/ref/);
    assert.match(r.stdout, /import circle: src\/platform\/util\/c\.ts ⇄ src\/platform\/util\/d\.ts/);
    assert.match(r.stdout, /src\/extra\/x\.ts:1: folder "extra" is no tier/);
    assert.match(r.stdout, /src\/platform\/util\/long\.ts:1: function long has 93 lines; the limit is 80/);
    assert.match(r.stdout, /src\/platform\/util\/big\.ts:1: 510 lines; the limit is 500/);
    assert.doesNotMatch(r.stdout, /money\/books\/b\.ts:1|money\/pay\/down\.ts/);
    assert.match(r.stdout, /check-layers: 6 finding\(s\)/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

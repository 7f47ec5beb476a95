import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { optionsMarkdown, OPTIONS } from '../../src/platform/config';

const ROOT = join(__dirname, '..', '..');

for (const doc of ['docs/api-basics.md', 'README.md']) {
  test(`the configuration table in ${doc} is the one src/platform/config.ts generates`, () => {
    const text = readFileSync(join(ROOT, doc), 'utf8');
    const m = /<!-- options:begin[^>]*-->\n([\s\S]*?)\n<!-- options:end -->/.exec(text);
    assert.ok(m, `${doc} has no options:begin/options:end markers`);
    assert.equal(m[1], optionsMarkdown(), `the table is out of date; replace it with:\n${optionsMarkdown()}`);
  });
}

test('every option has a flag and a KOPEK_ variable named after it', () => {
  for (const o of OPTIONS) {
    assert.match(o.flag, /^--[a-z][a-z0-9-]*$/);
    assert.equal(o.env, 'KOPEK_' + o.flag.slice(2).toUpperCase().replace(/-/g, '_'));
  }
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// docs/testing.md shows commands to paste and pieces of the examples; these keep them true to each other.

const ROOT = join(__dirname, '..');
const DOC = readFileSync(join(ROOT, 'docs', 'testing.md'), 'utf8');

/** The ```LANG blocks of a section, from its heading to the next heading of that level. */
function blocks(section: string, lang: string): string[] {
  const at = DOC.indexOf(section);
  assert.ok(at >= 0, `docs/testing.md has no "${section}"`);
  const rest = DOC.slice(at + section.length);
  const end = rest.search(/^## /m);
  const body = end < 0 ? rest : rest.slice(0, end);
  return [...body.matchAll(new RegExp('^```' + lang + '\\n([\\s\\S]*?)^```$', 'gm'))].map((m) => m[1]);
}

test("the three-terminal flow runs its server beside npm start's (it started on :8080 too), on one port throughout", () => {
  const text = blocks('## Webhooks on your machine', 'sh').join('\n');
  const serve = /kopek serve .*--port (\d+)/.exec(text);
  assert.ok(serve, 'terminal 1 names its port');
  const port = serve[1];
  assert.notEqual(port, '8080', "npm start's server is on 8080");
  const urls = [...text.matchAll(/http:\/\/127\.0\.0\.1:(\d+)/g)].map((m) => m[1]).filter((p) => p !== '3000');
  assert.ok(urls.length >= 3, text);
  assert.deepEqual([...new Set(urls)], [port], 'every address of the server is that port');
  for (const terminal of ['# 2:', '# 3:']) {
    const line = text.split('\n').find((l) => l.includes(terminal));
    assert.match(line ?? '', new RegExp(`KOPEK_URL=http://127\\.0\\.0\\.1:${port}\\b`), `terminal ${terminal} points listen and trigger at it`);
  }
});

test("the Python pieces docs/testing.md shows are lines of examples/python/test_payment.py as they are", () => {
  const file = readFileSync(join(ROOT, 'examples', 'python', 'test_payment.py'), 'utf8').split('\n');
  const shown = blocks('## Integration tests in CI', 'python');
  assert.ok(shown.length >= 3, 'the fixture, the signature check and the test');
  for (const block of shown) {
    for (const line of block.split('\n').filter((l) => l.trim() !== '')) assert.ok(file.includes(line), `not in the example: ${line}`);
  }
  assert.ok(shown.join('\n').includes('"--webhook-url", receiver'), 'the server is started with the receiver as its webhook URL');
});

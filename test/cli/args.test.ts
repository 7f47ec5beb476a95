import { test } from 'node:test';
import assert from 'node:assert/strict';
import { flagValues, parseArgs } from '../../src/platform/args';

const parsed = (argv: string[], switches?: string[]) => {
  const a = parseArgs(argv, switches);
  return { positional: a.positional, flags: Object.fromEntries(a.flags) };
};

test('positionals, --flag value, --flag=value, switches and -h, in any order', () => {
  assert.deepEqual(parsed(['key', '--shop', 's1', 'create', '--mode=test', '--json', '-h']), {
    positional: ['key', 'create'],
    flags: { shop: 's1', mode: 'test', json: true, help: true },
  });
  assert.deepEqual(parsed(['backup', 'out.db', '--force'], ['json', 'help', 'force']), { positional: ['backup', 'out.db'], flags: { force: true } });
});

test('a value may start with one dash, and words after -- are positionals', () => {
  assert.deepEqual(parsed(['jobs', '--limit', '-5']), { positional: ['jobs'], flags: { limit: '-5' } });
  assert.deepEqual(parsed(['webhook', '--', '--not-a-flag']), { positional: ['webhook', '--not-a-flag'], flags: {} });
});

test('a flag without its value, a switch with one and an unknown short option are refused in kopek words', () => {
  assert.throws(() => parseArgs(['key', 'create', '--shop']), /^Error: option --shop needs a value$/);
  assert.throws(() => parseArgs(['key', 'create', '--shop', '--mode', 'test']), /^Error: option --shop needs a value$/);
  assert.throws(() => parseArgs(['demo', '--json=yes']), /^Error: option --json takes no value$/);
  assert.throws(() => parseArgs(['demo', '-x']), /^Error: unknown option -x$/);
});

test('a flag given more than once keeps every value in order (flagValues), and its last in flags', () => {
  const a = parseArgs(['trigger', 'payment.succeeded', '--set', 'amount=1', '--set=metadata.k=a=b', '--set', '-2']);
  assert.deepEqual(flagValues(a, 'set'), ['amount=1', 'metadata.k=a=b', '-2']);
  assert.equal(a.flags.get('set'), '-2');
  assert.deepEqual(flagValues(a, 'json'), []);
});

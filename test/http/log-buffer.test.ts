import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bufferedStdout, createLogger } from '../../src/platform/log';

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('the log lines of one event-loop turn go out in one write, in order, at the end of the turn', async () => {
  const writes: string[] = [];
  const out = bufferedStdout({ write: (t: string) => writes.push(t) });
  const log = createLogger('info', out.write);
  log.info('request', { n: 1 });
  log.debug('dropped');
  log.info('request', { n: 2 });
  log.warn('slow', { n: 3 });
  assert.equal(writes.length, 0, 'nothing is written inside the turn');
  await turn();
  assert.equal(writes.length, 1);
  const lines = writes[0].split('\n').filter(Boolean).map((l) => JSON.parse(l));
  assert.deepEqual(
    lines.map((l) => [l.level, l.msg, l.n]),
    [
      ['info', 'request', 1],
      ['info', 'request', 2],
      ['warn', 'slow', 3],
    ],
  );
  log.info('later');
  await turn();
  assert.equal(writes.length, 2, 'the next turn is its own write');
});

test('64 KiB held is written at once, and flush() empties the buffer', async () => {
  const writes: string[] = [];
  const out = bufferedStdout({ write: (t: string) => writes.push(t) });
  const line = JSON.stringify({ pad: 'x'.repeat(1000) }) + '\n';
  for (let i = 0; i < 70; i++) out.write(line);
  assert.equal(writes.length, 1, 'the 64 KiB mark forced one write within the turn');
  assert.ok(writes[0].length >= 64 * 1024);
  out.flush();
  assert.equal(writes.length, 2);
  assert.equal(writes.join(''), line.repeat(70));
  await turn();
  assert.equal(writes.length, 2, 'nothing is left for the end of the turn');
});

test('a line keeps time, level and msg first; a field of the same name still wins', () => {
  const lines: string[] = [];
  const log = createLogger('debug', (l) => lines.push(l));
  log.info('request', { request_id: 'r1', status: 200, skipped: undefined });
  log.error('boom', { level: 'custom' });
  log.warn('bare');
  const [a, b, c] = lines.map((l) => JSON.parse(l));
  assert.deepEqual(Object.keys(a), ['time', 'level', 'msg', 'request_id', 'status']);
  assert.match(a.time, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  assert.equal(b.level, 'custom');
  assert.deepEqual(Object.keys(c), ['time', 'level', 'msg']);
  assert.ok(lines.every((l) => l.endsWith('}\n') && !l.slice(0, -1).includes('\n')));
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { rawConnect } from '../helpers/raw-http';
import { waitForLog } from '../helpers/logs';

// Small limits so a slow client is cut off in well under a second.
let s: TestServer;
before(async () => {
  s = await startTestServer({ headersTimeoutMs: 300, requestTimeoutMs: 600 });
});
after(() => s.close());

/** Write `piece` every `every_ms` until the connection closes. */
function trickle(c: { write(d: string): void; closed: Promise<number> }, piece: string, every_ms: number): void {
  const timer = setInterval(() => c.write(piece), every_ms);
  void c.closed.then(() => clearInterval(timer));
}

test('a client sending its headers too slowly gets 408 and is disconnected', async () => {
  const c = await rawConnect(s.url);
  c.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
  trickle(c, 'X-Slow: 1\r\n', 50);
  const r = await c.response();
  assert.equal(r.status, 408);
  assert.equal(r.body.error.code, 'request_timeout');
  assert.ok(r.headers['x-request-id']);
  const after_ms = await c.closed;
  assert.ok(after_ms < 3000, `closed after ${after_ms} ms`);
  await waitForLog(s.logs, (e) => e.msg === 'request' && e.status === 408 && e.request_id === r.headers['x-request-id']);
});

test('a client sending its body too slowly gets 408 and is disconnected; the request logs 408', async () => {
  const c = await rawConnect(s.url);
  c.write(
    `POST /v1/test/clock/advance HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.demo.key}\r\n` +
      'Content-Type: application/json\r\nContent-Length: 64\r\nX-Request-Id: slow-body\r\n\r\n{',
  );
  trickle(c, ' ', 50);
  const r = await c.response();
  assert.equal(r.status, 408);
  assert.equal(r.headers['x-request-id'], 'slow-body');
  assert.equal(r.body.error.code, 'request_timeout');
  const after_ms = await c.closed;
  assert.ok(after_ms < 3000, `closed after ${after_ms} ms`);
  const line = await waitForLog(s.logs, (e) => e.msg === 'request' && e.request_id === 'slow-body');
  assert.equal(line.status, 408);
  // The clock did not move: the handler never ran.
  assert.equal((await s.request('GET', '/v1/test/clock')).body.offset_seconds, 0);
});

test('while slow clients hang on, other requests are served at once', async () => {
  const slow = await Promise.all([rawConnect(s.url), rawConnect(s.url), rawConnect(s.url)]);
  for (const c of slow) c.write('GET /healthz HTTP/1.1\r\n');
  let slowClosed = 0;
  for (const c of slow) void c.closed.then(() => slowClosed++);
  const r = await s.request('GET', '/healthz', { key: null });
  assert.equal(r.status, 200);
  // Answered while all three still hang on, not after their timeout freed the server.
  assert.equal(slowClosed, 0);
  await Promise.all(slow.map((c) => c.closed));
  assert.equal(slowClosed, 3);
});

test('an idle keep-alive connection that never sends a request is closed', async () => {
  const c = await rawConnect(s.url);
  const after_ms = await c.closed;
  assert.ok(after_ms < 8000, `closed after ${after_ms} ms`);
});

test('a headers timeout longer than the request timeout is refused at start-up', async () => {
  const { loadConfig } = await import('../../src/platform/config');
  assert.throws(() => loadConfig(['--headers-timeout-ms', '5000', '--request-timeout-ms', '1000'], {}), /must not exceed --request-timeout-ms/);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { startTestServer, type TestServer } from '../helpers/server';
import { rawConnect } from '../helpers/raw-http';
import { SERVER_LIMITS } from '../../src/platform/http/server';

// Small limits, so each misbehaving client is cut off in well under a second.
let s: TestServer;
before(async () => {
  s = await startTestServer({ headersTimeoutMs: 300, requestTimeoutMs: 600, maxConnections: 20 });
});
after(() => s.close());

function open(url: string): Promise<Socket> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = connect(Number(u.port), u.hostname, () => resolve(sock));
    sock.on('error', reject);
  });
}

/** Resolves with the ms until the server closes the socket (bounded by `limit_ms`, then -1). */
function closedWithin(sock: Socket, limit_ms: number): Promise<number> {
  const started = Date.now();
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(-1), limit_ms);
    sock.on('close', () => {
      clearTimeout(timer);
      resolve(Date.now() - started);
    });
    sock.on('error', () => {});
    sock.resume();
  });
}

test('zero-byte connections are closed: a socket that sends nothing is cut after the headers timeout', async () => {
  const socks = await Promise.all(Array.from({ length: 10 }, () => open(s.url)));
  const closed = await Promise.all(socks.map((sock) => closedWithin(sock, 5000)));
  for (const ms of closed) assert.ok(ms >= 0 && ms < 3000, `closed after ${ms} ms`);
  assert.equal((await s.request('GET', '/healthz', { key: null })).status, 200);
});

test('connections over --max-connections are answered 503 with Retry-After and closed, never left hanging', async () => {
  const held: Socket[] = [];
  try {
    // Keep 20 connections busy with half-sent headers, so each is open but not idle.
    for (let i = 0; i < 20; i++) {
      const sock = await open(s.url);
      sock.write('GET /healthz HTTP/1.1\r\n');
      held.push(sock);
    }
    const over = await rawConnect(s.url);
    const r = await over.response();
    assert.equal(r.status, 503);
    assert.equal(r.headers['retry-after'], '1');
    assert.equal(r.body.error.code, 'unavailable');
    assert.ok((await over.closed) < 3000);
  } finally {
    for (const sock of held) sock.destroy();
  }
  // Once they are gone the server answers again.
  for (let i = 0; i < 50; i++) {
    const r = await s.request('GET', '/healthz', { key: null }).catch(() => null);
    if (r?.status === 200) return;
    await new Promise((res) => setTimeout(res, 20));
  }
  assert.fail('the server did not recover after the connections closed');
});

test('non-normalised paths are refused: /./metrics and /x/%2e%2e/metrics never reach a route', async () => {
  for (const path of ['/./metrics', '/x/../metrics', '/x/%2e%2e/metrics', '/x/%2E./metrics', '/healthz/.', '/healthz/%2e']) {
    const c = await rawConnect(s.url);
    c.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    const r = await c.response();
    assert.equal(r.status, 400, path);
    assert.equal(r.body.error.code, 'bad_request');
    assert.match(r.body.error.message, /normalised/);
  }
  assert.equal((await s.request('GET', '/metrics', { key: null })).status, 200);
  assert.equal((await s.request('GET', '/v1/public%2fpayments', { key: null })).status, 404, 'an encoded slash is no separator: no route has it');
});

test('keyless large bodies are not held: the request is refused from its headers, before its body arrives', async () => {
  const c = await rawConnect(s.url);
  // Announce 1 MiB and send none of it: a server reading bodies first would wait for it.
  c.write(`POST /v1/public/payments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n`);
  const r = await c.response();
  assert.equal(r.status, 401);
  assert.equal(r.headers['connection'], 'close');
  c.socket.destroy();
});

test('a body over the limit is answered 413 and the connection closes cleanly while the client is still sending', async () => {
  // 10 MiB of chunks against a 64 KiB limit, written at once: more than the kernel's buffers hold, so the server
  // answers long before it has read them. Destroying the socket with bytes unread resets the connection, and a
  // client still writing meets the reset (EPIPE) before, or instead of, the answer; the server half-closes and
  // reads and drops the rest instead.
  const t = await startTestServer({ bodyLimitBytes: 64 * 1024 });
  try {
    const u = new URL(t.url);
    const head = Buffer.from(`POST /v1/public/payments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.demo.key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`);
    const chunk = Buffer.concat([Buffer.from('10000\r\n'), Buffer.alloc(0x10000, 0x5b), Buffer.from('\r\n')]);
    for (let round = 0; round < 5; round++) {
      const outcome = await new Promise<{ text: string; error: string | null }>((resolve) => {
        const sock = connect({ host: u.hostname, port: Number(u.port) });
        let data = Buffer.alloc(0);
        let error: string | null = null;
        sock.on('data', (c: Buffer) => (data = Buffer.concat([data, c])));
        sock.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
        sock.on('close', () => resolve({ text: data.toString('latin1'), error }));
        sock.on('connect', () => {
          sock.write(head);
          for (let i = 0; i < 160; i++) sock.write(chunk);
        });
      });
      assert.match(outcome.text, /^HTTP\/1\.1 413 /, `round ${round}: ${outcome.text.slice(0, 80) || 'no answer'} (${outcome.error})`);
      assert.match(outcome.text, /"code":"payload_too_large"/);
      assert.equal(outcome.error, null, `round ${round}: the connection was reset`);
    }
  } finally {
    await t.close();
  }
});

test('bodies in flight are bounded: past the budget a body is refused 503 with Retry-After, then the budget frees', async () => {
  const t = await startTestServer({ bodyLimitBytes: SERVER_LIMITS.body_inflight_bytes });
  const hold = await rawConnect(t.url);
  try {
    // One keyed request announcing the whole budget and sending nothing holds all of it.
    hold.write(
      `POST /v1/test/clock/advance HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.demo.key}\r\nContent-Type: application/json\r\nContent-Length: ${SERVER_LIMITS.body_inflight_bytes}\r\n\r\n{`,
    );
    let refused: Awaited<ReturnType<TestServer['request']>> | null = null;
    for (let i = 0; i < 50 && refused?.status !== 503; i++) {
      refused = await t.request('POST', '/v1/test/clock/advance', { body: { seconds: 0 } });
      if (refused.status !== 503) await new Promise((res) => setTimeout(res, 20));
    }
    assert.equal(refused!.status, 503);
    assert.equal(refused!.headers['retry-after'], '1');
    assert.match(refused!.body.error.message, /bodies/);
  } finally {
    hold.socket.destroy();
  }
  for (let i = 0; i < 50; i++) {
    const r = await t.request('POST', '/v1/test/clock/advance', { body: { seconds: 0 } });
    if (r.status === 200) return t.close();
    await new Promise((res) => setTimeout(res, 20));
  }
  await t.close();
  assert.fail('the budget was not given back when the holding request ended');
});

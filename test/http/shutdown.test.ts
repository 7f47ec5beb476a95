import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, doRequest } from '../helpers/server';
import { rawConnect } from '../helpers/raw-http';
import { spawnServer } from '../helpers/child-server';

const BODY = '{"seconds": 120}';

function slowPost(key: string, requestId: string): string {
  return (
    `POST /v1/test/clock/advance HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${BODY.length}\r\nX-Request-Id: ${requestId}\r\n\r\n`
  );
}

test('close(): in-flight requests finish, requests arriving meanwhile get 503, then the database closes', async () => {
  const s = await startTestServer();
  try {
    const server = s.running.server;
    const inflight = await rawConnect(s.url);
    const arrived = new Promise((resolve) => server.once('request', resolve));
    inflight.write(slowPost(s.demo.key, 'drain-1') + BODY.slice(0, 5));
    await arrived;
    // A second connection in the middle of its headers is busy, so it is not closed as idle.
    const late = await rawConnect(s.url);
    late.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    await new Promise((r) => setTimeout(r, 50));

    const closing = s.running.close();
    late.write('\r\n');
    const refused = await late.response();
    assert.equal(refused.status, 503);
    assert.equal(refused.body.error.code, 'unavailable');
    assert.equal(refused.headers['connection'], 'close');
    // The expected refusal is an info line without a stack, not an error.
    const lines = s.logs.map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.ok(lines.some((l) => l.level === 'info' && l.msg === 'request refused while shutting down' && l.status === 503), s.logs.slice(-5).join('\n'));
    assert.deepEqual(lines.filter((l) => l.level === 'error' || 'stack' in l), []);

    inflight.write(BODY.slice(5));
    const done = await inflight.response();
    assert.equal(done.status, 200);
    assert.equal(done.body.offset_seconds, 120);
    await closing;
    assert.equal(s.running.app.store.isOpen, false);
    await assert.rejects(doRequest(s.url, 'GET', '/healthz', {}, s.demo.key), /ECONNREFUSED/);
  } finally {
    await s.close();
  }
});

test('SIGTERM: the process drains an in-flight request, answers it, and exits 0', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-sigterm-'));
  const child = await spawnServer(['--db', join(dir, 'kopek.db'), '--log-level', 'silent']);
  try {
    const key = /test key\s+(sk_test_\S+)/.exec(child.stderr())?.[1];
    assert.ok(key, `no demo key printed: ${child.stderr()}`);
    const inflight = await rawConnect(child.url);
    inflight.write(slowPost(key, 'sigterm-1') + BODY.slice(0, 5));
    // A full round trip on another connection after the partial request: the server has read the first one's headers.
    assert.equal((await doRequest(child.url, 'GET', '/healthz', {}, key)).status, 200);
    await new Promise((r) => setTimeout(r, 100));

    child.proc.kill('SIGTERM');
    await waitFor(() => child.stderr().includes('SIGTERM received'));
    await assert.rejects(doRequest(child.url, 'GET', '/healthz', {}, key), /ECONNREFUSED/);
    inflight.write(BODY.slice(5));
    const done = await inflight.response();
    assert.equal(done.status, 200);
    assert.equal(done.body.offset_seconds, 120);
    assert.equal(await child.exited, 0);
    assert.match(child.stderr(), /stopped/);
  } finally {
    child.proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

async function waitFor(cond: () => boolean, timeout_ms = 5000): Promise<void> {
  const deadline = Date.now() + timeout_ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('the start-up line names the bound address, and the public URL after it when one is set', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-banner-'));
  const child = await spawnServer(['--db', join(dir, 'kopek.db'), '--host', '127.0.0.1', '--base-url', 'https://pay.shop.example', '--log-level', 'silent']);
  try {
    const line = child.stderr().split('\n')[0];
    assert.match(line, /^kopek \S+ listening on http:\/\/127\.0\.0\.1:\d+ \(public URL https:\/\/pay\.shop\.example, database \S+kopek\.db\)$/);
    assert.match(child.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal((await doRequest(child.url, 'GET', '/healthz', {}, '')).status, 200);
    child.proc.kill('SIGTERM');
    assert.equal(await child.exited, 0);
  } finally {
    child.proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { rawConnect } from '../helpers/raw-http';
import { waitForLog } from '../helpers/logs';
import pg from 'pg';
import { refuseWrites } from '../../src/platform/storage/maintenance';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ADVANCE = '/v1/test/clock/advance';

let s: TestServer;
before(async () => {
  s = await startTestServer({ bodyLimitBytes: 1024 });
});
after(() => s.close());

function assertError(r: { status: number; body: any; headers: Record<string, unknown> }, status: number, code: string): void {
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.equal(r.body.error.code, code);
  assert.equal(typeof r.body.error.message, 'string');
  assert.match(String(r.headers['x-request-id']), UUID);
}

test('a body over --body-limit is 413 payload_too_large and the connection closes', async () => {
  const r = await s.request('POST', ADVANCE, { body: { seconds: 1, pad: 'x'.repeat(2000) } });
  assertError(r, 413, 'payload_too_large');
  assert.match(r.body.error.message, /1024 bytes/);
  assert.equal(r.headers['connection'], 'close');
});

test('a chunked body (no Content-Length) that grows over the limit is 413', async () => {
  const c = await rawConnect(s.url);
  c.write(`POST ${ADVANCE} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.demo.key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`);
  const chunk = 'x'.repeat(700);
  c.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
  c.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n0\r\n\r\n`);
  const r = await c.response();
  assertError(r, 413, 'payload_too_large');
  c.socket.destroy();
});

test('a body exactly at the limit is read', async () => {
  const json = JSON.stringify({ seconds: 0 });
  const r = await s.request('POST', ADVANCE, { body: json + ' '.repeat(1024 - json.length) });
  assert.equal(r.status, 200);
});

test('a body that is not application/json is 415 unsupported_media_type', async () => {
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/jsonx']) {
    const r = await s.request('POST', ADVANCE, { body: '{"seconds":1}', headers: { 'content-type': type } });
    assertError(r, 415, 'unsupported_media_type');
    assert.match(r.body.error.message, new RegExp(`"${type}"`));
  }
});

test('a body without Content-Type is 415; application/json with parameters is accepted', async () => {
  const none = await s.request('POST', ADVANCE, { body: Buffer.from('{"seconds":1}'), headers: { 'content-type': '' } });
  assertError(none, 415, 'unsupported_media_type');
  const ok = await s.request('POST', ADVANCE, { body: '{"seconds":0}', headers: { 'content-type': 'Application/JSON; charset=UTF-8' } });
  assert.equal(ok.status, 200);
});

test('a JSON body in a charset other than UTF-8 is 415', async () => {
  const r = await s.request('POST', ADVANCE, { body: '{"seconds":1}', headers: { 'content-type': 'application/json; charset=iso-8859-1' } });
  assertError(r, 415, 'unsupported_media_type');
  assert.match(r.body.error.message, /"iso-8859-1"/);
});

test('malformed JSON is 400 bad_request', async () => {
  const r = await s.request('POST', ADVANCE, { body: '{"seconds": 1,' });
  assertError(r, 400, 'bad_request');
  assert.match(r.body.error.message, /^Cannot parse the request body as JSON/);
});

test('invalid UTF-8 is 400 bad_request', async () => {
  const r = await s.request('POST', ADVANCE, { body: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]) });
  assertError(r, 400, 'bad_request');
  assert.match(r.body.error.message, /UTF-8/);
});

test('nesting deeper than 64 levels is 400 before parsing; brackets inside strings do not count', async () => {
  const deep = await s.request('POST', ADVANCE, { body: '['.repeat(65) + ']'.repeat(65) });
  assertError(deep, 400, 'bad_request');
  assert.match(deep.body.error.message, /nesting exceeds 64/);
  // 100 brackets inside a string value are text, not nesting: the request gets to field validation.
  const inString = await s.request('POST', ADVANCE, { body: { seconds: 0, note: '['.repeat(100) } });
  assertError(inString, 400, 'bad_request');
  assert.equal(inString.body.error.param, 'note');
});

test('a body that is not an object, or has an unknown field, is 400 naming the field', async () => {
  const arr = await s.request('POST', ADVANCE, { body: [1] });
  assertError(arr, 400, 'bad_request');
  const unknown = await s.request('POST', ADVANCE, { body: { seconds: 1, secnods: 2 } });
  assertError(unknown, 400, 'bad_request');
  assert.equal(unknown.body.error.param, 'secnods');
});

test('keyless bodies are refused before they are read: a malformed body without a key is 401, and the connection closes', async () => {
  const r = await s.request('POST', ADVANCE, { key: null, body: '{oops' });
  assertError(r, 401, 'unauthorized');
  assert.equal(r.headers['connection'], 'close', 'the unread body is not received to reach a next request');
  const keyed = await s.request('POST', ADVANCE, { body: '{oops' });
  assertError(keyed, 400, 'bad_request');
});

test('X-Request-Id: generated when absent, echoed when well-formed, replaced when not', async () => {
  const echoed = await s.request('GET', '/healthz', { key: null, headers: { 'x-request-id': 'trace-42.a_b' } });
  assert.equal(echoed.headers['x-request-id'], 'trace-42.a_b');
  const bad = await s.request('GET', '/healthz', { key: null, headers: { 'x-request-id': 'has space<script>' } });
  assert.match(String(bad.headers['x-request-id']), UUID);
  const long = await s.request('GET', '/healthz', { key: null, headers: { 'x-request-id': 'a'.repeat(65) } });
  assert.match(String(long.headers['x-request-id']), UUID);
  const err = await s.request('GET', '/v1/test/clock', { key: null, headers: { 'x-request-id': 'err-1' } });
  assert.equal(err.status, 401);
  assert.equal(err.headers['x-request-id'], 'err-1');
});

test('HEAD of a GET route answers the headers without a body', async () => {
  const r = await s.request('HEAD', '/healthz', { key: null });
  assert.equal(r.status, 200);
  assert.equal(r.text, '');
  assert.ok(Number(r.headers['content-length']) > 0);
});

test('one JSON access-log line per request, without query string, key, or body', async () => {
  const card = '4111111111111111';
  const r = await s.request('POST', `${ADVANCE}?card=${card}&token=secret-token`, {
    body: { seconds: 0, card_pan: card },
    headers: { 'x-request-id': 'log-check-1' },
  });
  assert.equal(r.status, 400);
  const line = await waitForLog(s.logs, (e) => e.msg === 'request' && e.request_id === 'log-check-1');
  assert.equal(line.method, 'POST');
  assert.equal(line.path, ADVANCE);
  assert.equal(line.route, ADVANCE);
  assert.equal(line.status, 400);
  assert.equal(typeof line.duration_ms, 'number');
  assert.equal(s.logs.filter((l) => l.includes('"log-check-1"')).length, 1);
  const all = s.logs.join('');
  assert.ok(!all.includes(card), 'a card number reached the log');
  assert.ok(!all.includes(s.demo.key), 'an API key reached the log');
  assert.ok(!all.includes('secret-token'), 'a query string reached the log');
});

test('an unmatched route is logged too, with its status', async () => {
  await s.request('GET', '/nowhere', { key: null, headers: { 'x-request-id': 'log-404' } });
  const line = await waitForLog(s.logs, (e) => e.request_id === 'log-404');
  assert.equal(line.status, 404);
  assert.equal(line.route, undefined);
});

test('a 500 leaks no internals to the client; the log has the stack under the request id', async () => {
  const store = s.running.app.store;
  // A key the server has not looked up yet, so authentication reads the (renamed) table instead of its key cache.
  const { key } = await s.newKey(s.demo.shopId, 'test');
  await store.write(async (tx) => {
    await tx.run('ALTER TABLE api_keys RENAME TO api_keys_moved');
  });
  try {
    const r = await s.request('GET', '/v1/test/clock', { key, headers: { 'x-request-id': 'boom-1' } });
    assertError({ ...r, headers: { 'x-request-id': '00000000-0000-4000-8000-000000000000' } }, 500, 'internal_error');
    assert.equal(r.headers['x-request-id'], 'boom-1');
    assert.deepEqual(Object.keys(r.body.error).sort(), ['code', 'message']);
    assert.doesNotMatch(r.text, /api_keys|sqlite|SqliteError|\bat \w|\.ts:\d/i);
    const logged = await waitForLog(s.logs, (e) => e.level === 'error' && e.request_id === 'boom-1');
    assert.match(logged.error, /api_keys/);
    assert.match(logged.stack, /\n\s+at /);
  } finally {
    await store.write(async (tx) => {
      await tx.run('ALTER TABLE api_keys_moved RENAME TO api_keys');
    });
  }
  const after = await s.request('GET', '/v1/test/clock');
  assert.equal(after.status, 200);
});

/**
 * Make the server's database refuse every write, or take them again. SQLite: the connection's query_only.
 * PostgreSQL: the database turns read-only (as a standby is) for new sessions, and every session is ended so
 * that the pool opens new ones; the store is then probed until a session takes writes as asked.
 */
async function storageRefusesWrites(refuse: boolean): Promise<void> {
  const store = s.running.app.store;
  if (store.engine !== 'postgres') return refuseWrites(store, refuse);
  const c = new pg.Client({ connectionString: s.dbPath });
  await c.connect();
  try {
    // This session may have started read-only itself: it turns the setting back whatever the database's.
    await c.query('SET default_transaction_read_only = off');
    await c.query(`ALTER DATABASE "${new URL(s.dbPath).pathname.slice(1)}" SET default_transaction_read_only = ${refuse ? 'on' : 'off'}`);
    await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
  } finally {
    await c.end();
  }
  for (let i = 0; ; i++) {
    const took = await store.tx((tx) => tx.run('UPDATE kopek_schema SET version = version')).then(() => true, () => false);
    if (took !== refuse) return;
    if (i > 50) throw new Error('the database did not change its read-only setting');
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('storage that cannot take a write answers 503 unavailable with Retry-After, not 500', async () => {
  await storageRefusesWrites(true);
  try {
    const r = await s.request('POST', ADVANCE, { body: { seconds: 1 } });
    assertError(r, 503, 'unavailable');
    assert.equal(r.headers['retry-after'], '1');
  } finally {
    await storageRefusesWrites(false);
  }
  const ok = await s.request('POST', ADVANCE, { body: { seconds: 1 } });
  assert.equal(ok.status, 200);
});

test('a malformed HTTP request gets a 400 error body with X-Request-Id and closes', async () => {
  const c = await rawConnect(s.url);
  c.write('GARBAGE\r\n\r\n');
  const r = await c.response();
  assert.equal(r.status, 400);
  assert.equal(r.body.error.code, 'bad_request');
  assert.match(r.headers['x-request-id'], UUID);
  await c.closed;
});

test('headers over 16 KiB are 431 with the error body', async () => {
  const r = await rawConnect(s.url);
  r.write(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`);
  const res = await r.response();
  assert.equal(res.status, 431);
  assert.equal(res.body.error.code, 'bad_request');
  assert.match(res.headers['x-request-id'], UUID);
});

test('a connection-level refusal is written byte for byte: status line, JSON type and length, request id, close', async () => {
  const { connect } = await import('node:net');
  const u = new URL(s.url);
  const cases: Array<[string, string, string]> = [
    ['GARBAGE\r\n\r\n', '400 Bad Request', '{"error":{"code":"bad_request","message":"Cannot parse the HTTP request"}}'],
    [
      `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`,
      '431 Request Header Fields Too Large',
      '{"error":{"code":"bad_request","message":"Cannot read the request: headers too large"}}',
    ],
  ];
  for (const [request, status, body] of cases) {
    const text = await new Promise<string>((resolve, reject) => {
      const sock = connect(Number(u.port), u.hostname, () => sock.write(request));
      let got = '';
      sock.on('data', (c: Buffer) => (got += c.toString('latin1')));
      sock.on('error', reject);
      sock.on('close', () => resolve(got));
    });
    const head = `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nX-Request-Id: `;
    assert.equal(text.slice(0, head.length), head);
    assert.match(text.slice(head.length), /^[0-9a-f-]{36}\r\nConnection: close\r\n\r\n/);
    assert.ok(text.endsWith(`\r\n\r\n${body}`), text);
  }
});

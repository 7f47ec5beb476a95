import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startTestServer, doRequest, type TestServer } from '../helpers/server';
import { runCli } from '../helpers/cli';
import { startReceiver } from '../helpers/webhooks';
import { openSse } from '../helpers/sse-client';
import { startApp } from '../../src/app';
import { defaultConfig } from '../../src/platform/config';
import { createLogger } from '../../src/platform/log';
import { addEndpoint } from '../../src/money/webhooks/store';
import { parseMetrics, sample } from '../helpers/prom';
import { sqliteOnly } from '../helpers/pg';
import { SCHEMA_VERSION } from '../../src/platform/storage/sqlite/open';

let s: TestServer;
before(async () => {
  s = await startTestServer({ simDelaySeconds: 0 });
});
after(() => s.close());

test('backup while the server writes: every payment acknowledged before it is in the copy, and a server on the copy serves them', { skip: sqliteOnly('a backup of the SQLite file (kopek backup refuses PostgreSQL)') }, async () => {
  const acked: string[] = [];
  let stop = false;
  // Several writers keep group commits going during the whole backup.
  const writer = async (): Promise<void> => {
    while (!stop) {
      const r = await s.request('POST', '/v1/public/payments', { body: { amount: 10000, description: 'x'.repeat(500) } });
      assert.equal(r.status, 201, r.text);
      acked.push(r.body.payment.id);
    }
  };
  const writers = Array.from({ length: 4 }, writer);
  while (acked.length < 200) await new Promise((r) => setImmediate(r));
  const before = acked.length;
  const dest = join(s.dir, 'copy.db');
  const res = await runCli(['backup', dest, '--db', s.dbPath]);
  stop = true;
  await Promise.all(writers);
  assert.equal(res.code, 0, res.err);
  assert.match(res.out, /backup: 100% /);
  assert.match(res.out, /integrity ok/);
  assert.ok(existsSync(dest) && !existsSync(dest + '.partial'));

  // Restore: a server started on the copy.
  const copy = await startApp({ ...defaultConfig(), port: 0, host: '127.0.0.1', db: dest, demo: false }, { log: createLogger('silent') });
  try {
    for (const id of acked.slice(0, before)) {
      const g = await doRequest(copy.url, 'GET', `/v1/public/payments/${id}`, {}, s.demo.key);
      assert.equal(g.status, 200, `payment ${id} acknowledged before the backup is missing from the copy`);
    }
  } finally {
    await copy.close();
  }
});

test('backup refuses to overwrite an existing file unless --force, and reports in one JSON object', { skip: sqliteOnly('a backup of the SQLite file (kopek backup refuses PostgreSQL)') }, async () => {
  const dest = join(s.dir, 'exists.db');
  writeFileSync(dest, 'old');
  const refused = await runCli(['backup', dest, '--db', s.dbPath]);
  assert.equal(refused.code, 1);
  assert.match(refused.err, /^kopek backup: cannot back up to ".*exists\.db": the file exists \(pass --force/);
  const forced = await runCli(['backup', dest, '--force', '--json', '--db', s.dbPath]);
  assert.equal(forced.code, 0, forced.err);
  assert.equal(forced.json.path, dest);
  assert.ok(forced.json.pages > 0 && forced.json.bytes > 0);
  const db = new Database(dest, { readonly: true });
  assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
  db.close();
  const missing = await runCli(['backup', join(s.dir, 'x.db'), '--db', join(s.dir, 'nope.db')]);
  assert.equal(missing.code, 1);
  assert.match(missing.err, /cannot open database ".*nope\.db": no such file/);
});

test('GET /metrics: request counts by route and status, a latency histogram, jobs by kind, webhook attempts, SSE clients', async () => {
  const shop = await s.newShop();
  const rcv = await startReceiver();
  await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url + '/hook' }, Date.now());
  try {
    const p = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 10000, method: 'sbp' } });
    assert.equal(p.status, 201);
    await s.request('POST', `/v1/public/payments/${p.body.payment.id}/cancel`, { key: shop.key });
    await rcv.waitFor(1);
    await s.request('GET', '/v1/public/payments/00000000-0000-4000-8000-000000000000', { key: shop.key });
    const sse = await openSse(s.url, shop.key);
    const r = await s.request('GET', '/metrics', { key: null });
    sse.close();
    assert.equal(r.status, 200);
    assert.match(String(r.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    const m = parseMetrics(r.text);
    assert.ok(sample(m, 'kopek_http_requests_total', { route: '/v1/public/payments', method: 'POST', status: '201' })! >= 1);
    assert.ok(sample(m, 'kopek_http_requests_total', { route: '/v1/public/payments/:id', method: 'GET', status: '404' })! >= 1);
    const count = sample(m, 'kopek_http_request_duration_seconds_count', { route: '/v1/public/payments', method: 'POST' })!;
    assert.equal(sample(m, 'kopek_http_request_duration_seconds_bucket', { route: '/v1/public/payments', method: 'POST', le: '+Inf' }), count);
    const buckets = m.filter((x) => x.name === 'kopek_http_request_duration_seconds_bucket' && x.labels.route === '/v1/public/payments' && x.labels.method === 'POST');
    for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i].value >= buckets[i - 1].value, 'histogram buckets are cumulative');
    assert.ok(m.some((x) => x.name === 'kopek_jobs' && x.labels.state === 'pending' && x.value > 0), 'the payment created before has a pending link-expiry job');
    assert.ok(sample(m, 'kopek_webhook_attempts_total', { result: 'succeeded' })! >= 1);
    assert.equal(sample(m, 'kopek_sse_clients', {}), 1);
    // Every line is a comment or `name{labels} value`.
    for (const line of r.text.trimEnd().split('\n')) assert.match(line, /^(# (HELP|TYPE) \w+ .+|\w+(\{[^}]*\})? -?[0-9.e+]+)$/, line);
  } finally {
    await rcv.close();
  }
});

/** A database to plant findings in, and how to plant them: the SQLite file's backup copy, or on PostgreSQL the server's own database (undone after). */
interface Plot {
  db: string;
  run(sql: string, ...params: unknown[]): Promise<void>;
  version(v: number): Promise<void>;
  undo(): Promise<void>;
}

async function plot(): Promise<Plot> {
  if (s.store.engine === 'postgres') {
    return {
      db: s.dbPath,
      run: (sql, ...params) => s.store.tx((tx) => tx.run(sql, ...params)).then(() => {}),
      version: (v) => s.store.tx((tx) => tx.run('UPDATE kopek_schema SET version = ?', v)).then(() => {}),
      undo: () =>
        s.store.tx(async (tx) => {
          await tx.run(`DELETE FROM jobs WHERE subject_id = 'p1' AND state = 'dead'`);
          await tx.run(`DELETE FROM webhook_endpoints WHERE id = 'e1'`);
          await tx.run('UPDATE kopek_schema SET version = ?', SCHEMA_VERSION);
        }),
    };
  }
  const copy = join(s.dir, 'doctor.db');
  assert.equal((await runCli(['backup', copy, '--db', s.dbPath, '--json'])).code, 0);
  const withDb = (fn: (db: Database.Database) => void): Promise<void> => {
    const db = new Database(copy);
    try {
      fn(db);
    } finally {
      db.close();
    }
    return Promise.resolve();
  };
  return {
    db: copy,
    run: (sql, ...params) => withDb((db) => void db.prepare(sql).run(...params)),
    version: (v) => withDb((db) => void db.pragma(`user_version = ${v}`)),
    undo: () => Promise.resolve(),
  };
}

test('doctor: a healthy database exits 0; dead jobs, a disabled endpoint and a wrong schema version each say what to do and exit 1', async () => {
  const pg = s.store.engine === 'postgres';
  const ok = await runCli(['doctor', '--db', s.dbPath]);
  assert.equal(ok.code, 0, ok.out);
  assert.match(ok.out, pg ? /ok {6}sqlite file: skipped on PostgreSQL/ : /ok {6}integrity: ok/);
  assert.match(ok.out, /doctor: nothing needs action/);

  const p = await plot();
  try {
    await p.run(`INSERT INTO jobs (kind, subject_id, shop_id, mode, due_at, run_at, state, attempt, last_error, created_at) VALUES ('payment.expire', 'p1', ?, 'test', 0, 0, 'dead', 5, 'boom', 0)`, s.demo.shopId);
    await p.run(`INSERT INTO webhook_endpoints (id, shop_id, url, created_at, disabled_at, disabled_reason) VALUES ('e1', ?, 'http://127.0.0.1:9/h', 0, 1, 'receiver answered 410 Gone')`, s.demo.shopId);
    const bad = await runCli(['doctor', '--db', p.db, '--json']);
    assert.equal(bad.code, 1);
    const byCheck = Object.fromEntries(bad.json.findings.map((f: any) => [f.check, f]));
    assert.equal(byCheck['dead jobs'].ok, false);
    assert.match(byCheck['dead jobs'].detail, /1 payment\.expire/);
    assert.match(byCheck['dead jobs'].action, /kopek jobs retry/);
    assert.equal(byCheck['disabled endpoints'].ok, false);
    assert.match(byCheck['disabled endpoints'].action, /kopek webhook/);
    assert.equal(byCheck[pg ? 'sqlite file' : 'integrity'].ok, true);

    await p.version(999);
    const newer = await runCli(['doctor', '--db', p.db]);
    assert.equal(newer.code, 1);
    assert.match(newer.out, /ACTION {2}schema: version 999, this build expects \d+\n {8}→ this kopek is older/);
  } finally {
    await p.undo();
  }

  if (pg) {
    const missing = await runCli(['doctor', '--db', `${s.dbPath}_missing`]);
    assert.equal(missing.code, 1);
    assert.match(missing.out, /ACTION {2}database: .*does not exist/);
    return;
  }
  const junk = join(s.dir, 'junk.db');
  writeFileSync(junk, Buffer.alloc(8192, 7));
  const broken = await runCli(['doctor', '--db', junk]);
  assert.equal(broken.code, 1);
  assert.match(broken.out, /ACTION {2}database: .*not a database/);
});

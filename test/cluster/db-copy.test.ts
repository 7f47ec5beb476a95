import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server';
import { dropPgDatabase, emptyPgDatabase, ensureMasterKey, postgresOnly } from '../helpers/pg';
import { kopekProcess, startCluster } from '../helpers/cluster';
import { runCli } from '../helpers/cli';
import { paidPayment } from '../helpers/money';
import { openSse } from '../helpers/sse-client';
import { openStorage } from '../../src/db/maintenance';
import { defaultConfig } from '../../src/base/config';
import { startApp } from '../../src/app';
import { createLogger } from '../../src/base/log';
import { doRequest } from '../helpers/server';

// kopek db copy: a merchant's SQLite database moved into PostgreSQL, then served from there.

const skip = postgresOnly();

test('kopek db copy moves everything: the same keys work, the same ids answer, numbers continue, pending jobs resume, streams resume', { skip }, async () => {
  ensureMasterKey();
  const s = await startTestServer({ simDelaySeconds: 60 }, { sqlite: true });
  const url = await emptyPgDatabase();
  try {
    const paid = await paidPayment(s, s.demo.key, 50_000);
    assert.equal((await s.request('POST', `/v1/public/payments/${paid}/refund`, { body: { amount: 10_000 } })).status, 201);
    const pending = (await s.request('POST', '/v1/public/payments', { body: { amount: 7_700 } })).body.payment;
    const before = await s.request('GET', `/v1/public/payments/${paid}`);
    const lastEvent = (await s.store.get<{ seq: number }>('SELECT max(seq) AS seq FROM events'))!.seq;
    const publicBefore = (await s.store.get<{ n: number }>("SELECT seq AS n FROM sqlite_sequence WHERE name = 'payments'"))!.n;
    await s.running.close();
    // The newest event and payment rows are deleted (as retention would): their numbers must not come back.
    const raw = openStorage(s.dbPath);
    await raw.tx(async (tx) => {
      await tx.run('DELETE FROM events WHERE seq = ?', lastEvent);
    });
    await raw.close();

    const copy = await runCli(['db', 'copy', '--from', s.dbPath, '--to', url, '--json']);
    assert.equal(copy.code, 0, copy.err + copy.out);
    assert.equal(copy.json.ok, true);
    for (const t of copy.json.tables) assert.equal(t.target, t.source, t.table);
    assert.deepEqual(copy.json.ledger, { source: true, target: true });
    assert.match(copy.err, /kopek db copy: payments \d+\/\d+/);

    const cfg = { ...defaultConfig(), port: 0, host: '127.0.0.1', db: url, demo: false, simDelaySeconds: 60, webhookAllow: ['127.0.0.1/32'] };
    const node = await startApp(cfg, { log: createLogger('silent') });
    try {
      const req = (m: string, p: string, o = {}) => doRequest(node.url, m, p, o, s.demo.key);
      const after = await req('GET', `/v1/public/payments/${paid}`);
      assert.equal(after.status, 200, 'the same key works and the same id answers');
      assert.equal(after.text, before.text);
      // A new payment gets the next public number after every one SQLite gave.
      const next = (await req('POST', '/v1/public/payments', { body: { amount: 9_900 } })).body.payment;
      assert.equal(next.public_id, `P-${100000 + publicBefore + 1}`);
      // A stream resumed from before the move continues; new events get ids past every one SQLite gave.
      const stream = await openSse(node.url, s.demo.key, String(lastEvent - 1));
      const made = await req('POST', '/v1/public/payments', { body: { amount: 9_800 } });
      // The replay holds the event of the payment made above, then the new one arrives live.
      const got = await stream.waitEvents(2, 5_000);
      for (const f of got) assert.ok(Number(f.id) > lastEvent, `${f.id} > ${lastEvent}`);
      assert.deepEqual(got.map((f) => JSON.parse(f.data!).payload.id), [next.id, made.body.payment.id]);
      stream.close();
      // The pending payment's expiry job came along: two days on, it expires.
      assert.equal((await req('POST', '/v1/test/clock/advance', { body: { seconds: 2 * 86_400 } })).status, 200);
      assert.equal((await req('GET', `/v1/public/payments/${pending.id}`)).body.status, 'expired');
    } finally {
      await node.close();
    }

    const again = await runCli(['db', 'copy', '--from', s.dbPath, '--to', url]);
    assert.equal(again.code, 1);
    assert.match(again.err, /not empty/);
  } finally {
    await s.close();
    await dropPgDatabase(url);
  }
});

test('kopek db copy refuses a target that holds data, a missing source and a URL given as the source, in one line each', { skip }, async () => {
  ensureMasterKey();
  const c = await startCluster(0);
  const s = await startTestServer({}, { sqlite: true });
  try {
    const full = await runCli(['db', 'copy', '--from', s.dbPath, '--to', c.dbUrl]);
    assert.equal(full.code, 1);
    assert.match(full.err, /cannot copy into postgres:\/\/.*: the target database is not empty \(table merchants has rows\)/);
    assert.equal(full.err.trim().split('\n').length, 1, full.err);
    const missing = await runCli(['db', 'copy', '--from', '/nonexistent/kopek.db', '--to', c.dbUrl]);
    assert.equal(missing.code, 1);
    assert.match(missing.err, /no such file/);
    const swapped = await runCli(['db', 'copy', '--from', c.dbUrl, '--to', s.dbPath]);
    assert.match(swapped.err, /--from must name the SQLite database file/);
  } finally {
    await s.close();
    await c.close();
  }
});

test('kopek migrate creates the schema of an empty database once, however many run at once', { skip }, async () => {
  const url = await emptyPgDatabase();
  try {
    // Three processes, as three nodes starting together would be.
    const runs = await Promise.all([1, 2, 3].map(() => kopekProcess(['migrate', '--db', url, '--json'])));
    for (const r of runs) assert.equal(r.code, 0, r.stderr);
    const versions = runs.map((r) => JSON.parse(r.stdout).schema_version);
    assert.equal(new Set(versions).size, 1);
    assert.ok(versions[0] >= 20);
  } finally {
    await dropPgDatabase(url);
  }
});

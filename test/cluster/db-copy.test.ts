import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, doRequest, type TestServer } from '../helpers/server';
import { dropPgDatabase, emptyPgDatabase, ensureMasterKey, postgresOnly } from '../helpers/pg';
import { kopekProcess, startCluster } from '../helpers/cluster';
import { runCli } from '../helpers/cli';
import { paidPayment } from '../helpers/money';
import { openSse } from '../helpers/sse-client';
import { openStorage } from '../../src/platform/storage/maintenance';
import { defaultConfig } from '../../src/platform/config';
import { startApp } from '../../src/app';
import { createLogger } from '../../src/platform/log';
import type { Running } from '../../src/app';
import { addEndpoint } from '../../src/money/webhooks/store';
import { startReceiver, type Receiver } from '../helpers/webhooks';
import { sbpBody } from '../helpers/payouts';
import { activeToken, advanceSeconds, createSubscription, payThroughHelper } from '../helpers/recurrent';
import { makeUser, signIn } from '../helpers/cabinet';
import { behindTheirTables, pgCounters } from '../../src/platform/storage/counters';
import pg from 'pg';

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
    assert.match(full.err, /cannot copy into "postgres:\/\/.*": the target database is not empty \(table merchants has rows\)/);
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

/** The test server's helpers aimed at another node on a copy of its database (same demo key). */
function onNode(s: TestServer, node: Running): TestServer {
  return { ...s, url: node.url, running: node, store: node.app.store, request: (m: string, p: string, o = {}) => doRequest(node.url, m, p, o, s.demo.key) } as TestServer;
}

/** Rows of every table, to see which writes reached which tables. */
async function rowCounts(srv: TestServer, tables: string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of tables) out[t] = (await srv.store.get<{ n: number }>(`SELECT count(*) AS n FROM ${t}`))!.n;
  return out;
}

/**
 * One of every kind of write a shop makes, each asserted to succeed: a settled payment (ledger entries and
 * postings), an idempotent request, a refund, a payout, a token bound and charged, a subscription paid, a cabinet
 * sign-in (session and audit line), webhook deliveries and their attempts.
 */
async function everyKindOfWrite(srv: TestServer, rcv: Receiver, user: string): Promise<void> {
  const got = rcv.received.length;
  const paid = await paidPayment(srv, srv.demo.key, 50_000);
  const idem = await srv.request('POST', '/v1/public/payments', { body: { amount: 1_500 }, headers: { 'idempotency-key': `copy-${paid}` } });
  assert.equal(idem.status, 201, idem.text);
  const refund = await srv.request('POST', `/v1/public/payments/${paid}/refund`, { body: { amount: 10_000 } });
  assert.equal(refund.status, 201, refund.text);
  const payout = await srv.request('POST', '/v1/public/payouts', { body: sbpBody(5_000) });
  assert.equal(payout.status, 201, payout.text);
  const token = await activeToken(srv, { customer_ref: `cust-${paid}` });
  const charge = await srv.request('POST', `/v1/public/tokens/${token.id}/charge`, { body: { amount: 7_000 } });
  assert.equal(charge.status, 201, charge.text);
  const sub = await createSubscription(srv, { amount: 20_000, customer_ref: `sub-${paid}` });
  await payThroughHelper(srv, sub.initial_payment.id);
  await advanceSeconds(srv, 0);
  for (const [path, want] of [[`/v1/public/payouts/${payout.body.payout.id}`, 'succeeded'], [`/v1/public/payments/${charge.body.id}`, 'succeeded'], [`/v1/public/subscriptions/${sub.subscription.id}`, 'active']]) {
    const r = await srv.request('GET', path);
    assert.equal(r.body.status, want, `${path}: ${r.text}`);
  }
  await signIn(srv, user);
  // The endpoint took deliveries of these events: rows of webhook_deliveries and webhook_attempts.
  await rcv.waitFor(got + 3, 10_000);
}

test('kopek db copy continues every generated key: on a copy of a database with history every kind of write succeeds (ledger_postings was left at 1)', { skip }, async () => {
  ensureMasterKey();
  const s = await startTestServer({}, { sqlite: true });
  const url = await emptyPgDatabase();
  const rcv = await startReceiver();
  let node: Running | null = null;
  try {
    await addEndpoint(s.store, { shopId: s.demo.shopId, url: `${rcv.url}/hook` }, Date.now());
    const user = (await makeUser(s, s.demo.merchantId, 'owner@shop.example')).email;
    await everyKindOfWrite(s, rcv, user);
    await everyKindOfWrite(s, rcv, user);
    const source = s.store;
    const floors = new Map<string, number>();
    const counters = new Map((await source.all<{ name: string; seq: number }>('SELECT name, seq FROM sqlite_sequence')).map((r) => [r.name, r.seq]));
    await s.running.close();

    const copy = await runCli(['db', 'copy', '--from', s.dbPath, '--to', url, '--json']);
    assert.equal(copy.code, 0, copy.err + copy.out);
    assert.equal(copy.json.ok, true);
    const raw = openStorage(s.dbPath);
    try {
      for (const q of copy.json.sequences as Array<{ table: string; column: string; last: number }>) {
        const src = q.table === 'event_positions' ? 'events' : q.table;
        const col = q.table === 'event_positions' ? 'seq' : q.column;
        const max = (await raw.get<{ m: number }>(`SELECT coalesce(max(${col}), 0) AS m FROM ${src}`))!.m;
        floors.set(q.table, Math.max(max, counters.get(src) ?? 0));
        assert.ok(q.last >= floors.get(q.table)!, `${q.table}.${q.column}: counter ${q.last}, SQLite gave up to ${floors.get(q.table)}`);
      }
    } finally {
      await raw.close();
    }
    // Every sequence of the target is in the report, found in its catalog: none is left behind.
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      const owned = (await c.query(`SELECT count(*)::int AS n FROM pg_class s JOIN pg_depend d ON d.objid = s.oid AND d.deptype IN ('a', 'i') WHERE s.relkind = 'S'`)).rows[0].n;
      assert.equal(copy.json.sequences.length, owned + 1, 'each owned sequence and event_pos');
    } finally {
      await c.end();
    }
    // The history reached every numbered table but the live banks' records.
    const numbered = (copy.json.sequences as Array<{ table: string }>).map((q) => q.table);
    const empty = copy.json.tables.filter((t: { table: string; source: number }) => numbered.includes(t.table) && t.source === 0).map((t: { table: string }) => t.table);
    assert.deepEqual(empty.sort(), ['bank_mismatches', 'bank_requests']);

    const cfg = { ...defaultConfig(), port: 0, host: '127.0.0.1', db: url, demo: false, simDelaySeconds: 0, webhookAllow: ['127.0.0.1/32'] };
    node = await startApp(cfg, { log: createLogger('silent') });
    const onCopy = onNode(s, node);
    const before = await rowCounts(onCopy, numbered.filter((t) => t !== 'event_positions'));
    const added = await runCli(['webhook', 'add', '--shop', s.demo.shopId, '--url', `${rcv.url}/copy`, '--webhook-allow', '127.0.0.1/32', '--db', url, '--json']);
    assert.equal(added.code, 0, added.err);
    await makeUser(onCopy, s.demo.merchantId, 'second@shop.example');
    await everyKindOfWrite(onCopy, rcv, user);
    const after = await rowCounts(onCopy, Object.keys(before));
    const untouched = Object.keys(before).filter((t) => after[t] <= before[t]);
    assert.deepEqual(untouched.sort(), ['bank_mismatches', 'bank_requests'], 'a write reached every other numbered table');
    assert.deepEqual(behindTheirTables(await pgCounters((sql) => node!.app.store.all(sql))), []);
    const doctor = await runCli(['doctor', '--db', url, '--json']);
    const counted = doctor.json.findings.find((f: { check: string }) => f.check === 'counters');
    assert.equal(counted.ok, true, counted.detail);
  } finally {
    await node?.close();
    await rcv.close();
    await s.close();
    await dropPgDatabase(url);
  }
});

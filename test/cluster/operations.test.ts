import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { kopekProcess, startCluster, type TestCluster } from '../helpers/cluster';
import { dropPgDatabase, freshPgDatabase, postgresOnly } from '../helpers/pg';
import { cabGet, cabPost, makeUser, postLogin, signIn, TEST_PASSWORD } from '../helpers/cabinet';
import type { TestServer } from '../helpers/server';
import { openEngine } from '../../src/platform/storage/maintenance';
import { SCHEMA_VERSION } from '../../src/platform/storage/migrations';

// The cluster's shared cabinet state, and how a node starts (or refuses to) on PostgreSQL.

const skip = postgresOnly();
let c: TestCluster;
before(async () => {
  if (!skip) c = await startCluster(3);
});
after(async () => {
  if (!skip) await c.close();
});

/** Node `i` as the cabinet helpers take a test server: requests, and the shared store for making users. */
function node(i: number): TestServer {
  return { request: c.nodes[i].request, store: c.store } as unknown as TestServer;
}

test('cabinet: a session made on A works on B and C; signing out on B ends it on every node', { skip }, async () => {
  await makeUser(node(0), c.demo.merchantId, 'owner@cluster.example');
  const session = await signIn(node(0), 'owner@cluster.example');
  for (const i of [1, 2]) assert.equal((await cabGet(node(i), session, '/cabinet/overview')).status, 200, `node ${i}`);
  const out = await cabPost(node(1), session, '/cabinet/logout');
  assert.equal(out.status, 303);
  for (const i of [0, 1, 2]) {
    const r = await cabGet(node(i), session, '/cabinet/overview');
    assert.equal(r.status, 303, `node ${i} still takes a signed-out session`);
  }
});

test('cabinet: failed sign-ins count across nodes: three wrong passwords on three nodes slow the fourth anywhere', { skip }, async () => {
  const email = 'slowed@cluster.example';
  await makeUser(node(0), c.demo.merchantId, email);
  for (const i of [0, 1, 2]) assert.equal((await postLogin(node(i), { email, password: 'wrong password!' })).status, 401, `node ${i}`);
  const fourth = await postLogin(node(1), { email, password: TEST_PASSWORD });
  assert.equal(fourth.status, 429, 'the fourth attempt waits, whichever node it reaches');
});

test('PostgreSQL needs KOPEK_MASTER_KEY: serve refuses without it, in one line, and writes no key file', { skip }, async () => {
  const url = await freshPgDatabase();
  try {
    const r = await kopekProcess(['serve', '--port', '0', '--db', url], { KOPEK_MASTER_KEY: '' });
    assert.notEqual(r.code, 0);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0], /KOPEK_MASTER_KEY/);
  } finally {
    await dropPgDatabase(url);
  }
});

test('a password in the database URL appears in no log line, error or --help output', { skip }, async () => {
  const url = await freshPgDatabase();
  const secret = 'pw-must-not-leak-4711';
  // Trust authentication takes any password: the URL with one still connects.
  const withPassword = url.replace('postgres://kopek@', `postgres://kopek:${secret}@`);
  try {
    const ok = await kopekProcess(['migrate', '--db', withPassword]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.ok(!(ok.stdout + ok.stderr).includes(secret), ok.stdout + ok.stderr);
    assert.match(ok.stdout, /postgres:\/\/kopek:\*\*\*@/);
    // Nothing listens on port 1: the error names the database without its password.
    const refused = await kopekProcess(['ledger', 'check', '--db', `postgres://kopek:${secret}@127.0.0.1:1/kopek`]);
    assert.notEqual(refused.code, 0);
    assert.ok(!(refused.stdout + refused.stderr).includes(secret), refused.stderr);
    assert.match(refused.stderr, /127\.0\.0\.1:1/);
    const help = await kopekProcess(['serve', '--help'], { KOPEK_DATABASE_URL: withPassword });
    assert.ok(!(help.stdout + help.stderr).includes(secret));
    const served = await kopekProcess(['serve', '--port', '0', '--db', `postgres://kopek:${secret}@127.0.0.1:1/kopek`]);
    assert.notEqual(served.code, 0);
    assert.ok(!(served.stdout + served.stderr).includes(secret), served.stderr);
  } finally {
    await dropPgDatabase(url);
  }
});

test('a node older than the database refuses to start, naming both schema versions', { skip }, async () => {
  const url = await freshPgDatabase();
  try {
    const store = await openEngine(url);
    await store.tx((tx) => tx.run('UPDATE kopek_schema SET version = 999'));
    await store.close();
    const r = await kopekProcess(['serve', '--port', '0', '--db', url]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /999/);
    assert.match(r.stderr, new RegExp(`\\b${SCHEMA_VERSION}\\b`));
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  } finally {
    await dropPgDatabase(url);
  }
});

test('sslmode is honoured: a server without TLS refuses sslmode=require, and the node says why without hanging', { skip }, async () => {
  const url = await freshPgDatabase();
  try {
    const r = await kopekProcess(['migrate', '--db', `${url}?sslmode=require`]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /SSL/i);
    const plain = await kopekProcess(['migrate', '--db', `${url}?sslmode=disable`]);
    assert.equal(plain.code, 0, plain.stderr);
  } finally {
    await dropPgDatabase(url);
  }
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { startTestServer, type TestServer } from '../helpers/server';
import { runCli } from '../helpers/cli';
import { startApp } from '../../src/app';
import { defaultConfig } from '../../src/platform/config';
import { createLogger } from '../../src/platform/log';
import { acquireServerLock } from '../../src/platform/storage/sqlite/server-lock';
import { sqliteOnly } from '../helpers/pg';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

test('two servers on one database file: the second refuses to start, and the first keeps its test clock', { skip: sqliteOnly('the server lock of a SQLite file; nodes share a PostgreSQL database on purpose') }, async () => {
  await s.request('POST', '/v1/test/clock/advance', { body: { seconds: 3600 } });
  await assert.rejects(
    startApp({ ...defaultConfig(), port: 0, db: s.dbPath, demo: false }, { log: createLogger('silent') }),
    /another kopek server is running on this database/,
  );
  const clock = await s.request('GET', '/v1/test/clock');
  assert.equal(clock.body.offset_seconds, 3600, 'the first server was not disturbed');
  const lock = `${s.dbPath}.lock`;
  assert.ok(existsSync(lock));
  assert.equal(statSync(lock).mode & 0o777, 0o600);
});

test('admin commands, doctor and backup keep working beside a running server', { skip: sqliteOnly('the server lock of a SQLite file') }, async () => {
  const doctor = await runCli(['doctor', '--db', s.dbPath, '--json']);
  assert.equal(doctor.code, 0, doctor.out + doctor.err);
  const keys = await runCli(['key', 'list', '--shop', s.demo.shopId, '--db', s.dbPath, '--json']);
  assert.equal(keys.code, 0, keys.err);
});

test('a lock left by a server that was killed is taken over; a restart on the same file works', { skip: sqliteOnly('the server lock of a SQLite file') }, async () => {
  const db = `${s.dir}/other.db`;
  // A process listening on the lock, killed with SIGKILL: its socket file stays, and nobody answers on it.
  const child = spawn(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(`${db}.lock`)}, () => console.log('up'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((r) => child.stdout!.once('data', () => r()));
  await assert.rejects(acquireServerLock(db), /another kopek server is running/, 'alive, it holds the lock');
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  assert.ok(existsSync(`${db}.lock`), 'the killed process left its socket file');
  const taken = await acquireServerLock(db);
  assert.equal(taken!.where, `${db}.lock`);
  await taken!.release();
  assert.ok(!existsSync(`${db}.lock`), 'a release removes the file');
  await s.restart();
  assert.equal((await s.request('GET', '/healthz', { key: null })).status, 200);
});

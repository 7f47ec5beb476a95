import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server';
import { sqliteOnly } from '../helpers/pg';

const ROOT = join(__dirname, '..', '..');

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

/** Another process that takes the database's write lock and holds it until told to let go. */
async function lockHolder(db: string): Promise<{ proc: ChildProcess; release(): Promise<void> }> {
  const code = `
    const Database = require(${JSON.stringify(join(ROOT, 'node_modules', 'better-sqlite3'))});
    const db = new Database(${JSON.stringify(db)});
    db.exec('BEGIN IMMEDIATE');
    process.stdout.write('locked\\n');
    process.stdin.once('data', () => { db.exec('ROLLBACK'); db.close(); process.exit(0); });`;
  const proc = spawn(process.execPath, ['-e', code], { stdio: ['pipe', 'pipe', 'inherit'] });
  await new Promise<void>((r) => proc.stdout!.once('data', () => r()));
  return {
    proc,
    release: () =>
      new Promise<void>((r) => {
        proc.once('exit', () => r());
        proc.stdin!.write('go\n');
      }),
  };
}

test('another process holding the write lock freezes nothing: reads and /healthz answer at once, the write waits and then commits', { skip: sqliteOnly('SQLite\'s one write lock per file') }, async () => {
  const existing = await s.request('POST', '/v1/public/payments', { body: { amount: 10_000 } });
  const holder = await lockHolder(s.dbPath);
  let created: Awaited<ReturnType<TestServer['request']>> | null = null;
  const pending = s.request('POST', '/v1/public/payments', { body: { amount: 20_000 } }).then((r) => (created = r));
  try {
    // While the write waits for the lock, the event loop keeps serving.
    for (let i = 0; i < 5; i++) {
      const started = Date.now();
      const health = await s.request('GET', '/healthz', { key: null });
      const read = await s.request('GET', `/v1/public/payments/${existing.body.payment.id}`);
      assert.equal(health.status, 200);
      assert.equal(read.status, 200);
      assert.ok(Date.now() - started < 1000, `reads took ${Date.now() - started} ms while the lock was held`);
    }
    assert.equal(created, null, 'the write could not commit while another process held the lock');
  } finally {
    await holder.release();
  }
  await pending;
  assert.equal(created!.status, 201, created!.text);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { spawnServer, type ChildServer } from '../helpers/child-server';

/** POST a keyed payment create; the status and the payment id, or the error that cut the request. */
async function create(url: string, key: string, idemKey: string): Promise<{ status: number; id?: string } | { error: string }> {
  try {
    const r = await fetch(`${url}/v1/public/payments`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'Idempotency-Key': idemKey },
      body: JSON.stringify({ amount: 15_000, order_id: 'crash-1', description: 'one payment, whatever happens' }),
      signal: AbortSignal.timeout(20_000),
    });
    const body = (await r.json()) as { payment?: { id: string } };
    return { status: r.status, id: body.payment?.id };
  } catch (err) {
    return { error: String(err) };
  }
}

async function start(db: string): Promise<ChildServer> {
  return spawnServer(['--db', db, '--log-level', 'silent']);
}

test('one Idempotency-Key raced by 50 requests, across a SIGKILL and a restart, makes one payment', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-idem-crash-'));
  const db = join(dir, 'kopek.db');
  try {
    const first = await start(db);
    const key = /test key\s+(sk_test_\S+)/.exec(first.stderr())?.[1];
    assert.ok(key, `no test key printed: ${first.stderr()}`);
    // 50 at once, and the server killed as soon as the key's record is on disk, with requests still in flight.
    const racing = Array.from({ length: 50 }, () => create(first.url, key, 'crash-key-1'));
    const watch = new Database(db, { readonly: true });
    try {
      const deadline = Date.now() + 10_000;
      while ((watch.prepare(`SELECT count(*) AS n FROM idempotency_keys WHERE key = 'crash-key-1'`).get() as { n: number }).n === 0) {
        assert.ok(Date.now() < deadline, 'the record was never written');
        await new Promise((r) => setImmediate(r));
      }
    } finally {
      watch.close();
    }
    first.proc.kill('SIGKILL');
    await first.exited;
    const before = await Promise.all(racing);
    const second = await start(db);
    try {
      const after = await Promise.all(Array.from({ length: 50 }, () => create(second.url, key, 'crash-key-1')));
      const answered = [...before, ...after].filter((r): r is { status: number; id?: string } => 'status' in r);
      assert.ok(after.every((r) => 'status' in r && (r.status === 200 || r.status === 201)), JSON.stringify(after));
      assert.ok(answered.filter((r) => r.status === 201).length <= 1, 'at most one request created it');
      const ids = new Set(answered.map((r) => r.id));
      assert.equal(ids.size, 1, `every answer names the same payment: ${[...ids].join(', ')}`);
    } finally {
      second.proc.kill('SIGTERM');
      await second.exited;
    }
    const check = new Database(db, { readonly: true });
    try {
      assert.equal((check.prepare(`SELECT count(*) AS n FROM payments WHERE order_id = 'crash-1'`).get() as { n: number }).n, 1);
      assert.equal((check.prepare(`SELECT count(*) AS n FROM idempotency_keys WHERE key = 'crash-key-1'`).get() as { n: number }).n, 1);
    } finally {
      check.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

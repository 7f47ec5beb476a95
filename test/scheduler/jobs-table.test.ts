import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, SCHEMA_VERSION } from '../../src/platform/storage/sqlite/open';
import type { Reader } from '../../src/platform/storage/store';
import { DUE, FIRST_KEY, NEXT_RUN_AT } from '../../src/platform/queue/jobs-table';
import { upgradeOldSqlite } from '../../src/platform/storage/sqlite/migrations-old';

const dir = mkdtempSync(join(tmpdir(), 'kopek-jobs-plan-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

/** A reader that records the statements the scheduler's reads send, and answers none. */
function recorder(): { q: Reader; seen: Array<{ sql: string; params: unknown[] }> } {
  const seen: Array<{ sql: string; params: unknown[] }> = [];
  const q: Reader = {
    engine: 'sqlite',
    get: async (sql: string, ...params: unknown[]) => {
      seen.push({ sql, params });
      return undefined;
    },
    all: async (sql: string, ...params: unknown[]) => {
      seen.push({ sql, params });
      return [];
    },
  };
  return { q, seen };
}

test('the due query and the next wake are one range of jobs_run in its order: no scan, no sort', async () => {
  const db = openDatabase(join(dir, 'plan.db'));
  try {
    // Enough rows that the planner's choice is the one it makes on a real table.
    const ins = db.prepare(`INSERT INTO jobs (kind, subject_id, shop_id, mode, due_at, run_at, payload, created_at, state, claim_until) VALUES ('k', ?, NULL, 'live', ?, ?, '{}', 0, ?, ?)`);
    db.transaction(() => {
      for (let i = 0; i < 5000; i++) ins.run(`s${i}`, i * 1000, i * 1000, i % 3 === 0 ? 'done' : 'pending', i % 7 === 0 ? i * 1000 + 30_000 : null);
    })();
    db.exec('ANALYZE');
    const { q, seen } = recorder();
    // The pass's bindings: after (run_at, run_at, id), now, threshold, limit.
    await q.all(DUE, FIRST_KEY.runAt, FIRST_KEY.runAt, FIRST_KEY.id, 2_000_000, 2_000_000, 1024);
    await q.all(DUE, 1_000_000, 1_000_000, 1001, 2_000_000, 2_000_000, 1024);
    await q.get(NEXT_RUN_AT, 2_000_000);
    assert.equal(seen.length, 3);
    for (const { sql, params } of seen) {
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map((r) => r.detail);
      const text = plan.join(' | ');
      assert.equal(plan.length, 1, text);
      assert.match(plan[0], /^SEARCH jobs USING INDEX jobs_run \(run_at>\? AND run_at<\?\)$|^SCAN jobs USING INDEX jobs_run$/, text);
      assert.doesNotMatch(text, /TEMP B-TREE/, text);
      // And it answers what it should: pending, due, claim free or lapsed, in (run_at, id) order.
      const rows = db.prepare(sql).all(...params) as Array<{ id?: number; run_at: number; state?: string; claim_until?: number | null }>;
      for (let i = 1; i < rows.length; i++) assert.ok(rows[i - 1].run_at <= rows[i].run_at);
      for (const r of rows) {
        if (r.state !== undefined) assert.equal(r.state, 'pending');
        if (r.claim_until !== undefined) assert.ok(r.claim_until === null || r.claim_until <= 2_000_000);
      }
    }
  } finally {
    db.close();
  }
});

test('migration 16 → 17 gives the jobs of an older database their claim columns, unclaimed', () => {
  const path = join(dir, 'old.db');
  let db = openDatabase(path);
  db.prepare(`INSERT INTO jobs (kind, subject_id, mode, due_at, run_at, created_at) VALUES ('k', 's', 'live', 1, 1, 1)`).run();
  // The database as version 16 left it: no claim columns.
  for (const c of ['claimed_by', 'claim_token', 'claim_until']) db.exec(`ALTER TABLE jobs DROP COLUMN ${c}`);
  db.pragma('user_version = 16');
  db.close();
  upgradeOldSqlite(path);
  db = openDatabase(path);
  try {
    assert.equal(db.pragma('user_version', { simple: true }), SCHEMA_VERSION);
    assert.ok(SCHEMA_VERSION >= 17);
    const row = db.prepare('SELECT state, claimed_by, claim_token, claim_until FROM jobs').get();
    assert.deepEqual({ ...(row as object) }, { state: 'pending', claimed_by: null, claim_token: null, claim_until: null });
  } finally {
    db.close();
  }
});

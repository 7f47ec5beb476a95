import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEngine } from '../../src/platform/storage/maintenance';
import type { Store } from '../../src/platform/storage/store';
import { createLogger } from '../../src/platform/log';
import { Clocks } from '../../src/platform/clock';
import { Scheduler } from '../../src/platform/queue/jobs';
import { fakeTime } from '../helpers/fake-time';
import { TEST_PG, freshPgDatabase, dropPgDatabase } from '../helpers/pg';

// Regression: a pass asked for while the running pass read its next wake (its last read) joined that pass and
// got its count, though the pass never looked at the table again. `kopek jobs retry` revived a job, the test
// ran the due jobs, and the job stayed unrun until the next re-read (seen on PostgreSQL, where that read takes
// a round trip).

/** `base` with its plain reads of the next wake held until `release()`; `reached` resolves when one waits. */
function gatedStore(base: Store): { store: Store; close(): void; reached: Promise<void>; release(): void } {
  let release!: () => void;
  let reach!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const reached = new Promise<void>((r) => (reach = r));
  let open = false;
  const store = new Proxy(base, {
    get(target, key) {
      const v = Reflect.get(target, key, target) as unknown;
      if (typeof v !== 'function') return v;
      if (key !== 'get') return v.bind(target);
      return async (sql: string, ...params: unknown[]) => {
        if (!open && sql.startsWith('SELECT run_at FROM jobs')) {
          reach();
          await gate;
        }
        return (v as (...a: unknown[]) => unknown).call(target, sql, ...params);
      };
    },
  });
  return {
    store,
    reached,
    release() {
      open = true;
      release();
    },
    close() {
      open = true;
      release();
    },
  };
}

test('a pass asked for while the running pass reads its next wake runs the jobs that became due meanwhile', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-joined-'));
  const db = TEST_PG ? await freshPgDatabase() : join(dir, 'kopek.db');
  const base = await openEngine(db);
  const gated = gatedStore(base);
  const time = fakeTime();
  const clocks = new Clocks(time.now);
  const sch = new Scheduler(gated.store, clocks, createLogger('error', () => undefined));
  const ran: string[] = [];
  sch.register('joined.run', async (tx, job) => {
    tx.afterCommit(() => ran.push(job.subject_id));
  });
  try {
    // The first pass (at the start) finds nothing and stops at its read of the next wake.
    sch.start();
    await gated.reached;
    // A job becomes due (written by another process, as `kopek jobs retry` does), and a run of the due jobs is asked for.
    await base.tx((tx) => tx.run(
      `INSERT INTO jobs (kind, subject_id, shop_id, mode, due_at, run_at, payload, created_at) VALUES ('joined.run', 'job-1', NULL, 'live', ?, ?, '{}', ?)`,
      time.now(),
      time.now(),
      time.now(),
    ));
    const second = sch.runDue();
    gated.release();
    assert.equal(await second, 1, 'the run asked for after the job was written ran it');
    assert.deepEqual(ran, ['job-1']);
  } finally {
    gated.close();
    await sch.stop();
    await base.close();
    if (TEST_PG) await dropPgDatabase(db);
    rmSync(dir, { recursive: true, force: true });
  }
});

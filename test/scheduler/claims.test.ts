import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { fakeTime } from '../helpers/fake-time';
import { openEngine } from '../../src/platform/storage/maintenance';
import { sqliteOnly } from '../helpers/pg';
import type { Store } from '../../src/platform/storage/store';
import { createLogger } from '../../src/platform/log';
import { Clocks, type Mode } from '../../src/platform/clock';
import { Scheduler } from '../../src/platform/queue/jobs';
import { REREAD_MS } from '../../src/platform/queue/jobs-table';

// Jobs live in the jobs table only, and a job run outside a transaction is claimed there by its process (a
// random process id, a token, claim_until a lease ahead). These tests play a second kopek process with a second
// connection to the same file and a scheduler of its own ("node A"); the test server is the other node. A
// process that stops renewing its claims (killed, or frozen) is played by moving the fake real time past the
// lease without letting its renewal timer run.

const LEASE_MS = 30_000;
const time = fakeTime();
let s: TestServer;
/** Which node completed each run of the shared kinds: `${node}:${payload n}`. */
let completed: string[] = [];
let syncRuns: number[] = [];

before(async () => {
  s = await startTestServer({ jobLeaseSeconds: LEASE_MS / 1000 }, { realNow: time.now });
  const sch = s.running.app.scheduler;
  sch.registerAsync('claims.io', {
    run: async (job) => job.payload.n as number,
    complete: async (_tx, _job, n: number) => {
      completed.push(`server:${n}`);
    },
  });
  sch.register('claims.sync', async (_tx, job) => {
    syncRuns.push(job.payload.n as number);
  });
});
after(() => s.close());

/** Another process on the same database file: its own connection, clock source, logger and scheduler. */
interface Node {
  store: Store;
  clocks: Clocks;
  scheduler: Scheduler;
  logs: string[];
  close(): Promise<void>;
}

async function otherNode(limits: { leaseMs?: number; rereadMs?: number } = {}): Promise<Node> {
  const logs: string[] = [];
  const store = await openEngine(s.dbPath);
  const clocks = new Clocks(time.now);
  const scheduler = new Scheduler(store, clocks, createLogger('debug', (l) => logs.push(l)), { leaseMs: LEASE_MS, ...limits });
  return {
    store,
    clocks,
    scheduler,
    logs,
    async close() {
      await scheduler.stop();
      await store.close();
    },
  };
}

/** Schedule a job through `store` and `scheduler` (the server's by default), due `in_ms` from now on the shop's clock. */
async function schedule(kind: string, n: number, o: { in_ms?: number; mode?: Mode; shopId?: string; via?: { store: Store; scheduler: Scheduler; clocks: Clocks } } = {}): Promise<number> {
  const via = o.via ?? s.running.app;
  const shopId = o.shopId ?? s.demo.shopId;
  const mode = o.mode ?? 'live';
  return via.store.tx(async (tx) =>
    via.scheduler.schedule(tx, { kind, subjectId: `claims-${n}`, shopId, mode, dueAt: (await via.clocks.now(tx, shopId, mode)) + (o.in_ms ?? 0), payload: { n } }),
  );
}

type JobClaim = { state: string; attempt: number; claimed_by: string | null; claim_token: string | null; claim_until: number | null; last_error: string | null };

async function row(id: number): Promise<JobClaim> {
  return (await s.store.get<JobClaim>('SELECT state, attempt, claimed_by, claim_token, claim_until, last_error FROM jobs WHERE id = ?', id))!;
}

/** Poll `cond` every 5 ms until it holds; fail after `limit_ms`. */
async function until(what: string, cond: () => Promise<boolean> | boolean, limit_ms = 10_000): Promise<void> {
  const deadline = Date.now() + limit_ms;
  while (!(await cond())) {
    if (Date.now() > deadline) assert.fail(`timed out after ${limit_ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A promise and its resolver. */
function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

test('a job held by a process that died runs once, on the first pass after its claim lapsed', async () => {
  completed = [];
  syncRuns = [];
  // Due a millisecond ahead (the fake clock stands still), so the server's own timer cannot take them before the claim below.
  const io = await schedule('claims.io', 1, { in_ms: 1 });
  const sync = await schedule('claims.sync', 2, { in_ms: 1 });
  // Claimed by a process that then died: it never renews and never completes.
  const until_ms = time.now() + LEASE_MS;
  await s.store.write(async (tx) => {
    await tx.run(`UPDATE jobs SET claimed_by = 'dead-process', claim_token = 'dead-token', claim_until = ? WHERE id IN (?, ?)`, until_ms, io, sync);
  });
  assert.equal(await s.running.app.scheduler.runDue(), 0, 'a claim that holds is left alone');
  time.advance(LEASE_MS - 1);
  assert.equal(await s.running.app.scheduler.runDue(), 0, 'still held a millisecond before it lapses');
  time.advance(1);
  assert.equal(await s.running.app.scheduler.runDue(), 2, 'both taken on the first pass after the lapse');
  assert.equal(await s.running.app.scheduler.runDue(), 0);
  assert.deepEqual(completed, ['server:1']);
  assert.deepEqual(syncRuns, [2]);
  for (const id of [io, sync]) assert.deepEqual(await row(id), { state: 'done', attempt: 0, claimed_by: null, claim_token: null, claim_until: null, last_error: null });
});

test('a run that never returns: its process is frozen past the lease, another takes the job over and runs it once; the late completion is dropped', async () => {
  completed = [];
  // Node A reads the table on its own only once: a frozen process takes no second look. (With the usual 2 s
  // re-read, a slow machine let A's next pass, after the clock moved, take its own lapsed claim back.)
  const a = await otherNode({ rereadMs: 3_600_000 });
  const hang = deferred<number>();
  try {
    let startedOnA = 0;
    let completedOnA = 0;
    a.scheduler.registerAsync('claims.io', {
      run: async () => {
        startedOnA++;
        return hang.promise;
      },
      complete: async () => {
        completedOnA++;
      },
      deadline_ms: 600_000,
    });
    const id = await schedule('claims.io', 3, { via: a });
    a.scheduler.start();
    // On PostgreSQL the claim commits before the run starts: wait for both.
    await until('node A to claim the job and start its run', async () => startedOnA > 0 && (await row(id)).claimed_by === a.scheduler.processId);
    const claimed = await row(id);
    assert.equal(claimed.claim_until, time.now() + LEASE_MS);
    assert.equal(startedOnA, 1);
    // The server sees the claim and leaves the job alone while it holds.
    assert.equal(await s.running.app.scheduler.runDue(), 0);
    // Node A stops renewing (killed, or frozen): the lease passes.
    time.advance(LEASE_MS);
    assert.equal(await s.running.app.scheduler.runDue(), 1, 'taken over once the claim lapsed');
    assert.deepEqual(completed, ['server:3']);
    assert.equal((await row(id)).state, 'done');
    assert.equal(await s.running.app.scheduler.runDue(), 0, 'and run once');
    // Node A comes back and its run answers: the completion names its token, which no longer holds.
    hang.resolve(3);
    await a.scheduler.idle();
    assert.equal(completedOnA, 0, "A's complete never ran");
    assert.ok(a.logs.some((l) => l.includes('job result dropped') && l.includes(`"job_id":${id}`)), a.logs.join('\n'));
    assert.deepEqual(completed, ['server:3']);
    const after = await row(id);
    assert.equal(after.state, 'done');
    assert.equal(after.attempt, 0);
  } finally {
    // A run left hanging would hold A's stop until its deadline (ten minutes).
    hang.resolve(0);
    await a.close();
  }
});

test('a long run renews its claim: no other process takes the job while it is in flight', async () => {
  completed = [];
  // A short lease on node A, in real time: its renewals (every third of it) must keep the job its own.
  const a = await otherNode({ leaseMs: 1500 });
  try {
    const done = deferred<number>();
    let completedOnA = 0;
    a.scheduler.registerAsync('claims.io', {
      run: async () => done.promise,
      complete: async () => {
        completedOnA++;
      },
    });
    const id = await schedule('claims.io', 4, { via: a });
    a.scheduler.start();
    await until('node A to claim the job', async () => (await row(id)).claimed_by === a.scheduler.processId);
    const first = (await row(id)).claim_until!;
    // Two leases of real time pass (renewals every 500 ms; a second of slack for a loaded machine); the (fake)
    // real time of both processes follows, and the server looks again and again.
    const t0 = Date.now();
    let last = t0;
    let renewed = false;
    while (Date.now() - t0 < 3000) {
      await new Promise((r) => setTimeout(r, 50));
      time.advance(Date.now() - last);
      last = Date.now();
      assert.equal(await s.running.app.scheduler.runDue(), 0, 'the server never takes a claim that is renewed');
      if ((await row(id)).claim_until! > first) renewed = true;
    }
    assert.ok(renewed, 'the claim was renewed');
    done.resolve(4);
    await until('node A to complete the job', async () => (await row(id)).state === 'done');
    assert.equal(completedOnA, 1);
    assert.deepEqual(completed, []);
  } finally {
    await a.close();
  }
});

test('stop() ends the runs in flight within their deadlines and leaves no claim: another process takes the job without waiting for the lease', async () => {
  completed = [];
  // The server's scheduler pauses meanwhile, so that node A is the one to claim the job (else the server's own
  // re-read may take it first).
  const server = s.running.app.scheduler;
  await server.stop();
  const a = await otherNode();
  let id = 0;
  try {
    a.scheduler.registerAsync('claims.io', {
      run: async () => new Promise<number>(() => {}),
      complete: async () => undefined,
      deadline_ms: 100,
    });
    id = await schedule('claims.io', 5, { via: a });
    a.scheduler.start();
    await until('node A to claim the job', async () => (await row(id)).claimed_by === a.scheduler.processId);
  } finally {
    // SIGTERM: the run in flight gets its deadline, then every claim still held is given up.
    await a.close();
  }
  const r = await row(id);
  assert.equal(r.state, 'pending');
  assert.deepEqual([r.claimed_by, r.claim_token, r.claim_until], [null, null, null]);
  assert.match(r.last_error ?? '', /timed out after 100 ms/);
  // Due again after its backoff (1 s), well within the lease: the server runs it then.
  time.advance(1000);
  server.start();
  assert.equal(await server.runDue(), 1);
  assert.deepEqual(completed, ['server:5']);
});

test('a clock advance claims its shop\'s due jobs and the ones they schedule within it, and gives up what it did not run', async () => {
  syncRuns = [];
  const shop = await s.newShop();
  const sch = s.running.app.scheduler;
  const claimsSeen: Array<string | null> = [];
  sch.register('claims.chain', async (tx, job) => {
    // While it runs, the job is claimed by the advance (no pass elsewhere takes it off the shop's clock).
    claimsSeen.push((await tx.get<{ t: string | null }>('SELECT claim_token AS t FROM jobs WHERE id = ?', job.id))!.t);
    const n = job.payload.n as number;
    const next = (await s.running.app.clocks.now(tx, job.shop_id, job.mode)) + 60_000;
    await sch.schedule(tx, { kind: n < 3 ? 'claims.chain' : 'claims.sync', subjectId: `chain-${n}`, shopId: job.shop_id, mode: job.mode, dueAt: next, payload: { n: n + 1 } });
  });
  await schedule('claims.chain', 1, { mode: 'test', shopId: shop.shopId, in_ms: 60_000 });
  await schedule('claims.sync', 99, { mode: 'test', shopId: shop.shopId, in_ms: 3_600_000 });
  // Minutes 1, 2 and 3 run a chain; the sync job it schedules last is due at minute 4, after the advance.
  const r = await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: 200 } });
  assert.equal(r.body.jobs_run, 3);
  assert.equal(claimsSeen.length, 3);
  assert.ok(claimsSeen.every((t) => t !== null && t === claimsSeen[0]), `one advance token: ${claimsSeen.join(', ')}`);
  const left = await s.store.all<{ kind: string; claim_token: string | null }>(`SELECT kind, claim_token FROM jobs WHERE shop_id = ? AND state = 'pending' ORDER BY due_at`, shop.shopId);
  assert.deepEqual(left, [
    { kind: 'claims.sync', claim_token: null },
    { kind: 'claims.sync', claim_token: null },
  ]);
  assert.deepEqual(syncRuns, []);
});

test('a job written by another connection (an admin command) is run by the server within the re-read interval, untold', async () => {
  syncRuns = [];
  const admin = await openEngine(s.dbPath);
  let id = 0;
  try {
    // Scheduled through a scheduler that is not running, as a process without one writes a job.
    const quiet = new Scheduler(admin, new Clocks(time.now), createLogger('silent'));
    id = await schedule('claims.sync', 9, { via: { store: admin, scheduler: quiet, clocks: new Clocks(time.now) } });
  } finally {
    await admin.close();
  }
  const t0 = Date.now();
  await until('the server to run the job', async () => (await row(id)).state === 'done', REREAD_MS * 5);
  assert.ok(Date.now() - t0 <= REREAD_MS + 1000, `found after ${Date.now() - t0} ms`);
  assert.deepEqual(syncRuns, [9]);
});

test('a clock advance through one process is seen by another: the offset row, its clock, and the jobs that moved with it', async () => {
  syncRuns = [];
  const shop = await s.newShop();
  const id = await schedule('claims.sync', 10, { mode: 'test', shopId: shop.shopId, in_ms: 2 * 3_600_000 });
  const r = await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: 3600 } });
  assert.equal(r.body.jobs_run, 0);
  const a = await otherNode();
  try {
    const offset = await a.store.get<{ o: number }>('SELECT test_clock_offset_ms AS o FROM shops WHERE id = ?', shop.shopId);
    assert.equal(offset!.o, 3_600_000);
    assert.equal(await a.clocks.now(a.store, shop.shopId, 'test'), time.now() + 3_600_000);
    assert.equal(await a.store.tx(async (tx) => a.clocks.now(tx, shop.shopId, 'test')), time.now() + 3_600_000);
    assert.equal(await a.clocks.now(a.store, shop.shopId, 'live'), time.now());
    // The job waits an hour of real time now, not two: node A's own pass finds it then.
    const job = await a.store.get<{ due_at: number; run_at: number }>('SELECT due_at, run_at FROM jobs WHERE id = ?', id);
    assert.equal(job!.due_at - job!.run_at, 3_600_000);
    a.scheduler.register('claims.sync', async (_tx, j) => {
      syncRuns.push(j.payload.n as number);
    });
    a.scheduler.start();
    time.advance(3_600_000);
    await until('one of the two processes to run the job', async () => (await row(id)).state === 'done');
    await a.scheduler.runDue();
    await s.running.app.scheduler.runDue();
    // (An hour of real time also brings the earlier tests' later jobs due: they run too.)
    assert.equal(syncRuns.filter((n) => n === 10).length, 1, 'run once, by whichever process got there first');
  } finally {
    await a.close();
  }
});

test('a job this process commits for now runs at once: the commit moves the timer, no re-read needed', async () => {
  syncRuns = [];
  // A pass just ran: the next re-read is REREAD_MS away (and the clock jumped an hour in the test before: the
  // timer's wake is kept on the monotonic clock, so the jump does not hide that it is still that far away).
  await s.running.app.scheduler.runDue();
  const t0 = Date.now();
  const id = await schedule('claims.sync', 11);
  await until('the timer to run the job', async () => (await row(id)).state === 'done', REREAD_MS * 5);
  assert.ok(Date.now() - t0 < REREAD_MS / 2, `ran after ${Date.now() - t0} ms ${s.logs.filter((l) => /"(warn|error)"/.test(l)).slice(-5).join('\n')}`);
  assert.deepEqual(syncRuns, [11]);
});

test(
  'a server restarted on its file (holding the server lock) takes the claims its dead predecessor left at once',
  { skip: sqliteOnly('the server lock of a file proves no other process holds claims; nodes of a PostgreSQL database wait for the lease') },
  async () => {
  completed = [];
  const { scheduler, clocks } = s.running.app;
  const shopId = s.demo.shopId;
  // The previous server's claim, written with its job (so that no pass of that server runs it first).
  const id = await s.store.tx(async (tx) => {
    const j = await scheduler.schedule(tx, { kind: 'claims.io', subjectId: 'claims-12', shopId, mode: 'live', dueAt: await clocks.now(tx, shopId, 'live'), payload: { n: 12 } });
    await tx.run(`UPDATE jobs SET claimed_by = 'gone', claim_token = 'gone-token', claim_until = ? WHERE id = ?`, time.now() + LEASE_MS, j);
    return j;
  });
  // Due later: claimed below by a process alive after the new server started.
  const other = await schedule('claims.io', 13, { in_ms: 5000 });
  await s.running.close();
  time.advance(1);
  await s.restart();
  s.running.app.scheduler.registerAsync('claims.io', {
    run: async (job) => job.payload.n as number,
    complete: async (_tx, _job, n: number) => {
      completed.push(`server:${n}`);
    },
  });
  await s.store.write(async (tx) => {
    await tx.run(`UPDATE jobs SET claimed_by = 'alive', claim_token = 'alive-token', claim_until = ? WHERE id = ?`, time.now() + LEASE_MS, other);
  });
  await s.running.app.scheduler.runDue();
  assert.deepEqual(completed, ['server:12']);
  assert.equal((await row(id)).state, 'done');
  time.advance(5000);
  await s.running.app.scheduler.runDue();
  assert.deepEqual(completed, ['server:12'], 'a claim made since the start holds until it lapses');
  assert.equal((await row(other)).claimed_by, 'alive');
  time.advance(LEASE_MS);
  await s.running.app.scheduler.runDue();
  assert.deepEqual(completed, ['server:12', 'server:13']);
  },
);

import { randomUUID } from 'node:crypto';
import type { Reader, Tx } from '../storage/store';
import type { Mode } from '../clock';
import { CLAIM, claimShopDue, dueForShop, holdShop, type Around, type JobRow, type RunClaim } from './jobs-table';
import { toJob, type Executor, type Refetch } from './executor';

/** True when row `a` runs before row `b`: due order, ties by id. */
function before(a: { due_at: number; id: number }, b: { due_at: number; id: number }): boolean {
  return a.due_at < b.due_at || (a.due_at === b.due_at && a.id < b.id);
}

/**
 * The body of Scheduler.runDueUpTo: run every job of one shop's mode due by the moment `upTo` returns, in due
 * order, with the jobs they create; each inside `around` at its due time (never earlier than a job already run).
 * Resolves with the number of runs.
 *
 * `upTo` runs in the transaction that claims those jobs (a token of its own, renewed while the run goes on), so
 * what it writes commits with the claims and every process's passes leave the jobs to this run. Jobs its jobs
 * schedule for the shop by that moment, and retries within it, are written claimed too (Scheduler.schedule) and
 * handed to the run, which merges those due within the read's range into the rows still to run instead of
 * reading again (a year of subscription charges spent most of its time there). Jobs others schedule meanwhile
 * wait for the next read; a due job another process holds is waited for until it ends or its claim lapses; what
 * the run did not run is released at the end.
 */
export async function runShopJobs(d: Executor, shopId: string, mode: Mode, upTo: (tx: Tx) => Promise<number>, around: Around): Promise<number> {
  const fresh: JobRow[] = [];
  const claim: RunClaim = { by: d.processId, token: randomUUID(), shopId, mode, dueBy: 0, around, scheduled: (row) => fresh.push(row) };
  const token = claim.token;
  await d.store.tx(async (tx) => {
    claim.dueBy = await upTo(tx);
    await claimShopDue(tx, shopId, mode, claim.dueBy, d.threshold(), { by: d.processId, token, until: d.clocks.real() + d.limits.leaseMs });
  });
  d.advanceTokens.add(token);
  let renewing: Promise<void> | null = null;
  const renew = setInterval(() => {
    if (renewing || !d.store.isOpen) return;
    const until = d.clocks.real() + d.limits.leaseMs;
    renewing = d.store
      .write((tx) => holdShop(tx, shopId, mode, token, until))
      .catch((err: unknown) => d.log.error('cannot renew the claims of a clock advance', { shop_id: shopId, error: String((err as Error)?.message ?? err) }))
      .finally(() => {
        renewing = null;
      });
  }, Math.max(1, Math.floor(d.limits.leaseMs / 3)));
  renew.unref();
  try {
    return await runAll(d, claim, fresh);
  } finally {
    fresh.length = 0;
    clearInterval(renew);
    await renewing;
    // What is left claimed (a job the run did not get to, a retry beyond it) is anyone's again at once.
    if (d.store.isOpen) await d.store.tx((tx) => holdShop(tx, shopId, mode, token, null));
    d.advanceTokens.delete(token);
  }
}

/** What one run carries from batch to batch. */
interface RunState {
  claim: RunClaim;
  fresh: JobRow[];
  ran: number;
  /** The due time the run has reached: a job runs at its own, never earlier than one already run. */
  reached: number;
  /** Runs this run waits for: async jobs it started, runs a pass started. */
  waiting: Array<Promise<void>>;
  sliceStart: number;
  /** The last row of the current read when it was cut at the batch size: later jobs wait for the next read. */
  bound: JobRow | null;
}

/** True when the run may run the row: unclaimed, lapsed, or claimed by the run. */
function mine(st: RunState, r: JobRow, threshold: number): boolean {
  return r.claim_until === null || r.claim_until <= threshold || r.claim_token === st.claim.token;
}

async function runAll(d: Executor, claim: RunClaim, fresh: JobRow[]): Promise<number> {
  const { shopId, mode } = claim;
  const st: RunState = { claim, fresh, ran: 0, reached: -Infinity, waiting: [], sliceStart: performance.now(), bound: null };
  const refetch = makeRefetch(d, st);
  while (!d.stopped) {
    await yieldAfterSlice(d, st);
    const now = await d.clocks.now(d.store, shopId, mode);
    // Everything scheduled so far is in the table and this read sees it.
    fresh.length = 0;
    const read = await dueForShop(d.store, shopId, mode, now, d.limits.batch);
    const threshold = d.threshold();
    st.bound = read.length === d.limits.batch ? read[read.length - 1] : null;
    const list: JobRow[] = [];
    let heldElsewhere = false;
    for (const r of read) {
      const inFlight = d.runner.inflight.get(r.id);
      // Already running here (started by a pass): wait for that run instead of starting another.
      if (inFlight) st.waiting.push(inFlight);
      else if (mine(st, r, threshold)) list.push(r);
      else heldElsewhere = true;
    }
    if (list.length > 0) await runList(d, st, list, refetch);
    else if (st.waiting.length > 0) await Promise.all(st.waiting.splice(0));
    else if (!heldElsewhere) break;
    // Due jobs another process holds: they end there, or their claim lapses and they are this run's.
    else await new Promise<void>((resolve) => setTimeout(resolve, d.limits.heldPollMs));
  }
  await Promise.all(st.waiting);
  return st.ran;
}

/** A long run yields between batches so other shops' requests are still answered. */
async function yieldAfterSlice(d: Executor, st: RunState): Promise<void> {
  if (performance.now() - st.sliceStart <= d.limits.sliceMs) return;
  await new Promise<void>((resolve) => setImmediate(resolve));
  st.sliceStart = performance.now();
}

/** Run the rows of one read in due order: async jobs one by one, sync jobs in shared transactions. */
async function runList(d: Executor, st: RunState, first: JobRow[], refetch: Refetch): Promise<void> {
  let list = first;
  let seq = d.seq;
  let i = 0;
  while (i < list.length && !d.stopped) {
    if (d.seq !== seq) {
      // Jobs were scheduled outside a batch (an async job's start, a request while this run yielded).
      list = await refetch(d.store, list.slice(i), false);
      i = 0;
      seq = d.seq;
      if (list.length === 0) break;
    }
    const row = list[i];
    const kind = d.kinds.get(row.kind)?.async;
    if (kind) {
      const at = Math.max(st.reached, row.due_at);
      // Claimed in a transaction of its own (a run a pass started is joined), then started.
      const c = d.claimOf();
      const threshold = d.threshold();
      const had = d.runner.inflight.get(row.id);
      i++;
      if (!had && (await d.store.write((tx) => tx.run(CLAIM, c.by, c.token, c.until, row.id, threshold, st.claim.token))).changes === 0) continue;
      st.reached = at;
      st.waiting.push(had ?? d.runner.start(row, toJob(row), kind, c.token, { run: st.claim, at }));
      st.ran++;
      continue;
    }
    // Sync jobs up to the next async one share a transaction (of at most txMs); one that schedules jobs has
    // them merged into the rows still to run, and the batch goes on with that list.
    const out = await d.runBatch(list, i, { token: st.claim.token, run: st.claim, floor: st.reached, refetch });
    st.ran += out.ran;
    st.reached = out.moment;
    list = out.list;
    i = out.reached;
    if (out.stale) seq = d.seq;
    await yieldAfterSlice(d, st);
  }
}

/**
 * The jobs scheduled since the last look that are due within this read's range join the rows still to run,
 * in due order. `whole`: they were all scheduled by the batch now running, which commits or rolls back as one.
 * `q`: the batch's transaction when a batch asks, else the store.
 */
function makeRefetch(d: Executor, st: RunState): Refetch {
  return async (q: Reader, rest: JobRow[], whole: boolean): Promise<JobRow[]> => {
    const due = await d.clocks.now(q, st.claim.shopId, st.claim.mode);
    const threshold = d.threshold();
    const bound = st.bound;
    for (const f of st.fresh.splice(0)) {
      if (f.due_at > due || (bound && before(bound, f))) continue;
      // A job of a batch that commits whole exists as it was written. Otherwise read it again: a job rolled back
      // with its savepoint is gone, and its id may belong to a later job.
      const r = whole ? f : await q.get<JobRow>(`SELECT * FROM jobs WHERE id = ?`, f.id);
      if (!r || r.state !== 'pending' || r.due_at > due || d.runner.inflight.has(r.id) || !mine(st, r, threshold)) continue;
      if (bound && before(bound, r)) continue;
      insertSorted(rest, r);
    }
    return rest;
  };
}

/**
 * Put a row into a sorted list of up to a batch at its place (sorting the whole list again for every job that
 * schedules one cost more than the job's own statements); a row already there is left alone.
 */
function insertSorted(rest: JobRow[], r: JobRow): void {
  let lo = 0;
  let hi = rest.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (before(rest[mid], r)) lo = mid + 1;
    else hi = mid;
  }
  if (lo < rest.length && rest[lo].id === r.id) return;
  rest.splice(lo, 0, r);
}

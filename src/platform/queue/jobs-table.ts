import type { Reader, Tx } from '../storage/store';
import { deadJobsByKind, pendingJobsByKind } from '../storage/dialect';
import { TX_BASE, type Mode } from '../clock';

/** A job as its handler sees it. */
export interface Job {
  id: number;
  kind: string;
  subject_id: string;
  shop_id: string | null;
  mode: Mode;
  /** On the shop's test clock in test mode. */
  due_at: number;
  /** Failed runs before this one. */
  attempt: number;
  payload: Record<string, unknown>;
}

/** What a state change asks for: run `kind` on `subjectId` at `dueAt` (on the shop's clock in test mode). */
export interface JobSpec {
  kind: string;
  subjectId: string;
  shopId: string | null;
  mode: Mode;
  dueAt: number;
  payload?: Record<string, unknown>;
}

export interface StartOptions {
  /** The only server of the database (SQLite: it holds the server lock): claims made before its start are a gone process's, lapsed at once. */
  sole?: boolean;
}

export interface SchedulerLimits {
  /** Async jobs running at once in this process; the rest wait in the table, unclaimed, for a slot (or another process). */
  maxAsyncRunning: number;
  /** Jobs read per query and run per transaction, at most (txMs is what usually ends a transaction). */
  batch: number;
  /**
   * Longest a batch runs in one transaction (at least one job runs): this bounds the WAL a long advance writes
   * between checkpoints, and each commit costs a WAL sync, so it is not much shorter than that sync.
   */
  txMs: number;
  /** Longest stretch of job running before yielding to the event loop, so requests keep being served. */
  sliceMs: number;
  /** How often the table is read again whatever this process knows: other processes' jobs and lapsed claims are found within this. */
  rereadMs: number;
  /** How long a claim holds without renewal (`--job-lease`); its process renews it every third of that. */
  leaseMs: number;
  /** How often an advance looks again at due jobs of its shop that another process holds. */
  heldPollMs: number;
  /** Delay before the first retry; doubles per failure up to maxBackoffMs. */
  backoffMs: number;
  maxBackoffMs: number;
}

/** The periodic re-read of the jobs table, in ms (see SchedulerLimits.rereadMs). */
export const REREAD_MS = 2_000;

export const DEFAULT_LIMITS: SchedulerLimits = {
  maxAsyncRunning: 16,
  batch: 1024,
  txMs: 50,
  sliceMs: 5,
  rereadMs: REREAD_MS,
  leaseMs: 30_000,
  heldPollMs: 50,
  backoffMs: 1000,
  maxBackoffMs: 3_600_000,
};

/** A row of the jobs table as stored (payload still JSON text). */
export interface JobRow extends Omit<Job, 'payload'> {
  run_at: number;
  payload: string;
  /** Waiting (first run or a retry), finished, given up, or cancelled. */
  state: 'pending' | 'done' | 'dead' | 'cancelled';
  last_error: string | null;
  created_at: number;
  finished_at: number | null;
  /** The claiming process's id, its claim's token and when the claim lapses (real time); null when unclaimed. */
  claimed_by: string | null;
  claim_token: string | null;
  claim_until: number | null;
}

/** A claim as written on a job: the process, the claim's token, the real time it lapses at. */
export interface Claim {
  by: string;
  token: string;
  until: number;
}

/** What wraps each job of a shop's run, in the job's transaction, at the moment the run has reached (`at`). */
export type Around = <T>(tx: Tx, at: number, body: () => Promise<T>) => Promise<T>;

/** The claim a shop's run (Scheduler.runDueUpTo) holds on the shop's jobs due by `dueBy`, as its jobs' transactions carry it. */
export interface RunClaim {
  /** The claiming process's id, and the run's token. */
  by: string;
  token: string;
  shopId: string;
  mode: Mode;
  /** On the shop's clock: jobs due by then are the run's to run, and so are those its jobs schedule by then. */
  dueBy: number;
  around: Around;
  /** A job was written claimed by the run (by one of its jobs), as the row stands. */
  scheduled(row: JobRow): void;
}

/** The run each transaction is running a job of: keyed by the transaction (a job's view of it reads the same). */
const runs = new WeakMap<object, RunClaim>();

/** The run whose job runs in `tx` now, if any. */
export function runOf(tx: Tx): RunClaim | undefined {
  return runs.get((tx as { [TX_BASE]?: Tx })[TX_BASE] ?? tx);
}

/** Run `body` in `tx` as a job of `run` at the moment `at`, wrapped in the run's `around`. */
export async function inRun<T>(tx: Tx, run: RunClaim, at: number, body: () => Promise<T>): Promise<T> {
  const key = (tx as { [TX_BASE]?: Tx })[TX_BASE] ?? tx;
  const before = runs.get(key);
  runs.set(key, run);
  try {
    return await run.around(tx, at, body);
  } finally {
    if (before === undefined) runs.delete(key);
    else runs.set(key, before);
  }
}

/** A position in (run_at, id) order, where a pass over the due jobs has got to. */
export interface JobKey {
  runAt: number;
  id: number;
}

export const FIRST_KEY: JobKey = { runAt: -8.64e15, id: 0 };

/** A claim is free when it lapsed by the threshold: the real time now, or later for a sole server (Scheduler.start). */
const FREE = `(claim_until IS NULL OR claim_until <= ?)`;
const UNCLAIM = `claimed_by = NULL, claim_token = NULL, claim_until = NULL`;

/**
 * Write a pending job (claimed when a claim is bound), run at its due time less the shop's test clock offset.
 * Binds kind, subject, shop, mode, due, due, shop, mode, payload, created, the claim's three; returns id, run_at.
 */
export const INSERT = `INSERT INTO jobs (kind, subject_id, shop_id, mode, due_at, run_at, payload, created_at, claimed_by, claim_token, claim_until)
  VALUES (?, ?, ?, ?, ?, ? - coalesce((SELECT test_clock_offset_ms FROM shops WHERE id = ? AND CAST(? AS TEXT) = 'test'), 0), ?, ?, ?, ?, ?) RETURNING id, run_at`;

/** Cancel the pending jobs of a kind for a subject: binds finished_at, subject, kind. */
export const CANCEL = `UPDATE jobs SET state = 'cancelled', finished_at = ? WHERE subject_id = ? AND kind = ? AND state = 'pending'`;

/** The earliest due time of a subject's pending jobs of a kind: binds subject, kind. */
export const NEXT_DUE = `SELECT min(due_at) AS due FROM jobs WHERE subject_id = ? AND kind = ? AND state = 'pending'`;

/** A job's state and claim (binds id): whether it may still run where it is about to. */
export const RUNNABLE = `SELECT state, claim_token, claim_until FROM jobs WHERE id = ?`;

/**
 * Mark a sync job done in the transaction that ran it, and drop its claim, if it is still pending and its claim
 * free, lapsed or the caller's. `cancelled` too: the job was pending when it started, so only the job itself can
 * have cancelled it (a status check scheduling the next one). Binds finished_at, id, threshold, token.
 */
export const DONE = `UPDATE jobs SET state = 'done', finished_at = ?, ${UNCLAIM}
  WHERE id = ? AND state IN ('pending', 'cancelled') AND (claim_token IS NULL OR claim_until <= ? OR claim_token = ?)`;

/** Mark an async job done under its claim (binds finished_at, id, token); no change: the claim was taken over. */
export const FINISH = `UPDATE jobs SET state = 'done', finished_at = ?, ${UNCLAIM} WHERE id = ? AND claim_token = ? AND state = 'pending'`;

/** Claim one pending job whose claim is free, lapsed or `own`: binds by, token, until, id, threshold, own. */
export const CLAIM = `UPDATE jobs SET claimed_by = ?, claim_token = ?, claim_until = ? WHERE id = ? AND state = 'pending' AND (claim_until IS NULL OR claim_until <= ? OR claim_token = ?)`;

/** Renew a claim (binds until, id, token); no change: the job is no longer the claim's. */
export const RENEW = `UPDATE jobs SET claim_until = ? WHERE id = ? AND claim_token = ? AND state = 'pending'`;

/** Give a claim up (binds id, token): another process may take the job at once. */
export const RELEASE = `UPDATE jobs SET ${UNCLAIM} WHERE id = ? AND claim_token = ?`;

/** The next wake: the earliest run time of a pending job whose claim is free or lapsed (binds threshold). */
export const NEXT_RUN_AT = `SELECT run_at FROM jobs WHERE state = 'pending' AND ${FREE} ORDER BY run_at, id LIMIT 1`;

/** Pending jobs due by now, their claim free, after a key in (run_at, id) order: one range of the partial index `jobs_run`. Binds the key's run_at twice and id, now, threshold, limit. */
export const DUE = `SELECT * FROM jobs WHERE state = 'pending' AND run_at >= ? AND (run_at > ? OR id > ?) AND run_at <= ? AND ${FREE} ORDER BY run_at, id LIMIT ?`;

/**
 * PostgreSQL's claim of the due jobs among ids (read with `due`): one statement, run on its own at READ COMMITTED
 * (a claim guards no money; the jobs then run in transactions that name its token). `FOR UPDATE SKIP LOCKED`
 * passes over the rows another node's claim is taking, and a row changed meanwhile is checked again once
 * locked, so a job is claimed once. Not the jobs under the held tokens (this process's advances). Binds by,
 * token, until, ids, threshold, held tokens; returns the rows claimed.
 */
export const CLAIM_DUE = `UPDATE jobs SET claimed_by = ?, claim_token = ?, claim_until = ? WHERE id IN (
    SELECT id FROM jobs WHERE id = ANY(?) AND state = 'pending' AND ${FREE} AND (claim_token IS NULL OR claim_token <> ALL(?))
    FOR UPDATE SKIP LOCKED)
  RETURNING *`;

/** A shop's pending jobs of a mode due by a time on its clock, in due order, claimed or not: binds shop, mode, due, limit. */
export const SHOP_DUE = `SELECT * FROM jobs WHERE shop_id = ? AND mode = ? AND state = 'pending' AND due_at <= ? ORDER BY due_at, id LIMIT ?`;

/** An advance's claim on its shop's pending jobs due by a time whose claim is free or lapsed: binds by, token, until, shop, mode, due, threshold. */
export const CLAIM_SHOP = `UPDATE jobs SET claimed_by = ?, claim_token = ?, claim_until = ? WHERE shop_id = ? AND mode = ? AND state = 'pending' AND due_at <= ? AND ${FREE}`;

/** Renew every claim of an advance on its shop's jobs (binds until, shop, mode, token), or give them all up (binds shop, mode, token). */
export const RENEW_SHOP = `UPDATE jobs SET claim_until = ? WHERE shop_id = ? AND mode = ? AND state = 'pending' AND claim_token = ?`;
export const RELEASE_SHOP = `UPDATE jobs SET ${UNCLAIM} WHERE shop_id = ? AND mode = ? AND state = 'pending' AND claim_token = ?`;

/** Jobs of one kind in one condition, for `kopek jobs`. */
export interface JobCount {
  kind: string;
  pending: number;
  retrying: number;
  dead: number;
}

/** Counts per kind: pending first runs, pending retries (attempt > 0), dead. */
export async function countJobs(q: Reader): Promise<JobCount[]> {
  // Two reads through partial indexes (pending jobs, failing jobs): finished rows are never read.
  const byKind = new Map<string, JobCount>();
  const at = (kind: string): JobCount => {
    let c = byKind.get(kind);
    if (!c) byKind.set(kind, (c = { kind, pending: 0, retrying: 0, dead: 0 }));
    return c;
  };
  for (const r of await pendingJobsByKind(q)) Object.assign(at(r.kind), { pending: r.pending, retrying: r.retrying });
  for (const r of await deadJobsByKind(q)) at(r.kind).dead = r.dead;
  return [...byKind.values()].sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));
}

/** Dead jobs and jobs that failed and wait for a retry, newest failure first. */
export function failingJobs(q: Reader, limit: number): Promise<JobRow[]> {
  return q.all<JobRow>(
    `SELECT * FROM jobs WHERE state = 'dead' OR (state = 'pending' AND attempt > 0) ORDER BY coalesce(finished_at, run_at) DESC, id DESC LIMIT ?`,
    limit,
  );
}

/** Bring a dead job back: pending, attempt 0, due now on its clock, unclaimed, in the caller's transaction. The server's re-read picks it up. */
export async function reviveJob(tx: Tx, id: number, real_ms: number): Promise<JobRow> {
  const row = await tx.get<JobRow>(`SELECT * FROM jobs WHERE id = ?`, id);
  if (!row) throw new Error(`cannot retry job ${id}: no such job`);
  if (row.state !== 'dead') throw new Error(`cannot retry job ${id}: it is ${row.state}, not dead`);
  return (await tx.get<JobRow>(
    `UPDATE jobs SET state = 'pending', attempt = 0, run_at = ?, finished_at = NULL, ${UNCLAIM},
       due_at = ? + coalesce((SELECT test_clock_offset_ms FROM shops WHERE id = jobs.shop_id AND jobs.mode = 'test'), 0)
     WHERE id = ? RETURNING *`,
    real_ms,
    real_ms,
    id,
  ))!;
}

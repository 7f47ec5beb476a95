import type { Reader, Tx } from '../storage/store';
import { deadJobsByKind, pendingJobsByKind } from '../storage/dialect';
import type { Mode } from '../clock';

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

/** A row of the jobs table as stored (payload still JSON text). */
export interface JobRow {
  id: number;
  kind: string;
  subject_id: string;
  shop_id: string | null;
  mode: Mode;
  due_at: number;
  run_at: number;
  attempt: number;
  payload: string;
  state: JobState;
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

/** Where a job is in its life: waiting (first run or a retry), finished, given up, or cancelled. */
export type JobState = 'pending' | 'done' | 'dead' | 'cancelled';

/** A position in (run_at, id) order, where a pass over the due jobs has got to. */
export interface JobKey {
  runAt: number;
  id: number;
}

/** The position before every job. */
export const FIRST_KEY: JobKey = { runAt: -8.64e15, id: 0 };

/**
 * A claim counts as free when it lapsed: `claim_until <= threshold`. The threshold is the real time now, or
 * later for a server that knows every claim made before its start belongs to a dead process (see
 * Scheduler.start): SQL binds it once per statement.
 */
const FREE = `(claim_until IS NULL OR claim_until <= ?)`;

/**
 * The SQL of the scheduler. Every method takes where it reads or writes: a transaction body's `tx`, or the
 * store for reads outside any transaction. Writes take the caller's transaction.
 */
export class JobsTable {
  /** Insert a pending job in the caller's transaction, claimed when `claim` is given; returns its id. */
  async insert(
    tx: Tx,
    kind: string,
    subjectId: string,
    shopId: string | null,
    mode: Mode,
    dueAt: number,
    runAt: number,
    payload: string,
    createdAt: number,
    claim: Claim | null,
  ): Promise<number> {
    const info = await tx.run(
      `INSERT INTO jobs (kind, subject_id, shop_id, mode, due_at, run_at, payload, created_at, claimed_by, claim_token, claim_until)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
      kind, subjectId, shopId, mode, dueAt, runAt, payload, createdAt, claim?.by ?? null, claim?.token ?? null, claim?.until ?? null,
    );
    return Number(info.lastInsertRowid);
  }

  /** Cancel the pending jobs of a kind for a subject; returns their ids. */
  async cancel(tx: Tx, kind: string, subjectId: string, now_ms: number): Promise<number[]> {
    const ids = (await tx.all<{ id: number }>(`SELECT id FROM jobs WHERE subject_id = ? AND kind = ? AND state = 'pending'`, subjectId, kind)).map((r) => r.id);
    if (ids.length > 0) {
      await tx.run(`UPDATE jobs SET state = 'cancelled', finished_at = ? WHERE subject_id = ? AND kind = ? AND state = 'pending'`, now_ms, subjectId, kind);
    }
    return ids;
  }

  /** The earliest due time of the pending jobs of a kind for a subject, or null when none waits. */
  async nextDue(q: Reader, kind: string, subjectId: string): Promise<number | null> {
    const r = await q.get<{ due: number | null }>(`SELECT min(due_at) AS due FROM jobs WHERE subject_id = ? AND kind = ? AND state = 'pending'`, subjectId, kind);
    return r?.due ?? null;
  }

  /**
   * The due query: pending jobs whose run time has come (`run_at <= now_ms`) and whose claim is free or lapsed,
   * after `after` in (run_at, id) order, at most `limit`. One range of the partial index `jobs_run`, in its order;
   * the claim is checked on each row it reaches.
   */
  due(q: Reader, now_ms: number, threshold: number, after: JobKey, limit: number): Promise<JobRow[]> {
    return q.all<JobRow>(
      `SELECT * FROM jobs
         WHERE state = 'pending' AND run_at >= ? AND (run_at > ? OR id > ?) AND run_at <= ? AND ${FREE}
         ORDER BY run_at, id LIMIT ?`,
      after.runAt,
      after.runAt,
      after.id,
      now_ms,
      threshold,
      limit,
    );
  }

  /**
   * PostgreSQL's claim of the due jobs `ids` (read with `due`) for `claim`: one statement, run on its own at READ
   * COMMITTED (a claim guards no money; the jobs then run in transactions that name its token). `FOR UPDATE SKIP
   * LOCKED` passes over the rows another node's claim is taking, and a row changed meanwhile is checked again
   * once locked, so a job is claimed once. Not the jobs under the tokens `held` (this process's advances).
   * SQLite's one writer claims in the transaction that read the due rows instead (`claim`).
   */
  claimDue(q: Reader, ids: number[], threshold: number, claim: Claim, held: string[]): Promise<JobRow[]> {
    return q.all<JobRow>(
      `UPDATE jobs SET claimed_by = ?, claim_token = ?, claim_until = ? WHERE id IN (
         SELECT id FROM jobs WHERE id = ANY(?) AND state = 'pending' AND ${FREE} AND (claim_token IS NULL OR claim_token <> ALL(?))
         FOR UPDATE SKIP LOCKED)
       RETURNING *`,
      claim.by,
      claim.token,
      claim.until,
      ids,
      threshold,
      held,
    );
  }

  /** The earliest run time of a pending job whose claim is free or lapsed (one read of `jobs_run`), or null. */
  async nextRunAt(q: Reader, threshold: number): Promise<number | null> {
    const r = await q.get<{ run_at: number }>(`SELECT run_at FROM jobs WHERE state = 'pending' AND ${FREE} ORDER BY run_at, id LIMIT 1`, threshold);
    return r?.run_at ?? null;
  }

  /** A shop's pending jobs of a mode due by `due_ms` on its clock, in due order, claimed or not. */
  dueForShop(q: Reader, shopId: string, mode: Mode, due_ms: number, limit: number): Promise<JobRow[]> {
    return q.all<JobRow>(`SELECT * FROM jobs WHERE shop_id = ? AND mode = ? AND state = 'pending' AND due_at <= ? ORDER BY due_at, id LIMIT ?`, shopId, mode, due_ms, limit);
  }

  /** One job, or undefined. */
  get(q: Reader, id: number): Promise<JobRow | undefined> {
    return q.get<JobRow>(`SELECT * FROM jobs WHERE id = ?`, id);
  }

  /**
   * In the job's transaction: true when it may run there, pending and its claim free, lapsed (by `threshold`) or
   * the caller's own (`token`).
   */
  async runnable(q: Reader, id: number, threshold: number, token: string | null): Promise<boolean> {
    const r = await q.get<{ state: JobState; claim_token: string | null; claim_until: number | null }>(`SELECT state, claim_token, claim_until FROM jobs WHERE id = ?`, id);
    return r !== undefined && r.state === 'pending' && (r.claim_until === null || r.claim_until <= threshold || (token !== null && r.claim_token === token));
  }

  /**
   * Mark a job done in its transaction, and drop its claim. The write names what it expects, so a job another
   * process took meanwhile is not marked: pending, and its claim free, lapsed or the caller's own. False when
   * it matched no row. (`cancelled` too: the job was pending when its transaction found it, so only the job
   * itself can have cancelled it since, as a status check does when it schedules the next one; it is done.)
   */
  async done(tx: Tx, id: number, now_ms: number, threshold: number, token: string | null): Promise<boolean> {
    const r = await tx.run(
      `UPDATE jobs SET state = 'done', finished_at = ?, claimed_by = NULL, claim_token = NULL, claim_until = NULL
         WHERE id = ? AND state IN ('pending', 'cancelled') AND (claim_token IS NULL OR claim_until <= ? OR claim_token = ?)`,
      now_ms,
      id,
      threshold,
      token,
    );
    return r.changes > 0;
  }

  /**
   * Claim a pending job for `claim.by` under a fresh token, if its claim is free, lapsed or the caller's own
   * (`own`, an advance's token); true when claimed.
   */
  async claim(tx: Tx, id: number, claim: Claim, threshold: number, own: string | null): Promise<boolean> {
    const r = await tx.run(
      `UPDATE jobs SET claimed_by = ?, claim_token = ?, claim_until = ? WHERE id = ? AND state = 'pending' AND (claim_until IS NULL OR claim_until <= ? OR claim_token = ?)`,
      claim.by,
      claim.token,
      claim.until,
      id,
      threshold,
      own,
    );
    return r.changes > 0;
  }

  /** Renew a claim the caller holds (naming its token) until `until`; false when the job is no longer its own. */
  async renew(tx: Tx, id: number, token: string, until: number): Promise<boolean> {
    const r = await tx.run(`UPDATE jobs SET claim_until = ? WHERE id = ? AND claim_token = ? AND state = 'pending'`, until, id, token);
    return r.changes > 0;
  }

  /** Give a claim up (naming its token): another process may take the job at once. */
  async release(tx: Tx, id: number, token: string): Promise<void> {
    await tx.run(`UPDATE jobs SET claimed_by = NULL, claim_token = NULL, claim_until = NULL WHERE id = ? AND claim_token = ?`, id, token);
  }

  /** An advance's claim on its shop's pending jobs due by `due_ms` whose claim is free or lapsed; returns how many. */
  async claimShopDue(tx: Tx, shopId: string, mode: Mode, due_ms: number, threshold: number, claim: Claim): Promise<number> {
    const r = await tx.run(
      `UPDATE jobs SET claimed_by = ?, claim_token = ?, claim_until = ? WHERE shop_id = ? AND mode = ? AND state = 'pending' AND due_at <= ? AND ${FREE}`,
      claim.by,
      claim.token,
      claim.until,
      shopId,
      mode,
      due_ms,
      threshold,
    );
    return r.changes;
  }

  /** Renew every claim of an advance on its shop's jobs. */
  async renewShop(tx: Tx, shopId: string, mode: Mode, token: string, until: number): Promise<void> {
    await tx.run(`UPDATE jobs SET claim_until = ? WHERE shop_id = ? AND mode = ? AND state = 'pending' AND claim_token = ?`, until, shopId, mode, token);
  }

  /** Give up every claim of an advance on its shop's jobs (the ones it did not run). */
  async releaseShop(tx: Tx, shopId: string, mode: Mode, token: string): Promise<void> {
    await tx.run(
      `UPDATE jobs SET claimed_by = NULL, claim_token = NULL, claim_until = NULL WHERE shop_id = ? AND mode = ? AND state = 'pending' AND claim_token = ?`,
      shopId,
      mode,
      token,
    );
  }

  /**
   * Record a failed run: either a retry at (due_at, run_at) or, when `dead`, the end. The claim goes (or, for a
   * retry an advance will run, becomes the advance's: `claim`).
   */
  async failed(tx: Tx, id: number, f: { attempt: number; error: string; dead: boolean; dueAt: number; runAt: number; now_ms: number; claim: Claim | null }): Promise<void> {
    if (f.dead) {
      await tx.run(
        `UPDATE jobs SET attempt = ?, last_error = ?, state = 'dead', finished_at = ?, claimed_by = NULL, claim_token = NULL, claim_until = NULL WHERE id = ?`,
        f.attempt,
        f.error,
        f.now_ms,
        id,
      );
    } else {
      await tx.run(
        `UPDATE jobs SET attempt = ?, last_error = ?, due_at = ?, run_at = ?, claimed_by = ?, claim_token = ?, claim_until = ? WHERE id = ?`,
        f.attempt,
        f.error,
        f.dueAt,
        f.runAt,
        f.claim?.by ?? null,
        f.claim?.token ?? null,
        f.claim?.until ?? null,
        id,
      );
    }
  }
}

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
  const pending = await pendingJobsByKind(q);
  for (const r of pending) Object.assign(at(r.kind), { pending: r.pending, retrying: r.retrying });
  const dead = await deadJobsByKind(q);
  for (const r of dead) at(r.kind).dead = r.dead;
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
  let offset_ms = 0;
  if (row.mode === 'test' && row.shop_id !== null) {
    const s = await tx.get<{ o: number }>(`SELECT test_clock_offset_ms AS o FROM shops WHERE id = ?`, row.shop_id);
    offset_ms = s?.o ?? 0;
  }
  await tx.run(
    `UPDATE jobs SET state = 'pending', attempt = 0, due_at = ?, run_at = ?, finished_at = NULL, claimed_by = NULL, claim_token = NULL, claim_until = NULL WHERE id = ?`,
    real_ms + offset_ms,
    real_ms,
    id,
  );
  return (await tx.get<JobRow>(`SELECT * FROM jobs WHERE id = ?`, id)) as JobRow;
}

/** A table row as a handler sees it. */
export function toJob(row: JobRow): Job {
  return {
    id: row.id,
    kind: row.kind,
    subject_id: row.subject_id,
    shop_id: row.shop_id,
    mode: row.mode,
    due_at: row.due_at,
    attempt: row.attempt,
    payload: JSON.parse(row.payload) as Record<string, unknown>,
  };
}

import type { Reader, Tx } from '../db/store';
import { deadJobsByKind, pendingJobsByKind } from '../db/dialect';
import type { Mode } from './clock';

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
}

/** Where a job is in its life: waiting (first run or a retry), finished, given up, or cancelled. */
export type JobState = 'pending' | 'done' | 'dead' | 'cancelled';

/** A position in (run_at, id) order: the wheel holds every pending job at or before it. */
export interface JobKey {
  runAt: number;
  id: number;
}

/** True when job `a` comes at or before key `b` in run order. */
export function atOrBefore(a: JobKey, b: JobKey): boolean {
  return a.runAt < b.runAt || (a.runAt === b.runAt && a.id <= b.id);
}

/**
 * The SQL of the scheduler. Every method takes where it reads or writes: a transaction body's `tx`, or the
 * store for reads outside any transaction. Writes take the caller's transaction.
 */
export class JobsTable {
  /** Insert a pending job in the caller's transaction; returns its id. */
  async insert(tx: Tx, kind: string, subjectId: string, shopId: string | null, mode: Mode, dueAt: number, runAt: number, payload: string, createdAt: number): Promise<number> {
    const info = await tx.run(
      `INSERT INTO jobs (kind, subject_id, shop_id, mode, due_at, run_at, payload, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      kind,
      subjectId,
      shopId,
      mode,
      dueAt,
      runAt,
      payload,
      createdAt,
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

  /** Pending jobs after `after` in run order, up to `until_ms` real time, at most `limit`. */
  next(q: Reader, after: JobKey, until_ms: number, limit: number): Promise<JobKey[]> {
    return q.all<JobKey>(
      `SELECT id, run_at AS runAt FROM jobs
         WHERE state = 'pending' AND run_at >= ? AND (run_at > ? OR id > ?) AND run_at <= ?
         ORDER BY run_at, id LIMIT ?`,
      after.runAt,
      after.runAt,
      after.id,
      until_ms,
      limit,
    );
  }

  /** Pending jobs whose real run time has passed, earliest first (the sweep's safety net). */
  overdue(q: Reader, now_ms: number, limit: number): Promise<JobKey[]> {
    return q.all<JobKey>(`SELECT id, run_at AS runAt FROM jobs WHERE state = 'pending' AND run_at <= ? ORDER BY run_at, id LIMIT ?`, now_ms, limit);
  }

  /** A shop's pending jobs of a mode due by `due_ms` on its clock, in due order. */
  dueForShop(q: Reader, shopId: string, mode: Mode, due_ms: number, limit: number): Promise<JobRow[]> {
    return q.all<JobRow>(`SELECT * FROM jobs WHERE shop_id = ? AND mode = ? AND state = 'pending' AND due_at <= ? ORDER BY due_at, id LIMIT ?`, shopId, mode, due_ms, limit);
  }

  /** A shop's pending test jobs that run by `until_ms` real time, in run order. */
  testJobsOfShop(q: Reader, shopId: string, until_ms: number, limit: number): Promise<JobKey[]> {
    return q.all<JobKey>(
      `SELECT id, run_at AS runAt FROM jobs WHERE shop_id = ? AND mode = 'test' AND state = 'pending' AND run_at <= ?
         ORDER BY run_at, id LIMIT ?`,
      shopId,
      until_ms,
      limit,
    );
  }

  /** One job, or undefined. */
  get(q: Reader, id: number): Promise<JobRow | undefined> {
    return q.get<JobRow>(`SELECT * FROM jobs WHERE id = ?`, id);
  }

  /** Mark a job done (in the job's transaction). */
  async done(tx: Tx, id: number, now_ms: number): Promise<void> {
    await tx.run(`UPDATE jobs SET state = 'done', finished_at = ? WHERE id = ?`, now_ms, id);
  }

  /** A job's state, or undefined when the row is gone (a test-mode reset). */
  async state(q: Reader, id: number): Promise<JobState | undefined> {
    return (await q.get<{ state: JobState }>(`SELECT state FROM jobs WHERE id = ?`, id))?.state;
  }

  /** Record a failed run: either a retry at (due_at, run_at) or, when `dead`, the end. */
  async failed(tx: Tx, id: number, f: { attempt: number; error: string; dead: boolean; dueAt: number; runAt: number; now_ms: number }): Promise<void> {
    if (f.dead) {
      await tx.run(`UPDATE jobs SET attempt = ?, last_error = ?, state = 'dead', finished_at = ? WHERE id = ?`, f.attempt, f.error, f.now_ms, id);
    } else {
      await tx.run(`UPDATE jobs SET attempt = ?, last_error = ?, due_at = ?, run_at = ? WHERE id = ?`, f.attempt, f.error, f.dueAt, f.runAt, id);
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

/** Bring a dead job back: pending, attempt 0, due now on its clock, in the caller's transaction. The server's sweep picks it up. */
export async function reviveJob(tx: Tx, id: number, real_ms: number): Promise<JobRow> {
  const row = await tx.get<JobRow>(`SELECT * FROM jobs WHERE id = ?`, id);
  if (!row) throw new Error(`cannot retry job ${id}: no such job`);
  if (row.state !== 'dead') throw new Error(`cannot retry job ${id}: it is ${row.state}, not dead`);
  let offset_ms = 0;
  if (row.mode === 'test' && row.shop_id !== null) {
    const s = await tx.get<{ o: number }>(`SELECT test_clock_offset_ms AS o FROM shops WHERE id = ?`, row.shop_id);
    offset_ms = s?.o ?? 0;
  }
  await tx.run(`UPDATE jobs SET state = 'pending', attempt = 0, due_at = ?, run_at = ?, finished_at = NULL WHERE id = ?`, real_ms + offset_ms, real_ms, id);
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

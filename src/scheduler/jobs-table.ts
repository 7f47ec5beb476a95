import type Database from 'better-sqlite3';
import { type Store } from '../db/store';
import { cachedStmt } from '../db/statements';
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

/** The SQL of the scheduler, on one store. Reads use cached statements; writes take the caller's transaction. */
export class JobsTable {
  constructor(private readonly store: Store) {}

  /** Insert a pending job (a cached statement, so it runs in the caller's open transaction); returns its id. */
  insert(kind: string, subjectId: string, shopId: string | null, mode: Mode, dueAt: number, runAt: number, payload: string, createdAt: number): number {
    const info = this.store
      .stmt(
        `INSERT INTO jobs (kind, subject_id, shop_id, mode, due_at, run_at, payload, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(kind, subjectId, shopId, mode, dueAt, runAt, payload, createdAt);
    return Number(info.lastInsertRowid);
  }

  /** Cancel the pending jobs of a kind for a subject; returns their ids. */
  cancel(db: Database.Database, kind: string, subjectId: string, now_ms: number): number[] {
    const ids = (cachedStmt(db, `SELECT id FROM jobs WHERE subject_id = ? AND kind = ? AND state = 'pending'`).all(subjectId, kind) as Array<{ id: number }>).map((r) => r.id);
    if (ids.length > 0) {
      cachedStmt(db, `UPDATE jobs SET state = 'cancelled', finished_at = ? WHERE subject_id = ? AND kind = ? AND state = 'pending'`).run(now_ms, subjectId, kind);
    }
    return ids;
  }

  /** The earliest due time of the pending jobs of a kind for a subject, or null when none waits. */
  nextDue(db: Database.Database, kind: string, subjectId: string): number | null {
    const r = cachedStmt(db, `SELECT min(due_at) AS due FROM jobs WHERE subject_id = ? AND kind = ? AND state = 'pending'`).get(subjectId, kind) as { due: number | null };
    return r.due;
  }

  /** Pending jobs after `after` in run order, up to `until_ms` real time, at most `limit`. */
  next(after: JobKey, until_ms: number, limit: number): JobKey[] {
    return this.store
      .stmt(
        `SELECT id, run_at AS runAt FROM jobs
         WHERE state = 'pending' AND run_at >= ? AND (run_at > ? OR id > ?) AND run_at <= ?
         ORDER BY run_at, id LIMIT ?`,
      )
      .all(after.runAt, after.runAt, after.id, until_ms, limit) as JobKey[];
  }

  /** Pending jobs whose real run time has passed, earliest first (the sweep's safety net). */
  overdue(now_ms: number, limit: number): JobKey[] {
    return this.store
      .stmt(`SELECT id, run_at AS runAt FROM jobs WHERE state = 'pending' AND run_at <= ? ORDER BY run_at, id LIMIT ?`)
      .all(now_ms, limit) as JobKey[];
  }

  /** A shop's pending jobs of a mode due by `due_ms` on its clock, in due order. */
  dueForShop(shopId: string, mode: Mode, due_ms: number, limit: number): JobRow[] {
    return this.store
      .stmt(`SELECT * FROM jobs WHERE shop_id = ? AND mode = ? AND state = 'pending' AND due_at <= ? ORDER BY due_at, id LIMIT ?`)
      .all(shopId, mode, due_ms, limit) as JobRow[];
  }

  /** A shop's pending test jobs that run by `until_ms` real time, in run order. */
  testJobsOfShop(shopId: string, until_ms: number, limit: number): JobKey[] {
    return this.store
      .stmt(
        `SELECT id, run_at AS runAt FROM jobs WHERE shop_id = ? AND mode = 'test' AND state = 'pending' AND run_at <= ?
         ORDER BY run_at, id LIMIT ?`,
      )
      .all(shopId, until_ms, limit) as JobKey[];
  }

  /** One job, or undefined. */
  get(id: number): JobRow | undefined {
    return this.store.stmt(`SELECT * FROM jobs WHERE id = ?`).get(id) as JobRow | undefined;
  }

  /** Mark a job done (in the job's transaction). */
  done(id: number, now_ms: number): void {
    this.store.stmt(`UPDATE jobs SET state = 'done', finished_at = ? WHERE id = ?`).run(now_ms, id);
  }

  /** A job's state, or undefined when the row is gone (a test-mode reset). */
  state(id: number): JobState | undefined {
    return (this.store.stmt(`SELECT state FROM jobs WHERE id = ?`).get(id) as { state: JobState } | undefined)?.state;
  }

  /** Record a failed run: either a retry at (due_at, run_at) or, when `dead`, the end. */
  failed(db: Database.Database, id: number, f: { attempt: number; error: string; dead: boolean; dueAt: number; runAt: number; now_ms: number }): void {
    if (f.dead) {
      cachedStmt(db, `UPDATE jobs SET attempt = ?, last_error = ?, state = 'dead', finished_at = ? WHERE id = ?`).run(f.attempt, f.error, f.now_ms, id);
    } else {
      cachedStmt(db, `UPDATE jobs SET attempt = ?, last_error = ?, due_at = ?, run_at = ? WHERE id = ?`).run(f.attempt, f.error, f.dueAt, f.runAt, id);
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
export function countJobs(db: Database.Database): JobCount[] {
  // Two reads through partial indexes (pending jobs, failing jobs): finished rows are never read.
  const byKind = new Map<string, JobCount>();
  const at = (kind: string): JobCount => {
    let c = byKind.get(kind);
    if (!c) byKind.set(kind, (c = { kind, pending: 0, retrying: 0, dead: 0 }));
    return c;
  };
  const pending = cachedStmt(db, `SELECT kind, sum(attempt = 0) AS pending, sum(attempt > 0) AS retrying FROM jobs INDEXED BY jobs_run WHERE state = 'pending' GROUP BY kind`).all() as Array<{
    kind: string;
    pending: number;
    retrying: number;
  }>;
  for (const r of pending) Object.assign(at(r.kind), { pending: r.pending, retrying: r.retrying });
  const dead = cachedStmt(db, `SELECT kind, count(*) AS dead FROM jobs INDEXED BY jobs_failing WHERE state = 'dead' GROUP BY kind`).all() as Array<{ kind: string; dead: number }>;
  for (const r of dead) at(r.kind).dead = r.dead;
  return [...byKind.values()].sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));
}

/** Dead jobs and jobs that failed and wait for a retry, newest failure first. */
export function failingJobs(db: Database.Database, limit: number): JobRow[] {
  return db
    .prepare(`SELECT * FROM jobs WHERE state = 'dead' OR (state = 'pending' AND attempt > 0) ORDER BY coalesce(finished_at, run_at) DESC, id DESC LIMIT ?`)
    .all(limit) as JobRow[];
}

/** Bring a dead job back: pending, attempt 0, due now on its clock. The server's sweep picks it up. */
export function reviveJob(db: Database.Database, id: number, real_ms: number): JobRow {
  const row = db.prepare(`SELECT * FROM jobs WHERE id = ?`).get(id) as JobRow | undefined;
  if (!row) throw new Error(`cannot retry job ${id}: no such job`);
  if (row.state !== 'dead') throw new Error(`cannot retry job ${id}: it is ${row.state}, not dead`);
  let offset_ms = 0;
  if (row.mode === 'test' && row.shop_id !== null) {
    const s = db.prepare(`SELECT test_clock_offset_ms AS o FROM shops WHERE id = ?`).get(row.shop_id) as { o: number } | undefined;
    offset_ms = s?.o ?? 0;
  }
  db.prepare(`UPDATE jobs SET state = 'pending', attempt = 0, due_at = ?, run_at = ?, finished_at = NULL WHERE id = ?`).run(real_ms + offset_ms, real_ms, id);
  return db.prepare(`SELECT * FROM jobs WHERE id = ?`).get(id) as JobRow;
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

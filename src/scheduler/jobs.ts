import type { Store, Tx } from '../db/tx';
import type { Clocks, Mode } from './clock';
import type { Logger } from '../log';

/** A row of the jobs table. */
export interface Job {
  id: number;
  kind: string;
  subject_id: string;
  shop_id: string | null;
  mode: Mode;
  due_at: number;
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

/** A job handler runs inside the job's own transaction; it may schedule more jobs. It must be idempotent. */
export type JobHandler = (tx: Tx, job: Job) => void;

/** Failed runs before a job is marked dead. */
export const MAX_ATTEMPTS = 8;
/** Longest single timer; later jobs are re-checked by the sweep. */
const HORIZON_MS = 60_000;

/**
 * The durable scheduler: the jobs table is the truth; a timer wakes it for the earliest due job.
 * Jobs are written in the caller's transaction; after commit the timer is re-armed.
 */
export class Scheduler {
  private readonly handlers = new Map<string, JobHandler>();
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  private running = false;
  private stopped = true;

  constructor(
    private readonly store: Store,
    private readonly clocks: Clocks,
    private readonly log: Logger,
  ) {}

  /** Register the handler of a job kind; a kind registered twice is a start-up error. */
  register(kind: string, handler: JobHandler): void {
    if (this.handlers.has(kind)) throw new Error(`cannot register job kind "${kind}" twice`);
    this.handlers.set(kind, handler);
  }

  /** Write a job in the caller's transaction; the timer learns of it after commit. Returns the job id. */
  schedule(tx: Tx, spec: JobSpec): number {
    const created = this.clocks.real();
    const info = tx.db
      .prepare(
        `INSERT INTO jobs (kind, subject_id, shop_id, mode, due_at, payload, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(spec.kind, spec.subjectId, spec.shopId, spec.mode, Math.round(spec.dueAt), JSON.stringify(spec.payload ?? {}), created);
    const realDue = this.clocks.toReal(spec.shopId, spec.mode, spec.dueAt);
    tx.afterCommit(() => this.arm(realDue));
    return Number(info.lastInsertRowid);
  }

  /** Cancel the pending jobs of a kind for a subject, in the caller's transaction. */
  cancel(tx: Tx, kind: string, subjectId: string): number {
    return tx.db
      .prepare(`UPDATE jobs SET state = 'cancelled', finished_at = ? WHERE subject_id = ? AND kind = ? AND state = 'pending'`)
      .run(this.clocks.real(), subjectId, kind).changes;
  }

  /** Start firing due jobs (overdue ones at once, in due order). */
  start(): void {
    this.stopped = false;
    this.arm(this.clocks.real());
  }

  /** Stop firing; pending jobs stay in the table for the next start. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Infinity;
  }

  /** Run every job of one shop's mode due on its clock, in due order, including jobs those jobs create. */
  runDueForShop(shopId: string, mode: Mode): number {
    let ran = 0;
    for (;;) {
      const now = this.clocks.now(shopId, mode);
      const row = this.store
        .stmt(
          `SELECT * FROM jobs WHERE state = 'pending' AND shop_id = ? AND mode = ? AND due_at <= ?
           ORDER BY due_at, id LIMIT 1`,
        )
        .get(shopId, mode, now) as JobRow | undefined;
      if (!row) break;
      this.runOne(row);
      ran++;
    }
    return ran;
  }

  /** Run every job due now on its own clock, across shops, in real due order. */
  runDue(): number {
    let ran = 0;
    for (;;) {
      const batch = this.dueRows(64);
      if (batch.length === 0) break;
      for (const row of batch) {
        this.runOne(row);
        ran++;
      }
    }
    return ran;
  }

  private dueRows(limit: number): JobRow[] {
    const real = this.clocks.real();
    const rows = this.store
      .stmt(`SELECT * FROM jobs WHERE state = 'pending' ORDER BY due_at, id LIMIT ?`)
      .all(limit * 4) as JobRow[];
    // Test jobs are due on their shop's clock: compare in real time.
    return rows
      .filter((r) => this.clocks.toReal(r.shop_id, r.mode, r.due_at) <= real)
      .slice(0, limit);
  }

  private runOne(row: JobRow): void {
    const handler = this.handlers.get(row.kind);
    const job: Job = { ...row, payload: JSON.parse(row.payload) as Record<string, unknown> };
    try {
      this.store.tx((tx) => {
        const still = tx.db.prepare(`SELECT state FROM jobs WHERE id = ?`).get(row.id) as { state: string } | undefined;
        if (!still || still.state !== 'pending') return;
        if (!handler) throw new Error(`no handler for job kind "${row.kind}"`);
        handler(tx, job);
        tx.db.prepare(`UPDATE jobs SET state = 'done', finished_at = ? WHERE id = ?`).run(this.clocks.real(), row.id);
      });
    } catch (err) {
      const attempt = row.attempt + 1;
      const dead = attempt >= MAX_ATTEMPTS;
      const backoff_ms = Math.min(3_600_000, 1000 * 2 ** attempt);
      this.store.tx(({ db }) => {
        db.prepare(
          `UPDATE jobs SET attempt = ?, last_error = ?, state = ?, due_at = due_at + ?, finished_at = ? WHERE id = ?`,
        ).run(attempt, String((err as Error)?.message ?? err).slice(0, 500), dead ? 'dead' : 'pending', dead ? 0 : backoff_ms, dead ? this.clocks.real() : null, row.id);
      });
      this.log.error('job failed', { job_id: row.id, kind: row.kind, attempt, dead, error: String((err as Error)?.message ?? err) });
    }
  }

  private arm(realDue: number): void {
    if (this.stopped) return;
    if (realDue >= this.timerAt && this.timer) return;
    if (this.timer) clearTimeout(this.timer);
    const delay = Math.max(0, Math.min(HORIZON_MS, realDue - this.clocks.real()));
    this.timerAt = realDue;
    this.timer = setTimeout(() => this.fire(), delay);
    this.timer.unref();
  }

  private fire(): void {
    this.timer = null;
    this.timerAt = Infinity;
    if (this.running || this.stopped) return;
    this.running = true;
    try {
      this.runDue();
    } finally {
      this.running = false;
    }
    const next = this.store.stmt(`SELECT shop_id, mode, due_at FROM jobs WHERE state = 'pending' ORDER BY due_at LIMIT 1`).get() as
      | { shop_id: string | null; mode: Mode; due_at: number }
      | undefined;
    this.arm(next ? this.clocks.toReal(next.shop_id, next.mode, next.due_at) : this.clocks.real() + HORIZON_MS);
  }
}

interface JobRow {
  id: number;
  kind: string;
  subject_id: string;
  shop_id: string | null;
  mode: Mode;
  due_at: number;
  attempt: number;
  payload: string;
}

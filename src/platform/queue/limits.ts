import type { Mode } from '../clock';

/** What a state change asks for: run `kind` on `subjectId` at `dueAt` (on the shop's clock in test mode). */
export interface JobSpec {
  kind: string;
  subjectId: string;
  shopId: string | null;
  mode: Mode;
  dueAt: number;
  payload?: Record<string, unknown>;
}

/** How a scheduler starts. */
export interface StartOptions {
  /**
   * This process is the only server of the database (SQLite: it holds the server lock), so every claim made
   * before it started belongs to a process that is gone: such claims count as lapsed at once instead of a
   * lease after they were last renewed.
   */
  sole?: boolean;
}

/** Limits of the scheduler; each has a default. */
export interface SchedulerLimits {
  /** Async jobs running at once in this process; the rest wait in the table, unclaimed, for a slot (or another process). */
  maxAsyncRunning: number;
  /** Jobs read per query and run per transaction, at most (txMs is what usually ends a transaction). */
  batch: number;
  /**
   * Longest a batch of jobs runs in one transaction before it commits (at least one job runs). A transaction's
   * pages stay in the WAL until it commits and a checkpoint copies them, so this bounds the WAL a long advance
   * writes between checkpoints; each commit costs a WAL sync, so it is not much shorter than that sync.
   */
  txMs: number;
  /** Longest stretch of job running before yielding to the event loop, so requests keep being served. */
  sliceMs: number;
  /**
   * How often the table is read again even when nothing is due by this process's reckoning: jobs written by
   * other processes (admin commands, other nodes) and claims that lapsed are found within this.
   */
  rereadMs: number;
  /**
   * How long a claim holds without renewal (`--job-lease`). A process renews the claims it holds every third of
   * it; another process takes a job whose claim lapsed.
   */
  leaseMs: number;
  /** How often an advance looks again at due jobs of its shop that another process holds. */
  heldPollMs: number;
  /** Delay before the first retry; doubles per failure up to maxBackoffMs. */
  backoffMs: number;
  /** Longest delay between retries. */
  maxBackoffMs: number;
}

/** The periodic re-read of the jobs table, in ms (see SchedulerLimits.rereadMs). */
export const REREAD_MS = 2_000;

/** The lease of a claim when --job-lease is not given, in ms. */
export const DEFAULT_LEASE_MS = 30_000;

/** The limits a server runs with unless told otherwise. */
export const DEFAULT_LIMITS: SchedulerLimits = {
  maxAsyncRunning: 16,
  batch: 1024,
  txMs: 50,
  sliceMs: 5,
  rereadMs: REREAD_MS,
  leaseMs: DEFAULT_LEASE_MS,
  heldPollMs: 50,
  backoffMs: 1000,
  maxBackoffMs: 3_600_000,
};

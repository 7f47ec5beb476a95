/** Limits of the scheduler; each has a default. */
export interface SchedulerLimits {
  /** Async jobs running at once; the rest wait for a slot. */
  maxAsyncRunning: number;
  /** Most jobs held in memory (wheel plus ready queue); the rest wait in the table. */
  maxLoaded: number;
  /** Jobs loaded per query and run per transaction, at most (txMs is what usually ends a transaction). */
  batch: number;
  /**
   * Longest a batch of jobs runs in one transaction before it commits (at least one job runs). A transaction's
   * pages stay in the WAL until it commits and a checkpoint copies them, so this bounds the WAL a long advance
   * writes between checkpoints; each commit costs a WAL sync, so it is not much shorter than that sync.
   */
  txMs: number;
  /** Longest stretch of job running before yielding to the event loop, so requests keep being served. */
  sliceMs: number;
  /** How far ahead the wheel is filled from the table. */
  horizonMs: number;
  /** How often the sweep refills the horizon and picks up jobs written behind the scheduler's back. */
  sweepMs: number;
  /** Delay before the first retry; doubles per failure up to maxBackoffMs. */
  backoffMs: number;
  /** Longest delay between retries. */
  maxBackoffMs: number;
}

/** The limits a server runs with unless told otherwise. */
export const DEFAULT_LIMITS: SchedulerLimits = {
  maxAsyncRunning: 16,
  maxLoaded: 50_000,
  batch: 1024,
  txMs: 50,
  sliceMs: 5,
  horizonMs: 5 * 60_000,
  sweepMs: 30_000,
  backoffMs: 1000,
  maxBackoffMs: 3_600_000,
};

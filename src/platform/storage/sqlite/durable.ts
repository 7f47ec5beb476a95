// When a commit of the SQLite engine is on disk: commits numbered in order, the WAL synced on the thread pool,
// and the promises of a commit settled only once a sync covers it.
import type Database from 'better-sqlite3';
import { closeSync, fdatasync, fdatasyncSync, openSync, realpathSync } from 'node:fs';
import type { Logger } from '../../log';
import type { Body } from '../tx';

/** The exit code of a process stopped by a failed WAL sync (EX_SOFTWARE: the process cannot go on). */
export const WAL_SYNC_FAILED_EXIT = 70;

/** A body queued for a commit, and who waits for its outcome. */
export type Pending = { fn: Body<unknown>; resolve: (v: unknown) => void; reject: (e: unknown) => void };

/** The outcome of one body of a commit: its value or error, and the hooks it queued. */
export type Outcome = { ok: boolean; value: unknown; hooks: Array<() => void> };

/** A commit whose bodies' outcomes wait for the WAL sync that makes them durable. */
type Committed = { seq: number; batch: Pending[]; outcomes: Outcome[] };

/**
 * Commits numbered in order, and which of them are on disk. With a WAL file of its own (the server's store,
 * sync: 'store') SQLite writes commits without syncing them (synchronous=NORMAL, which still syncs checkpoints)
 * and this syncs the WAL file on the thread pool, so that the disk's wait happens off the event loop; one sync
 * runs at a time, and commits made while it runs are covered by the next. Without one (SQLite syncs inside
 * every COMMIT, or the database is in memory) a commit is durable as it is made.
 *
 * A commit's promises settle, and its after-commit hooks run, only once it is on disk; `settled()` lets a read
 * of committed data wait for the same before it answers, so nothing that is not on disk leaves the engine.
 */
export class Durability {
  private committedSeq = 0;
  private durableSeq = 0;
  /** Commits whose sync has not finished. */
  private awaiting: Committed[] = [];
  /** settled() callers and the commit each waits for. */
  private waiters: Array<{ seq: number; resolve: () => void }> = [];
  /** A sync is running on the thread pool; the highest commit a sync was asked for. */
  private syncing = false;
  private wanted = 0;
  private closed = false;

  /** `fd`: the WAL file opened for reading, which this syncs (see walFile); null when SQLite syncs. */
  constructor(
    private readonly log: Logger,
    private readonly fd: number | null,
  ) {}

  /**
   * The WAL file of `db`, opened for syncing, with the connection switched to synchronous=NORMAL; null, and
   * SQLite keeps syncing every commit, when the database is not a file in WAL mode.
   */
  static walFile(db: Database.Database): number | null {
    if (db.memory || String(db.pragma('journal_mode', { simple: true })) !== 'wal') return null;
    // SQLite names the WAL after the database's real path (symbolic links resolved); a read creates it.
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    const fd = openSync(realpathSync(db.name) + '-wal', 'r');
    db.pragma('synchronous = NORMAL');
    return fd;
  }

  /** Commits made so far. */
  get commits(): number {
    return this.committedSeq;
  }

  /** A commit was made: its bodies settle (and their hooks run) once it is on disk. */
  committed(batch: Pending[], outcomes: Outcome[]): void {
    const seq = ++this.committedSeq;
    this.awaiting.push({ seq, batch, outcomes });
    if (this.fd === null) return this.markDurable(seq);
    if (seq > this.wanted) this.wanted = seq;
    if (!this.syncing) this.start();
  }

  /** Null when every commit made so far is on disk; else a promise that settles once they are. */
  settled(): Promise<void> | null {
    if (this.durableSeq >= this.committedSeq) return null;
    const seq = this.committedSeq;
    return new Promise<void>((resolve) => this.waiters.push({ seq, resolve }));
  }

  /** Sync now, blocking, covering every commit made so far (shutdown). */
  syncNow(): void {
    if (this.fd !== null && this.durableSeq < this.committedSeq) {
      try {
        fdatasyncSync(this.fd);
      } catch (err) {
        this.failed(err as Error);
      }
    }
    this.markDurable(this.committedSeq);
  }

  /** Close the WAL file, at once or, while a sync still uses it, when that sync ends. */
  close(): void {
    this.closed = true;
    if (this.fd !== null && !this.syncing) closeSync(this.fd);
  }

  private start(): void {
    this.syncing = true;
    const upTo = this.wanted;
    fdatasync(this.fd!, (err) => {
      this.syncing = false;
      // Closed meanwhile: the owner synced everything itself and left the file for this callback to close.
      if (this.closed) return closeSync(this.fd!);
      if (err) this.failed(err);
      this.markDurable(upTo);
      if (this.wanted > this.durableSeq) this.start();
    });
  }

  /** Run after-commit hooks; one that throws is logged and does not stop the others. */
  private runHooks(hooks: Array<() => void>): void {
    for (const h of hooks) {
      try {
        h();
      } catch (err) {
        // An after-commit action must not undo or hide a commit; the durable record (jobs, outbox) retries it.
        this.log.error('after-commit action failed', { error: String(err) });
      }
    }
  }

  /** Every commit up to `upTo` is on disk: settle their bodies and wake the reads waiting for them. */
  private markDurable(upTo: number): void {
    if (upTo > this.durableSeq) this.durableSeq = upTo;
    let n = 0;
    while (n < this.awaiting.length && this.awaiting[n].seq <= this.durableSeq) n++;
    for (const g of n === 0 ? [] : this.awaiting.splice(0, n)) {
      for (let i = 0; i < g.batch.length; i++) {
        const o = g.outcomes[i];
        if (o.ok) {
          this.runHooks(o.hooks);
          g.batch[i].resolve(o.value);
        } else {
          g.batch[i].reject(o.value);
        }
      }
    }
    if (this.waiters.length > 0) {
      const still: Array<{ seq: number; resolve: () => void }> = [];
      for (const w of this.waiters) {
        if (w.seq <= this.durableSeq) w.resolve();
        else still.push(w);
      }
      this.waiters = still;
    }
  }

  /**
   * A failed WAL sync leaves commits in an unknown state on disk, and a retried sync can report success for
   * pages the kernel already dropped. Stop; the next start recovers the database from what the disk really
   * holds, and nothing that was not on disk was shown.
   */
  private failed(err: Error): never {
    this.log.error('cannot sync the database WAL; stopping', { error: String(err) });
    process.exit(WAL_SYNC_FAILED_EXIT);
  }
}

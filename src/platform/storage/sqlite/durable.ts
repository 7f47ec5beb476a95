// When a SQLite commit is on disk: commits numbered in order, the WAL synced on the thread pool.
import type Database from 'better-sqlite3';
import { closeSync, fdatasync, fdatasyncSync, openSync, realpathSync } from 'node:fs';
import type { Logger } from '../../log';
import type { Body } from '../tx';

/** EX_SOFTWARE: the process cannot go on. */
export const WAL_SYNC_FAILED_EXIT = 70;

export type Pending = { fn: Body<unknown>; resolve: (v: unknown) => void; reject: (e: unknown) => void };

/** A body's value or error, and the hooks it queued. */
export type Outcome = { ok: boolean; value: unknown; hooks: Array<() => void> };

type Committed = { seq: number; batch: Pending[]; outcomes: Outcome[] };

/**
 * Commits numbered in order, and which are on disk. With a WAL file of its own (sync: 'store') SQLite commits
 * with synchronous=NORMAL (checkpoints still synced) and this syncs the WAL on the thread pool, one sync at a
 * time covering every commit before it. Otherwise (SQLite syncs each COMMIT, or memory) a commit is durable as made.
 * Promises settle and hooks run only once on disk; `settled()` makes reads wait for the same.
 */
export class Durability {
  private committedSeq = 0;
  private durableSeq = 0;
  private awaiting: Committed[] = [];
  private waiters: Array<{ seq: number; resolve: () => void }> = [];
  /** A sync is running; the highest commit a sync was asked for. */
  private syncing = false;
  private wanted = 0;
  private closed = false;

  /** `fd`: the WAL file (see walFile); null when SQLite syncs. */
  constructor(
    private readonly log: Logger,
    private readonly fd: number | null,
  ) {}

  /** The WAL file, opened, with the connection on synchronous=NORMAL; null (SQLite syncs) when not a file in WAL mode. */
  static walFile(db: Database.Database): number | null {
    if (db.memory || String(db.pragma('journal_mode', { simple: true })) !== 'wal') return null;
    // SQLite names the WAL after the real path (links resolved); a read creates it.
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    const fd = openSync(realpathSync(db.name) + '-wal', 'r');
    db.pragma('synchronous = NORMAL');
    return fd;
  }

  get commits(): number {
    return this.committedSeq;
  }

  committed(batch: Pending[], outcomes: Outcome[]): void {
    const seq = ++this.committedSeq;
    this.awaiting.push({ seq, batch, outcomes });
    if (this.fd === null) return this.markDurable(seq);
    if (seq > this.wanted) this.wanted = seq;
    if (!this.syncing) this.start();
  }

  settled(): Promise<void> | null {
    if (this.durableSeq >= this.committedSeq) return null;
    const seq = this.committedSeq;
    return new Promise<void>((resolve) => this.waiters.push({ seq, resolve }));
  }

  /** Blocking (shutdown). */
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

  /** At once or, while a sync uses it, when that sync ends. */
  close(): void {
    this.closed = true;
    if (this.fd !== null && !this.syncing) closeSync(this.fd);
  }

  private start(): void {
    this.syncing = true;
    const upTo = this.wanted;
    fdatasync(this.fd!, (err) => {
      this.syncing = false;
      // Closed meanwhile: the owner synced everything and left the file for this callback.
      if (this.closed) return closeSync(this.fd!);
      if (err) this.failed(err);
      this.markDurable(upTo);
      if (this.wanted > this.durableSeq) this.start();
    });
  }

  /** One that throws is logged and does not stop the others. */
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

  /** Settle the bodies up to `upTo` and wake the reads waiting for them. */
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
   * A failed WAL sync leaves commits unknown on disk, and a retried sync can report success for pages the kernel
   * dropped. Stop; the next start recovers from what the disk holds, and nothing not on disk was shown.
   */
  private failed(err: Error): never {
    this.log.error('cannot sync the database WAL; stopping', { error: String(err) });
    process.exit(WAL_SYNC_FAILED_EXIT);
  }
}

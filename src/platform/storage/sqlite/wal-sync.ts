import type Database from 'better-sqlite3';
import { closeSync, fdatasync, fdatasyncSync, openSync, realpathSync } from 'node:fs';
import type { Logger } from '../../log';

/** The exit code of a process stopped by a failed WAL sync (EX_SOFTWARE: the process cannot go on). */
export const WAL_SYNC_FAILED_EXIT = 70;

/**
 * Syncs a connection's WAL file in place of SQLite, so that the disk's wait happens on the thread pool
 * rather than inside COMMIT on the event loop. Commits are numbered by the caller; `synced(upTo)` is called
 * once every commit up to `upTo` is on disk. One sync runs at a time: commits made while it runs are
 * covered by the next, started as soon as the running one ends.
 */
export class WalSync {
  /** A sync is running on the thread pool. */
  private syncing = false;
  private closed = false;
  /** The highest commit a sync was asked for, and the highest one known to be on disk. */
  private wanted = 0;
  private covered = 0;

  /** `fd` is the WAL file opened for reading; see WalSync.open. */
  constructor(
    private readonly fd: number,
    private readonly log: Logger,
    private readonly synced: (upTo: number) => void,
  ) {}

  /**
   * The WAL sync of `db`, with the connection switched to synchronous=NORMAL (SQLite still syncs its
   * checkpoints); null, and SQLite keeps syncing every commit, when the database is not a file in WAL mode.
   */
  static open(db: Database.Database, log: Logger, synced: (upTo: number) => void): WalSync | null {
    if (db.memory || String(db.pragma('journal_mode', { simple: true })) !== 'wal') return null;
    // SQLite names the WAL after the database's real path (symbolic links resolved); a read creates it.
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    const fd = openSync(realpathSync(db.name) + '-wal', 'r');
    db.pragma('synchronous = NORMAL');
    return new WalSync(fd, log, synced);
  }

  /** Make commits up to `upTo` durable on the thread pool; `synced` is called when they are. */
  request(upTo: number): void {
    if (upTo > this.wanted) this.wanted = upTo;
    if (!this.syncing) this.start();
  }

  /** Sync now, blocking, covering commits up to `upTo` (a transaction that must return durable, shutdown). */
  syncNow(upTo: number): void {
    try {
      fdatasyncSync(this.fd);
    } catch (err) {
      this.failed(err as Error);
    }
    if (upTo > this.covered) this.covered = upTo;
  }

  /** Close the WAL file, at once or, while a sync still uses it, when that sync ends. */
  close(): void {
    this.closed = true;
    if (!this.syncing) closeSync(this.fd);
  }

  private start(): void {
    this.syncing = true;
    const upTo = this.wanted;
    fdatasync(this.fd, (err) => {
      this.syncing = false;
      // Closed meanwhile: the owner synced everything itself and left the file for this callback to close.
      if (this.closed) return closeSync(this.fd);
      if (err) this.failed(err);
      if (upTo > this.covered) this.covered = upTo;
      this.synced(this.covered);
      if (this.wanted > this.covered) this.start();
    });
  }

  /**
   * A failed WAL sync leaves commits that readers may already have seen in an unknown state on disk, and a
   * retried sync can report success for pages the kernel already dropped. Stop; the next start recovers the
   * database from what the disk really holds, and nothing that was not acknowledged was shown.
   */
  private failed(err: Error): never {
    this.log.error('cannot sync the database WAL; stopping', { error: String(err) });
    process.exit(WAL_SYNC_FAILED_EXIT);
  }
}

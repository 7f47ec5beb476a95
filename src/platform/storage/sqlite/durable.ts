// When a SQLite commit is on disk: commits counted in order, the WAL synced on the thread pool.
import type Database from 'better-sqlite3';
import { closeSync, fdatasync, fdatasyncSync, openSync, realpathSync } from 'node:fs';
import { promisify } from 'node:util';
import type { Logger } from '../../log';
import type { Checkpointer } from './checkpointer';

/** EX_SOFTWARE: the process cannot go on. */
export const WAL_SYNC_FAILED_EXIT = 70;

const datasync = promisify(fdatasync);

/**
 * Commits counted in order, and how many are on disk. With a WAL file of its own (sync: 'store') SQLite commits
 * with synchronous=NORMAL (checkpoints still synced) and this syncs the WAL on the thread pool, one sync at a time
 * covering every commit made before it started; the commits made meanwhile share the next. Otherwise (SQLite syncs
 * each COMMIT, or memory) a commit is durable as made. Every commit up to `durable` is on disk, so a reader
 * compares two numbers and waits only when `durable < commits`. The end of each sync is where the checkpointer is
 * woken, once enough was written since its last checkpoint (Checkpointer.wakeAt).
 */
export class Durability {
  commits = 0;
  durable = 0;
  /** The running sync (it covers commits up to `upTo`), and the one after it, shared by the commits made meanwhile. */
  private running: Promise<void> | null = null;
  private next: Promise<void> | null = null;
  private upTo = 0;
  private closed = false;

  /** `fd`: the WAL file (see walFile); null when SQLite syncs. `written`: see Statements.written. */
  constructor(
    private readonly log: Logger,
    private readonly fd: number | null,
    private readonly checkpointer: Checkpointer | null = null,
    private readonly source: { readonly written: number } = { written: 0 },
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

  /** Counts a commit just made; the promise settles once it is on disk (null: it already is). */
  committed(): Promise<void> | null {
    const seq = ++this.commits;
    if (this.fd === null) {
      this.durable = seq;
      return null;
    }
    if (this.running === null) {
      this.upTo = seq;
      return (this.running = datasync(this.fd).then(this.synced, this.failed));
    }
    return (this.next ??= this.running.then(this.again));
  }

  /** Null when every commit is on disk, else settles once the last is. */
  settled(): Promise<void> | null {
    return this.durable >= this.commits ? null : (this.next ?? this.running);
  }

  /** Blocking (shutdown). */
  syncNow(): void {
    if (this.fd !== null && this.durable < this.commits) {
      try {
        fdatasyncSync(this.fd);
      } catch (err) {
        this.failed(err);
      }
    }
    this.durable = this.commits;
  }

  /** At once or, while a sync uses it, when that sync ends. */
  close(): void {
    this.closed = true;
    if (this.fd !== null && this.running === null) closeSync(this.fd);
  }

  private start(): Promise<void> {
    this.upTo = this.commits;
    this.next = null;
    return (this.running = datasync(this.fd!).then(this.synced, this.failed));
  }

  private readonly synced = (): void => {
    if (this.upTo > this.durable) this.durable = this.upTo;
    const cp = this.checkpointer;
    if (cp !== null) {
      if (this.source.written >= cp.wakeAt) cp.nudge();
      else cp.soon();
    }
    // With a next sync wanted, `running` stays until it starts, so a commit in between joins it.
    if (this.next !== null) return;
    this.running = null;
    // Closed meanwhile: the owner synced everything and left the file for this callback.
    if (this.closed) closeSync(this.fd!);
  };

  private readonly again = (): Promise<void> | void => {
    if (!this.closed && this.durable < this.commits) return this.start();
    this.running = this.next = null;
    if (this.closed) closeSync(this.fd!);
  };

  /**
   * A failed WAL sync leaves commits unknown on disk, and a retried sync can report success for pages the kernel
   * dropped. Stop; the next start recovers from what the disk holds, and nothing not on disk was shown.
   */
  private readonly failed = (err: unknown): never => {
    this.log.error('cannot sync the database WAL; stopping', { error: String(err) });
    process.exit(WAL_SYNC_FAILED_EXIT);
  };
}

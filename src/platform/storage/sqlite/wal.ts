import type Database from 'better-sqlite3';
import { closeSync, fdatasync, fdatasyncSync, openSync, realpathSync, statSync } from 'node:fs';
import { promisify } from 'node:util';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../../log';
import { betterSqliteLib, nativeBindingPath } from './open';

/** EX_SOFTWARE: the process cannot go on. */
export const WAL_SYNC_FAILED_EXIT = 70;

const datasync = promisify(fdatasync);

/**
 * Commits counted in order, and how many are on disk. With a WAL file of its own (sync: 'store') SQLite commits
 * with synchronous=NORMAL (checkpoints still synced) and this syncs the WAL on the thread pool, one sync at a time
 * covering every commit made before it started; the commits made meanwhile share the next. Otherwise (SQLite syncs
 * each COMMIT, or memory) a commit is durable as made. Every commit up to `durable` is on disk, so a reader
 * compares two numbers and waits only when `durable < commits`. The end of each sync is where the checkpointer is
 * woken, once enough was written since its last checkpoint (Checkpointer.wakeAt, below).
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
      else if (cp.soonTimer === null) cp.soon();
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

/** Least time between two checkpoints while commits keep coming. */
const INTERVAL_MS = 50;
/** Rows changed and commits (Statements.written) after which an idle checkpointer wakes: a few WAL pages each. */
const WAKE_WRITES = 100;
/** Fewer writes than WAKE_WRITES are checkpointed this long after the first of them, so a quiet server's WAL empties too. */
const SOON_MS = 1000;
/**
 * WAL frames past which the writer finishes a checkpoint itself: under steady writes the thread's checkpoint ends
 * a little behind, and SQLite restarts the WAL only once every frame is back; the catch-up copies just those.
 */
export const CATCH_UP_FRAMES = 4096;
/**
 * A WAL file this large is cut to nothing once idle for IDLE_MS after a complete checkpoint: its frames stay until
 * the next commit, and a start after a crash checksums them all before serving (up to 25 MB after a clock advance).
 * A smaller file is left: rewriting the same blocks beats growing a new file, whose syncs must record its size.
 */
const IDLE_TRUNCATE_BYTES = 1024 * 1024;
/** No commit for this long after a complete checkpoint: a burst has ended, not paused. */
const IDLE_MS = 100;
/** A reader of another connection (an admin command, a backup) kept the idle WAL from being cut: look again. */
const TRUNCATE_RETRY_MS = 1000;
/** Then the next commit (which starts the WAL over) is left to do it. */
const TRUNCATE_TRIES = 30;
/** The thread may be in the middle of a checkpoint. */
const CLOSE_WAIT_MS = 5000;

// The thread opens the file with synchronous=FULL, so a checkpoint syncs the WAL before copying and the database
// after. The single executable carries better-sqlite3's JavaScript as text (a thread cannot load modules out of
// the executable's main script; see build.mjs and src/sea.ts).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
function fromSource(source) {
  const mod = { exports: {} };
  new Function('module', 'exports', 'require', source)(mod, mod.exports, require);
  return mod.exports;
}
const lib = workerData.lib;
const Database = lib.file ? require(lib.file) : fromSource(lib.source);
const db = new Database(workerData.path, { fileMustExist: true, timeout: 5000, nativeBinding: workerData.addon });
db.pragma('synchronous = FULL');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)').raw(true);
parentPort.on('message', (m) => {
  if (m === 'close') {
    db.close();
    Atomics.store(workerData.closed, 0, 1);
    Atomics.notify(workerData.closed, 0);
    parentPort.close();
    return;
  }
  try {
    const [busy, log, done] = checkpoint.get();
    parentPort.postMessage({ busy, log, done });
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message || err) });
  }
});
`;

/**
 * Checkpoints the WAL on a thread, so copying pages and the two syncs never hold up the event loop. The writer runs
 * with wal_autocheckpoint = 0; should the thread fail, it checkpoints inline again.
 */
export class Checkpointer {
  /**
   * The writer calls nudge() once `written` reaches this: WAKE_WRITES after the last checkpoint while idle, never
   * while one is due or running (its end looks at `written` itself).
   */
  wakeAt = WAKE_WRITES;
  /** The thread's checkpoint ended far behind: the writer finishes it between transactions (catchUpNow). */
  catchUp = false;
  private worker: Worker | null = null;
  private failed = false;
  private running = false;
  /** `written` when the last checkpoint began; moved since then: dirty. */
  private seen = 0;
  private timer: NodeJS.Timeout | null = null;
  /** Armed by soon(): a look after SOON_MS at writes too few to wake the thread (the WAL sync asks before calling). */
  soonTimer: NodeJS.Timeout | null = null;
  private lastAt = 0;
  /** See IDLE_TRUNCATE_BYTES; compiled at first use. */
  private truncateStmt: Database.Statement | null = null;
  private truncateTries = 0;
  /** A nudge cancels it. */
  private idleTimer: NodeJS.Timeout | null = null;
  private readonly closed = new Int32Array(new SharedArrayBuffer(4));

  constructor(
    private readonly db: Database.Database,
    private readonly path: string,
    private readonly log: Logger,
    private readonly source: { readonly written: number } = { written: 0 },
  ) {
    db.pragma('wal_autocheckpoint = 0');
    // Now rather than at the first commit, so the server's memory at rest already holds it.
    this.start();
  }

  /** At most one checkpoint runs, at most one every INTERVAL_MS. */
  nudge(): void {
    this.wakeAt = Infinity;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    if (this.running || this.timer || this.failed) return;
    const wait = Math.max(0, this.lastAt + INTERVAL_MS - Date.now());
    this.timer = setTimeout(this.runFn, wait).unref();
  }

  /** Writes were made, fewer than wake it: checkpoint them within SOON_MS unless more writes wake it first. */
  soon(): void {
    if (this.failed) return;
    this.soonTimer = setTimeout(() => {
      this.soonTimer = null;
      if (this.source.written !== this.seen && !this.running && this.timer === null) this.nudge();
    }, SOON_MS).unref();
  }

  /** Between transactions. */
  catchUpNow(): void {
    if (this.db.inTransaction) return;
    this.catchUp = false;
    this.db.pragma('wal_checkpoint(PASSIVE)');
  }

  /** Waits a few seconds at most for the thread's close, so the next closer finds the files settled (it removes the WAL). */
  close(): void {
    for (const t of [this.timer, this.idleTimer, this.soonTimer]) if (t) clearTimeout(t);
    this.timer = this.idleTimer = this.soonTimer = null;
    this.failed = true;
    this.wakeAt = Infinity;
    if (!this.worker) return;
    this.worker.postMessage('close');
    this.worker = null;
    Atomics.wait(this.closed, 0, 0, CLOSE_WAIT_MS);
  }

  private readonly runFn = (): void => {
    this.timer = null;
    if (this.failed) return;
    const w = this.worker ?? this.start();
    if (!w) return;
    this.running = true;
    this.seen = this.source.written;
    this.lastAt = Date.now();
    w.postMessage('checkpoint');
  };

  private start(): Worker | null {
    try {
      const w = new Worker(WORKER_SOURCE, { eval: true, workerData: { lib: betterSqliteLib(), addon: nativeBindingPath(), path: this.path, closed: this.closed } });
      w.unref();
      w.on('message', this.finished);
      w.on('error', (err) => this.fail(err.message));
      w.on('exit', (code) => {
        if (!this.failed) this.fail(`the checkpoint thread exited with code ${code}`);
      });
      this.worker = w;
      return w;
    } catch (err) {
      this.fail((err as Error).message);
      return null;
    }
  }

  private readonly finished = (m: { busy: number; log: number; done: number } | { error: string }): void => {
    this.running = false;
    const dirty = this.source.written !== this.seen;
    if ('error' in m) {
      // Tried again (say, the disk is full); the WAL keeps every commit.
      this.log.warn('WAL checkpoint failed; trying again', { error: m.error });
    } else {
      if (m.log >= CATCH_UP_FRAMES) this.catchUp = true;
      if (!dirty && this.walBytes() >= IDLE_TRUNCATE_BYTES) this.whenIdle(m.busy === 0 && m.done === m.log);
      else if (dirty) this.truncateTries = 0;
    }
    if (dirty) this.nudge();
    else if (!this.failed) this.wakeAt = this.source.written + WAKE_WRITES;
  };

  /**
   * Nothing was written since this checkpoint began and the WAL is large. If that holds for IDLE_MS and every
   * frame was copied back, cut it on the writer's connection (one ftruncate, no lock wait: busy_timeout 0). If a
   * reader of another connection got in the way, try again later while nothing is written.
   */
  private whenIdle(copied: boolean): void {
    if (this.idleTimer) return;
    if (!copied) return this.lookAgainLater();
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (this.running || this.failed) return;
      // Written meanwhile: checkpoint that too, then look again.
      if (this.source.written !== this.seen) return this.nudge();
      if (!this.truncate()) return this.lookAgainLater();
      this.catchUp = false;
      this.truncateTries = 0;
    }, IDLE_MS).unref();
  }

  /** A commit before then does it sooner. */
  private lookAgainLater(): void {
    if (++this.truncateTries >= TRUNCATE_TRIES) return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      this.nudge();
    }, TRUNCATE_RETRY_MS).unref();
  }

  private walBytes(): number {
    try {
      return statSync(`${this.path}-wal`).size;
    } catch {
      return 0;
    }
  }

  /** `PRAGMA wal_checkpoint(TRUNCATE)` between transactions; true when the WAL was cut. */
  private truncate(): boolean {
    if (!this.db.open || this.db.inTransaction) return false;
    try {
      this.truncateStmt ??= this.db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').raw(true);
      const [busy] = this.truncateStmt.get() as number[];
      return busy === 0;
    } catch (err) {
      this.log.warn('cannot cut the idle WAL; trying again', { error: (err as Error).message });
      return false;
    }
  }

  private fail(reason: string): void {
    if (this.failed) return;
    this.failed = true;
    this.wakeAt = Infinity;
    this.worker = null;
    if (this.db.open) this.db.pragma('wal_autocheckpoint = 1000');
    this.log.warn('WAL checkpoint thread stopped; checkpointing on the writer', { error: reason });
  }
}

import { statSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import type { Logger } from '../../log';
import { betterSqliteLib, nativeBindingPath } from './open';

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
  /** Armed by soon(): a look after SOON_MS at writes too few to wake the thread. */
  private soonTimer: NodeJS.Timeout | null = null;
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
    this.timer = setTimeout(this.runFn, wait);
    this.timer.unref();
  }

  /** Writes were made, fewer than wake it: checkpoint them within SOON_MS unless more writes wake it first. */
  soon(): void {
    if (this.soonTimer !== null || this.failed) return;
    this.soonTimer = setTimeout(() => {
      this.soonTimer = null;
      if (this.source.written !== this.seen && !this.running && this.timer === null) this.nudge();
    }, SOON_MS);
    this.soonTimer.unref();
  }

  /** Between transactions. */
  catchUpNow(): void {
    if (this.db.inTransaction) return;
    this.catchUp = false;
    this.db.pragma('wal_checkpoint(PASSIVE)');
  }

  /** Waits a few seconds at most for the thread's close, so the next closer finds the files settled (it removes the WAL). */
  close(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.idleTimer) clearTimeout(this.idleTimer);
    if (this.soonTimer) clearTimeout(this.soonTimer);
    this.timer = null;
    this.idleTimer = null;
    this.soonTimer = null;
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
      w.on('message', (m: { busy: number; log: number; done: number } | { error: string }) => this.finished(m));
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

  private finished(m: { busy: number; log: number; done: number } | { error: string }): void {
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
  }

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
    }, IDLE_MS);
    this.idleTimer.unref();
  }

  /** A commit before then does it sooner. */
  private lookAgainLater(): void {
    if (++this.truncateTries >= TRUNCATE_TRIES) return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      this.nudge();
    }, TRUNCATE_RETRY_MS);
    this.idleTimer.unref();
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

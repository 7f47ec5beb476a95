import { statSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import type { Logger } from '../../log';
import { betterSqliteLib, nativeBindingPath } from './open';

/** Least time between two checkpoints while commits keep coming. */
const INTERVAL_MS = 50;
/**
 * WAL frames (4 KiB pages) past which the writer finishes a checkpoint itself. Under steady writes the
 * thread's checkpoint always ends a little behind the newest commit, and SQLite starts the WAL over only once
 * every frame is back in the database; the writer's own catch-up copies just those last frames.
 */
export const CATCH_UP_FRAMES = 4096;
/**
 * Size of the WAL file at or above which the writer cuts it to nothing once it has been idle for IDLE_MS
 * after a checkpoint that copied every frame back. A WAL fully copied back still holds its frames until the
 * next commit starts it over, and a start after a crash reads and checksums them all again before it can
 * serve (after a long clock advance, up to the catch-up mark and a transaction: 25 MB). A smaller file is
 * left as it is: a quiet server goes on rewriting the same blocks instead of growing a new file, whose syncs
 * must also record its size.
 */
const IDLE_TRUNCATE_BYTES = 1024 * 1024;
/** No commit for this long after a complete checkpoint: the writer is idle (a burst has ended, not paused). */
const IDLE_MS = 100;
/** A reader of another connection (an admin command, a backup) kept the idle WAL from being copied back or cut: wait, then look again. */
const TRUNCATE_RETRY_MS = 1000;
/** Looks in a row at an idle WAL that could not be cut before leaving it to the next commit (which starts it over). */
const TRUNCATE_TRIES = 30;
/** Longest wait at close for the thread to close its connection (it may be in the middle of a checkpoint). */
const CLOSE_WAIT_MS = 5000;

// The thread opens the same file through better-sqlite3's public API, with synchronous=FULL, so that a
// checkpoint syncs the WAL before copying pages and the database file after. Its JavaScript comes from the
// package in development; the single executable carries a bundled copy as text (see build.mjs and
// src/sea.ts), since a thread cannot load modules out of the executable's main script.
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
 * Checkpoints the WAL on a thread of its own, so that copying pages into the database and the two syncs
 * that go with it never hold up the event loop. The writer's connection runs with wal_autocheckpoint = 0;
 * should the thread fail, it goes back to checkpointing inline.
 */
export class Checkpointer {
  private worker: Worker | null = null;
  private failed = false;
  private running = false;
  private dirty = false;
  private timer: NodeJS.Timeout | null = null;
  private lastAt = 0;
  private catchUp = false;
  /** Cuts the WAL on the writer's connection (see IDLE_TRUNCATE_BYTES); compiled at first use. */
  private truncateStmt: Database.Statement | null = null;
  private truncateTries = 0;
  /** Pending look at an idle WAL (whenIdle, lookAgainLater); a commit cancels it. */
  private idleTimer: NodeJS.Timeout | null = null;
  /** Set to 1 by the thread once its connection is closed. */
  private readonly closed = new Int32Array(new SharedArrayBuffer(4));

  constructor(
    private readonly db: Database.Database,
    private readonly path: string,
    private readonly log: Logger,
  ) {
    db.pragma('wal_autocheckpoint = 0');
    // Started now rather than at the first commit, so that the server's memory at rest already holds it.
    this.start();
  }

  /** Commits were made: checkpoint soon (at most one checkpoint runs, at most one every INTERVAL_MS). */
  nudge(): void {
    this.dirty = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    if (this.running || this.timer || this.failed) return;
    const wait = Math.max(0, this.lastAt + INTERVAL_MS - Date.now());
    this.timer = setTimeout(this.runFn, wait);
    this.timer.unref();
  }

  /** Between transactions: when the WAL has grown long, finish the checkpoint on the writer's connection. */
  catchUpIfLong(): void {
    if (!this.catchUp || this.db.inTransaction) return;
    this.catchUp = false;
    this.db.pragma('wal_checkpoint(PASSIVE)');
  }

  /**
   * Stop the thread and wait (a few seconds at most) until it has closed its connection, so that whoever
   * closes the store next finds the files settled: a connection closing last checkpoints and removes the WAL.
   */
  close(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.timer = null;
    this.idleTimer = null;
    this.failed = true;
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
    this.dirty = false;
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
    if ('error' in m) {
      // A checkpoint that could not run (say, the disk is full) is tried again; the WAL keeps every commit.
      this.log.warn('WAL checkpoint failed; trying again', { error: m.error });
    } else {
      if (m.log >= CATCH_UP_FRAMES) this.catchUp = true;
      if (!this.dirty && this.walBytes() >= IDLE_TRUNCATE_BYTES) this.whenIdle(m.busy === 0 && m.done === m.log);
      else if (this.dirty) this.truncateTries = 0;
    }
    if (this.dirty) this.nudge();
  }

  /**
   * Nothing was committed since this checkpoint began and the WAL file is large. If nothing is committed for
   * IDLE_MS either and the checkpoint copied every frame back (the thread synced them into the database),
   * cut the file to nothing on the writer's connection: that copies nothing, costs one ftruncate, and waits
   * for no lock (busy_timeout is 0). When a reader of another connection kept frames from being copied back
   * or the file from being cut, checkpoint again a little later, as long as nothing is written (a commit
   * starts the WAL over anyway).
   */
  private whenIdle(copied: boolean): void {
    if (this.idleTimer) return;
    if (!copied) return this.lookAgainLater();
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (this.dirty || this.running || this.failed) return;
      if (!this.truncate()) return this.lookAgainLater();
      this.catchUp = false;
      this.truncateTries = 0;
    }, IDLE_MS);
    this.idleTimer.unref();
  }

  /** Checkpoint the idle WAL again after TRUNCATE_RETRY_MS (a commit before then does it sooner). */
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

  /** `PRAGMA wal_checkpoint(TRUNCATE)` on the writer's connection between transactions; true when the WAL was cut. */
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
    this.worker = null;
    if (this.db.open) this.db.pragma('wal_autocheckpoint = 1000');
    this.log.warn('WAL checkpoint thread stopped; checkpointing on the writer', { error: reason });
  }
}

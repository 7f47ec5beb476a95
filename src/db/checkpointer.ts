import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import type { Logger } from '../log';
import { betterSqliteLib, nativeBindingPath } from './native';

/** Least time between two checkpoints while commits keep coming. */
const INTERVAL_MS = 50;
/**
 * WAL frames (4 KiB pages) past which the writer finishes a checkpoint itself. Under steady writes the
 * thread's checkpoint always ends a little behind the newest commit, and SQLite starts the WAL over only once
 * every frame is back in the database; the writer's own catch-up copies just those last frames.
 */
const CATCH_UP_FRAMES = 4096;
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
    this.timer = null;
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
    } else if (m.log >= CATCH_UP_FRAMES) {
      this.catchUp = true;
    }
    if (this.dirty) this.nudge();
  }

  private fail(reason: string): void {
    if (this.failed) return;
    this.failed = true;
    this.worker = null;
    if (this.db.open) this.db.pragma('wal_autocheckpoint = 1000');
    this.log.warn('WAL checkpoint thread stopped; checkpointing on the writer', { error: reason });
  }
}

import type Database from 'better-sqlite3';
import type { Logger } from '../../log';
import { runBody, type Body } from './body';
import { SqliteTx } from './tx';

/** A body queued for a group commit, and who waits for its outcome. */
export type Pending = {
  fn: Body<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  seen?: { seq?: number };
};

/** The outcome of one body of a committed group: its value or error, and the hooks it queued. */
export type Outcome = { ok: boolean; value: unknown; hooks: Array<() => void> };

/** The stand-in body of a tx() made durable later: nobody waits on its promise, only its hooks run. */
export const DETACHED: Pending = { fn: () => undefined, resolve: () => undefined, reject: () => undefined };

/** A group committed, its bodies' outcomes waiting for the WAL sync that makes them durable. */
type Committed = { seq: number; batch: Pending[]; outcomes: Outcome[] };

/**
 * Commits numbered in order, and which of them are on disk. A committed group's promises settle, and its
 * after-commit hooks run, only once a sync covers its number; whenDurable() lets a reader of committed data
 * wait for the same before it shows that data outside the process.
 */
export class Durability {
  /** Commits made; commits known to be on disk. */
  private committedSeq = 0;
  private durableSeq = 0;
  /** Groups committed whose sync has not finished. */
  private awaiting: Committed[] = [];
  /** whenDurable() callers and the commit each waits for. */
  private waiters: Array<{ seq: number; resolve: () => void }> = [];

  constructor(private readonly log: Logger) {}

  /** Commits made so far. */
  get commits(): number {
    return this.committedSeq;
  }

  /** True when some commit is not on disk yet. */
  get behind(): boolean {
    return this.durableSeq < this.committedSeq;
  }

  /** Number a commit; its group's outcomes wait for the sync that covers it. Returns the commit's number. */
  committed(batch: Pending[], outcomes: Outcome[]): number {
    const seq = ++this.committedSeq;
    this.awaiting.push({ seq, batch, outcomes });
    return seq;
  }

  /** Number a commit whose caller settles by itself (tx() made durable now). */
  next(): number {
    return ++this.committedSeq;
  }

  /** Null when every commit up to `upTo` (default: all) is on disk; else a promise that settles once they are. */
  whenDurable(upTo: number = this.committedSeq): Promise<void> | null {
    if (this.durableSeq >= upTo) return null;
    const seq = Math.min(upTo, this.committedSeq);
    return new Promise<void>((resolve) => this.waiters.push({ seq, resolve }));
  }

  /** Run after-commit hooks; one that throws is logged and does not stop the others. */
  runHooks(hooks: Array<() => void>): void {
    for (const h of hooks) {
      try {
        h();
      } catch (err) {
        // An after-commit action must not undo or hide a commit; the durable record (jobs, outbox) retries it.
        this.log.error('after-commit action failed', { error: String(err) });
      }
    }
  }

  /** Every commit up to `upTo` is on disk: settle their groups and wake the readers waiting for them. */
  markDurable(upTo: number): void {
    if (upTo > this.durableSeq) this.durableSeq = upTo;
    let n = 0;
    while (n < this.awaiting.length && this.awaiting[n].seq <= this.durableSeq) n++;
    const done = n === 0 ? [] : this.awaiting.splice(0, n);
    for (const g of done) {
      for (let i = 0; i < g.batch.length; i++) {
        const o = g.outcomes[i];
        const seen = g.batch[i].seen;
        if (seen) seen.seq = g.seq;
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
}

/** Error codes of the storage itself (as opposed to a body's own error). */
const STORAGE_CODES = /^SQLITE_(FULL|IOERR|CANTOPEN|READONLY)/;

/**
 * The bodies of one group, inside its open transaction, one after another, each in its own savepoint: a body
 * that throws is rolled back alone and its error becomes its outcome. `lost` is set when the whole transaction
 * is gone (a full disk or an I/O error can make SQLite roll it back, taking every body with it); `storageErr`
 * when some body met a storage error that left the transaction standing.
 */
export async function runBodies(
  db: Database.Database,
  connection: object,
  stmts: { savepoint: Database.Statement; release: Database.Statement; rollbackTo: Database.Statement },
  batch: Pending[],
  outcomes: Outcome[],
): Promise<{ lost: unknown; storageErr: unknown }> {
  let lost: unknown = null;
  let storageErr: unknown = null;
  for (const p of batch) {
    const hooks: Array<() => void> = [];
    const tx = new SqliteTx(db, connection, hooks);
    stmts.savepoint.run();
    try {
      const value = await runBody(p.fn, tx);
      tx.end();
      stmts.release.run();
      outcomes.push({ ok: true, value, hooks });
    } catch (err) {
      tx.end();
      if (STORAGE_CODES.test(String((err as { code?: string }).code ?? ''))) storageErr = err;
      if (!db.inTransaction) {
        lost = err;
        break;
      }
      try {
        stmts.rollbackTo.run();
        stmts.release.run();
      } catch (undo) {
        lost = undo;
        break;
      }
      outcomes.push({ ok: false, value: err, hooks: [] });
    }
  }
  return { lost, storageErr };
}

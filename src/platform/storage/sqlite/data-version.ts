import type Database from 'better-sqlite3';

const watches = new WeakMap<Database.Database, DataVersionWatch>();

/**
 * Notices commits made by other connections to the same file (an admin command in another process): they
 * show as a new `PRAGMA data_version`, read at most once per event-loop turn for all of a connection's caches.
 * A read costs as much as the cached lookups it guards, and one turn's requests arrived together anyway.
 * Staleness bound for changes made elsewhere: the rest of the turn in which they commit, never a later request.
 */
export class DataVersionWatch {
  private readonly stmt: Database.Statement;
  private version: unknown;
  private checkedThisTurn = false;
  private readonly listeners: Array<() => void> = [];
  private readonly endTurn = (): void => {
    this.checkedThisTurn = false;
  };

  /** The watch of `db`, made on first use. */
  static of(db: Database.Database): DataVersionWatch {
    let w = watches.get(db);
    if (!w) watches.set(db, (w = new DataVersionWatch(db)));
    return w;
  }

  private constructor(db: Database.Database) {
    // A statement of its own: pluck() changes a statement, so it must not come from the shared cache.
    this.stmt = db.prepare('PRAGMA data_version').pluck();
    this.version = this.stmt.get();
  }

  /** Call `fn` whenever a check finds another connection's commit. */
  onChange(fn: () => void): void {
    this.listeners.push(fn);
  }

  /** Before using a cache: at the first call of a turn, read the version and tell the listeners if it moved. */
  check(): void {
    if (this.checkedThisTurn) return;
    this.checkedThisTurn = true;
    setImmediate(this.endTurn);
    const v = this.stmt.get();
    if (v === this.version) return;
    this.version = v;
    for (const fn of this.listeners) fn();
  }
}

import type Database from 'better-sqlite3';

/**
 * Notices commits made by other connections to the same file (an admin command in another process): they
 * show as a new `PRAGMA data_version`, read at most once per event-loop turn. A read costs as much as the
 * cached lookups it guards, and one turn's requests arrived together anyway. Staleness bound for changes made
 * elsewhere: the rest of the turn in which they commit, never a later request.
 */
export class DataVersionWatch {
  private readonly stmt: Database.Statement;
  private version: unknown;
  private checkedThisTurn = false;
  private readonly endTurn = (): void => {
    this.checkedThisTurn = false;
  };

  constructor(db: Database.Database) {
    // A statement of its own: pluck() changes a statement, so it must not come from the shared cache.
    this.stmt = db.prepare('PRAGMA data_version').pluck();
    this.version = this.stmt.get();
  }

  /** True at the first call of a turn in which another connection's commit became visible. */
  changedElsewhere(): boolean {
    if (this.checkedThisTurn) return false;
    this.checkedThisTurn = true;
    setImmediate(this.endTurn);
    const v = this.stmt.get();
    const changed = v !== this.version;
    this.version = v;
    return changed;
  }
}

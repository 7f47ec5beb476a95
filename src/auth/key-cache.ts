import type Database from 'better-sqlite3';

/** Most keys held; past it the cache starts over (a flood of distinct valid keys costs lookups, not memory). */
const MAX_ENTRIES = 10_000;

/** The tables and columns a key lookup reads: a change to any of them may change an answer. */
const WATCHED: Array<{ table: string; columns: string }> = [
  { table: 'api_keys', columns: '' },
  { table: 'shops', columns: 'id, merchant_id, name, scopes, ip_allowlist, signing_secret, require_signature' },
  { table: 'merchants', columns: 'id, live_enabled' },
];

/**
 * Key lookups of one connection, by key hash. The cache is dropped when anything it was built from may have
 * changed. This connection's own writes to the key, shop or merchant tables fire temporary triggers that mark
 * it dirty, seen by the very next lookup (a rolled-back change marks it too: a needless reload, never a stale
 * answer). Another connection's commit (an admin command in another process) shows as a new
 * `PRAGMA data_version`, read at the first lookup of each event-loop turn: a read costs as much as the lookup
 * it saves, and one turn's requests arrived together anyway. Staleness bound for changes made elsewhere: the
 * rest of the turn in which they commit (the requests already read from the sockets), never a later request.
 */
export class KeyCache<T> {
  private readonly entries = new Map<string, T>();
  private readonly dataVersion: Database.Statement;
  private version: unknown;
  private dirty = false;
  private checkedThisTurn = false;
  private readonly endTurn = (): void => {
    this.checkedThisTurn = false;
  };

  constructor(db: Database.Database) {
    // A statement of its own: pluck() changes a statement, so it must not come from the shared cache.
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
    this.version = this.dataVersion.get();
    db.function('kopek_auth_changed', () => {
      this.dirty = true;
      return null;
    });
    for (const { table, columns } of WATCHED) {
      for (const op of ['INSERT', 'UPDATE', 'DELETE']) {
        const on = op === 'UPDATE' && columns ? `UPDATE OF ${columns}` : op;
        db.exec(`CREATE TEMP TRIGGER IF NOT EXISTS kopek_auth_${table}_${op.toLowerCase()} AFTER ${on} ON main.${table} BEGIN SELECT kopek_auth_changed(); END`);
      }
    }
  }

  /** The entry for `hash`, if held and still current. */
  get(hash: string): T | undefined {
    if (!this.checkedThisTurn) {
      this.checkedThisTurn = true;
      setImmediate(this.endTurn);
      const v = this.dataVersion.get();
      if (v !== this.version) {
        this.version = v;
        this.dirty = true;
      }
    }
    if (this.dirty) {
      this.entries.clear();
      this.dirty = false;
      return undefined;
    }
    return this.entries.get(hash);
  }

  /**
   * Hold `entry`, read from the database after the get() that missed. A commit from elsewhere between the
   * two makes the entry newer than the version noted, never older, and the next get() drops it anyway.
   */
  set(hash: string, entry: T): void {
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(hash, entry);
  }
}

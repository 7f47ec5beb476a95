import type Database from 'better-sqlite3';
import { DataVersionWatch } from '../db/data-version';

/** Most keys held; past it the cache starts over (a flood of distinct valid keys costs lookups, not memory). */
const MAX_ENTRIES = 10_000;

/** The tables and columns a key lookup reads: a change to any of them may change an answer. */
const WATCHED: Array<{ table: string; columns: string }> = [
  { table: 'api_keys', columns: '' },
  { table: 'shops', columns: 'id, merchant_id, name, scopes, ip_allowlist, signing_secret, require_signature' },
  { table: 'merchants', columns: 'id, live_enabled' },
  { table: 'shop_acquirers', columns: '' },
];

/**
 * Key lookups of one connection, by key hash. The cache is dropped when anything it was built from may have
 * changed. This connection's own writes to the key, shop or merchant tables fire temporary triggers that mark
 * it dirty, seen by the very next lookup (a rolled-back change marks it too: a needless reload, never a stale
 * answer). Another connection's commit drops it through DataVersionWatch, with its staleness bound: the rest
 * of the turn in which that commit lands (the requests already read from the sockets), never a later request.
 */
export class KeyCache<T> {
  private readonly entries = new Map<string, T>();
  private readonly elsewhere: DataVersionWatch;
  private dirty = false;

  constructor(db: Database.Database) {
    this.elsewhere = DataVersionWatch.of(db);
    this.elsewhere.onChange(() => {
      this.dirty = true;
    });
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
    this.elsewhere.check();
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

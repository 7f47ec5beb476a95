import type { Store } from '../storage/store';

/** Most keys held; past it the cache starts over (a flood of distinct valid keys costs lookups, not memory). */
const MAX_ENTRIES = 10_000;

/**
 * Key lookups of one store, by key hash. The cache holds an entry only while the store's keyTablesVersion stands
 * where it stood before the entry was read: the version moves with every commit that may have changed a key, its
 * shop, its merchant or their bank connections, through this store, another process or another node (see
 * Store.keyTablesVersion for each engine's bound on how soon).
 */
export class KeyCache<T> {
  private readonly entries = new Map<string, T>();
  /** The store's version the entries were read at. */
  private version: number;

  constructor(private readonly store: Pick<Store, 'keyTablesVersion'>) {
    this.version = store.keyTablesVersion();
  }

  /** The entry for `hash`, if held and still current. */
  get(hash: string): T | undefined {
    const v = this.store.keyTablesVersion();
    if (v !== this.version) {
      this.entries.clear();
      this.version = v;
      return undefined;
    }
    return this.entries.get(hash);
  }

  /** The version to hand back to set() with an entry read from the database after this call. */
  current(): number {
    return this.store.keyTablesVersion();
  }

  /**
   * Hold `entry`, read from the database after current() returned `version`. An entry read across a change (the
   * read waited, and a write or another process's commit came between) may be older than the change: it is not
   * held, and the next lookup reads again.
   */
  set(hash: string, entry: T, version: number): void {
    if (version !== this.store.keyTablesVersion()) return;
    if (version !== this.version) {
      this.entries.clear();
      this.version = version;
    }
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(hash, entry);
  }
}

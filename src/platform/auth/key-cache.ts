import type { ChangeSignal, WatchSpec } from '../storage/change-signal';

/** Most keys held; past it the cache starts over (a flood of distinct valid keys costs lookups, not memory). */
const MAX_ENTRIES = 10_000;

/** The tables and columns a key lookup reads: a change to any of them may change an answer. */
const WATCHED: Array<{ table: string; columns?: string[] }> = [
  { table: 'api_keys' },
  { table: 'shops', columns: ['id', 'merchant_id', 'name', 'scopes', 'ip_allowlist', 'signing_secret', 'require_signature'] },
  { table: 'merchants', columns: ['id', 'live_enabled'] },
  { table: 'shop_acquirers' },
  { table: 'shop_payout_providers' },
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
  private dirty = false;
  /** Bumped whenever the entries may be stale: an entry read before a bump is not held (see set). */
  private generation = 0;
  private readonly changes: ChangeSignal;
  /** True when the store's signal cannot see changes to what keys are built from: nothing is held. */
  private readonly off: boolean;

  /** `store`: the Store whose change signal the cache follows. */
  constructor(store: { readonly changes: ChangeSignal }) {
    const changes = (this.changes = store.changes);
    const stale = (): void => {
      this.dirty = true;
      this.generation++;
    };
    changes.onCommitElsewhere(stale);
    const specs: WatchSpec[] = [];
    for (const { table, columns } of WATCHED) {
      for (const on of ['INSERT', 'UPDATE', 'DELETE'] as const) specs.push({ table, on, columns: on === 'UPDATE' ? columns : undefined });
    }
    this.off = !changes.watch('auth', specs, stale);
  }

  /** The entry for `hash`, if held and still current. */
  get(hash: string): T | undefined {
    if (this.off) return undefined;
    this.changes.check();
    if (this.dirty) {
      this.entries.clear();
      this.dirty = false;
      return undefined;
    }
    return this.entries.get(hash);
  }

  /** The generation to hand back to set() with an entry read from the database after this call. */
  current(): number {
    return this.generation;
  }

  /**
   * Hold `entry`, read from the database after current() returned `generation`. An entry read across a change
   * (the read waited, and a write or another process's commit came between) may be older than the change: it is
   * not held, and the next lookup reads again.
   */
  set(hash: string, entry: T, generation: number): void {
    if (this.off || generation !== this.generation) return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(hash, entry);
  }
}

import type { Store } from '../../platform/storage/store';
import type { Mode } from '../../platform/clock';

/** Most answers held; past it the cache starts over. */
const MAX_ENTRIES = 10_000;

/**
 * Bits of the admission filter (2^17, 16 KiB), and how many first reads it records before it starts over,
 * so that it stays sparse: at most a tenth of its bits set, so one payment in ten read once is held anyway.
 */
const SEEN_BITS = 1 << 17;
const SEEN_LIMIT = SEEN_BITS / 10;

/** A payment's GET answer as JSON text, with what the access check needs. */
export interface CachedView {
  shop_id: string;
  mode: Mode;
  json: string;
}

/**
 * The GET answers of recently read payments, so that a read of an unchanged payment skips the query, the
 * view and its serialisation. An answer depends on the payment row, its refunds and its shop's name; every
 * change to those through this connection fires a temporary trigger that drops the payment's entry (or, for a
 * shop, every entry) before the change commits. A change rolled back drops it too: a needless reload, never a
 * stale answer. Commits of other connections empty the cache (the store's change signal). Entries are filled only
 * between transactions, so they never hold uncommitted data.
 *
 * An answer is held from its payment's second read on. Most payments are read once (a webhook-driven lookup,
 * a register walk); holding each of those answers would keep 10,000 strings alive for the collector to move
 * and mark, and push out the payments that are polled. A bit per hashed id records the first read.
 */
export class PaymentViewCache {
  private readonly entries = new Map<string, CachedView>();
  private readonly seen = new Uint32Array(SEEN_BITS / 32);
  private seenCount = 0;
  /** True when the store's signal cannot see payment writes (PostgreSQL announces none): nothing is held. */
  private readonly off: boolean;

  constructor(private readonly store: Store) {
    // The storage layer no longer offers the per-row change signal this cache followed: it holds nothing.
    this.off = true;
  }

  /** The held answer for payment `id`, if any and current. */
  get(id: string): CachedView | undefined {
    if (this.off) return undefined;
    return this.entries.get(id);
  }

  /**
   * Offer an answer just read; held if its payment was read before (see the class), never inside a
   * transaction, whose data may yet roll back.
   */
  set(id: string, view: CachedView): void {
    if (this.off || this.store.inTransaction || !this.readBefore(id)) return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(id, view);
  }

  /** True when an answer for payment `id` is held now. */
  holds(id: string): boolean {
    return this.entries.has(id);
  }

  /** True when `id` was offered before (or shares its bit with one that was); records it otherwise. */
  private readBefore(id: string): boolean {
    let h = 0x811c9dc5;
    for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
    const bit = (h >>> 0) % SEEN_BITS;
    const word = bit >>> 5;
    const mask = 1 << (bit & 31);
    if (this.seen[word] & mask) return true;
    if (++this.seenCount > SEEN_LIMIT) {
      this.seen.fill(0);
      this.seenCount = 1;
    }
    this.seen[word] |= mask;
    return false;
  }
}

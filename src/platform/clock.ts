import type { Reader, Tx } from './storage/store';

/** A mode of the API: test keys drive the simulator on a per-shop test clock; live keys use real time. */
export type Mode = 'test' | 'live';

/** Where a view of a transaction (a job's savepoint) keeps the transaction it wraps, so clock memos are shared. */
export const TX_BASE: unique symbol = Symbol('kopek.tx-base');

type Based = { [TX_BASE]?: Reader };

/**
 * Time for domain code (never Date.now()): live objects use real time; a shop's test objects real time plus an
 * offset that only moves forward. Offsets live only in the database (`shops.test_clock_offset_ms`), read through
 * the transaction, so an advance by any process is seen by all; a transaction reads one once and keeps it. `readAs`
 * fixes a shop's clock in one transaction only, never in the process. A known offset is answered without a read,
 * so a second look at the clock in one transaction costs one call.
 */
export class Clocks {
  /** By transaction (its base object): shop → offset, and shop → moment fixed by readAs. */
  private readonly memo = new WeakMap<object, Map<string, number>>();
  private readonly fixed = new WeakMap<object, Map<string, number>>();
  /** While none, `now` looks for no fixed moment. */
  private fixing = 0;

  constructor(
    /** Injectable so tests of the scheduler can drive it. */
    readonly real: () => number = Date.now,
  ) {}

  /** `q`: the caller's transaction, or the store outside one. */
  now(q: Reader, shopId: string | null, mode: Mode): Promise<number> {
    if (mode === 'live' || shopId === null) return Promise.resolve(this.real());
    const key = (q as Based)[TX_BASE] ?? q;
    if (this.fixing > 0) {
      const at = this.fixed.get(key)?.get(shopId);
      if (at !== undefined) return Promise.resolve(at);
    }
    const known = this.memo.get(key)?.get(shopId);
    return known !== undefined ? Promise.resolve(this.real() + known) : this.read(q, key, shopId, true);
  }

  /** The committed offset even while readAs holds the clock (it may have moved since): it places new jobs in real time. */
  offset(q: Reader, shopId: string): Promise<number> {
    const key = (q as Based)[TX_BASE] ?? q;
    const known = this.memo.get(key)?.get(shopId);
    return known !== undefined ? Promise.resolve(known) : this.read(q, key, shopId, false);
  }

  toReal(q: Reader, shopId: string | null, mode: Mode, at_ms: number): Promise<number> {
    return mode === 'live' || shopId === null ? Promise.resolve(at_ms) : this.offset(q, shopId).then((o) => at_ms - o);
  }

  /** The shop's test clock reads `at` in `tx` until `fn`'s promise settles. */
  async readAs<T>(tx: Tx, shopId: string, at: number, fn: () => Promise<T>): Promise<T> {
    const key = (tx as Based)[TX_BASE] ?? tx;
    let m = this.fixed.get(key);
    if (!m) this.fixed.set(key, (m = new Map()));
    const before = m.get(shopId);
    m.set(shopId, at);
    this.fixing++;
    try {
      return await fn();
    } finally {
      this.fixing--;
      if (before === undefined) m.delete(shopId);
      else m.set(shopId, before);
    }
  }

  /** The shop's offset (plus real time when `asNow`). */
  private async read(q: Reader, key: object, shopId: string, asNow: boolean): Promise<number> {
    const row = await q.get<{ o: number }>('SELECT test_clock_offset_ms AS o FROM shops WHERE id = ?', shopId);
    const o = row?.o ?? 0;
    // Only a transaction keeps what it read: the store answers for whatever is committed when asked.
    if (typeof (q as Partial<Tx>).afterCommit === 'function') {
      let m = this.memo.get(key);
      if (!m) this.memo.set(key, (m = new Map()));
      m.set(shopId, o);
    }
    return asNow ? this.real() + o : o;
  }
}

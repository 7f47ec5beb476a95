import type { Reader, Tx } from './storage/store';

/** A mode of the API: test keys drive the simulator on a per-shop test clock; live keys use real time. */
export type Mode = 'test' | 'live';

/**
 * Where a view of a transaction (a job's view of its savepoint) keeps the transaction it wraps: what a
 * transaction remembers of the clocks reads the same through every view of it.
 */
export const TX_BASE: unique symbol = Symbol('kopek.tx-base');

/**
 * Time for domain code. Live objects use real time; each shop's test-mode objects use that shop's test
 * clock: real time plus an offset that only moves forward. Domain code never calls Date.now().
 *
 * The offsets live in the database only (`shops.test_clock_offset_ms`): a clock is read through the transaction
 * that uses it (or the store, outside one), so an advance through any process is seen by every process. A
 * transaction reads a shop's offset once and keeps it (a memo tied to the transaction object). `readAs` makes a
 * shop's clock read a fixed moment in one transaction only, never in the process, so no other request sees it.
 */
export class Clocks {
  /** Offsets a transaction already read, by transaction (its base object): shop → offset. */
  private readonly memo = new WeakMap<object, Map<string, number>>();
  /** Moments set by readAs, by transaction (its base object): shop → moment. */
  private readonly fixed = new WeakMap<object, Map<string, number>>();
  /** readAs calls in progress: while none, `now` looks for no fixed moment. */
  private fixing = 0;

  constructor(
    /** Real time in ms; injectable so tests of the scheduler can drive it. */
    readonly real: () => number = Date.now,
  ) {}

  /** Now on the clock of a shop's mode, read through `q` (the caller's transaction, or the store outside one). */
  async now(q: Reader, shopId: string | null, mode: Mode): Promise<number> {
    if (mode === 'live' || shopId === null) return this.real();
    const key = (q as { [TX_BASE]?: Reader })[TX_BASE] ?? q;
    if (this.fixing > 0) {
      const at = this.fixed.get(key)?.get(shopId);
      if (at !== undefined) return at;
    }
    const known = this.memo.get(key)?.get(shopId);
    return this.real() + (known ?? (await this.read(q, key, shopId)));
  }

  /**
   * A shop's test clock offset in ms, read through `q`. The offset is the committed one even while readAs holds
   * the clock (a second advance of the shop may have moved it since the first began): it places new jobs in real time.
   */
  async offset(q: Reader, shopId: string): Promise<number> {
    const key = (q as { [TX_BASE]?: Reader })[TX_BASE] ?? q;
    return this.memo.get(key)?.get(shopId) ?? (await this.read(q, key, shopId));
  }

  /** Real time at which a moment on a shop's clock arrives, read through `q`. */
  async toReal(q: Reader, shopId: string | null, mode: Mode, at_ms: number): Promise<number> {
    if (mode === 'live' || shopId === null) return at_ms;
    return at_ms - (await this.offset(q, shopId));
  }

  /** Run `fn` with the shop's test clock reading `at` in transaction `tx` until the promise it returns settles. */
  async readAs<T>(tx: Tx, shopId: string, at: number, fn: () => Promise<T>): Promise<T> {
    const key = (tx as { [TX_BASE]?: Reader })[TX_BASE] ?? tx;
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

  private async read(q: Reader, key: object, shopId: string): Promise<number> {
    const row = await q.get<{ o: number }>('SELECT test_clock_offset_ms AS o FROM shops WHERE id = ?', shopId);
    const o = row?.o ?? 0;
    // Only a transaction keeps what it read: the store answers for whatever is committed when asked.
    if (typeof (q as Partial<Tx>).afterCommit === 'function') {
      let m = this.memo.get(key);
      if (!m) this.memo.set(key, (m = new Map()));
      m.set(shopId, o);
    }
    return o;
  }
}

import type { Reader, Store } from '../db/store';

/** A mode of the API: test keys drive the simulator on a per-shop test clock; live keys use real time. */
export type Mode = 'test' | 'live';

/**
 * Time for domain code. Live objects use real time; each shop's test-mode objects use that shop's test
 * clock: real time plus an offset that only moves forward. Domain code never calls Date.now().
 *
 * Reading a clock never touches the database: the offsets are held in memory. `load()` reads every shop's
 * offset once at start-up (before anything reads a test clock); from then on this process keeps them up to
 * date as it moves them (advance) or sets them back (forget, after a reset). A shop with no offset held reads 0,
 * the offset every shop starts with.
 */
export class Clocks {
  /** Test clock offsets that are not 0, by shop. */
  private readonly offsets = new Map<string, number>();
  private readonly pins = new Map<string, number>();
  private readonly listeners: Array<(shopId: string) => void | Promise<void>> = [];

  constructor(
    private readonly store: Store,
    /** Real time in ms; injectable so tests of the scheduler can drive it. */
    readonly real: () => number = Date.now,
  ) {}

  /** Read every shop's test clock offset (`q`: the store, or a transaction); call once before serving. */
  async load(q: Reader = this.store): Promise<void> {
    const rows = await q.all<{ id: string; o: number }>('SELECT id, test_clock_offset_ms AS o FROM shops WHERE test_clock_offset_ms <> 0');
    this.offsets.clear();
    for (const r of rows) this.offsets.set(r.id, r.o);
  }

  /** Now on the clock of a shop's mode. */
  now(shopId: string | null, mode: Mode): number {
    const real = this.real();
    if (mode === 'live' || shopId === null) return real;
    const pin = this.pins.get(shopId);
    return pin ?? real + this.offset(shopId);
  }

  /**
   * Run `fn` with the shop's test clock reading `at_ms` until the promise it returns settles. An advance runs
   * each due job at its own due time, so a job that schedules "a month from now" lands a month after its
   * predecessor, not after the end of the advance: a year of monthly charges happens in one advance.
   * Only a transaction body pins a clock (bodies run one at a time), and only for the body's own work.
   */
  async pinned<T>(shopId: string, at_ms: number, fn: () => Promise<T>): Promise<T> {
    const before = this.pins.get(shopId);
    this.pins.set(shopId, at_ms);
    try {
      return await fn();
    } finally {
      if (before === undefined) this.pins.delete(shopId);
      else this.pins.set(shopId, before);
    }
  }

  /** Call `fn(shopId)` after a shop's test clock moved (the scheduler re-times that shop's test jobs); advance awaits it. */
  onAdvance(fn: (shopId: string) => void | Promise<void>): void {
    this.listeners.push(fn);
  }

  /** The shop's test clock offset in ms. */
  offset(shopId: string): number {
    return this.offsets.get(shopId) ?? 0;
  }

  /** Move a shop's test clock forward by `delta_ms` (never back); returns the new offset. */
  async advance(shopId: string, delta_ms: number): Promise<number> {
    if (!(delta_ms >= 0 && Number.isSafeInteger(delta_ms))) {
      throw new Error(`cannot move a test clock by ${delta_ms} ms: only forward, in whole ms`);
    }
    let next = 0;
    await this.store.tx(async (tx) => {
      // The offset as committed: another advance of the same shop may have committed since this one was asked.
      const row = await tx.get<{ o: number }>('SELECT test_clock_offset_ms AS o FROM shops WHERE id = ?', shopId);
      next = (row?.o ?? 0) + delta_ms;
      await tx.run('UPDATE shops SET test_clock_offset_ms = ? WHERE id = ?', next, shopId);
      // Pending test jobs wait in real time (run_at = due_at - offset): move them with the clock, atomically.
      await tx.run(`UPDATE jobs SET run_at = due_at - ? WHERE shop_id = ? AND mode = 'test' AND state = 'pending'`, next, shopId);
    });
    // Offsets only grow: of two advances finishing out of order, the later offset stays.
    if (next !== 0 && next >= this.offset(shopId)) this.offsets.set(shopId, next);
    for (const fn of this.listeners) await fn(shopId);
    return next;
  }

  /** Forget a shop's offset after its row was set back to 0 elsewhere (a reset of its test data): its clock reads real time. */
  forget(shopId: string): void {
    this.offsets.delete(shopId);
  }

  /** Real time at which a moment on a shop's clock arrives. */
  toReal(shopId: string | null, mode: Mode, at_ms: number): number {
    if (mode === 'live' || shopId === null) return at_ms;
    return at_ms - this.offset(shopId);
  }
}

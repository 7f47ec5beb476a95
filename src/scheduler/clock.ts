import type { Store } from '../db/store';

/** A mode of the API: test keys drive the simulator on a per-shop test clock; live keys use real time. */
export type Mode = 'test' | 'live';

/**
 * Time for domain code. Live objects use real time; each shop's test-mode objects use that shop's test
 * clock: real time plus an offset that only moves forward. Domain code never calls Date.now().
 */
export class Clocks {
  private readonly offsets = new Map<string, number>();
  private readonly pins = new Map<string, number>();
  private readonly listeners: Array<(shopId: string) => void> = [];

  constructor(
    private readonly store: Store,
    /** Real time in ms; injectable so tests of the scheduler can drive it. */
    readonly real: () => number = Date.now,
  ) {}

  /** Now on the clock of a shop's mode. */
  now(shopId: string | null, mode: Mode): number {
    const real = this.real();
    if (mode === 'live' || shopId === null) return real;
    const pin = this.pins.get(shopId);
    return pin ?? real + this.offset(shopId);
  }

  /**
   * Run `fn` (synchronous) with the shop's test clock reading `at_ms`. An advance runs each due job at its own
   * due time, so a job that schedules "a month from now" lands a month after its predecessor, not after the
   * end of the advance: a year of monthly charges happens in one advance.
   */
  pinned<T>(shopId: string, at_ms: number, fn: () => T): T {
    const before = this.pins.get(shopId);
    this.pins.set(shopId, at_ms);
    try {
      return fn();
    } finally {
      if (before === undefined) this.pins.delete(shopId);
      else this.pins.set(shopId, before);
    }
  }

  /** Call `fn(shopId)` after a shop's test clock moved (the scheduler re-times that shop's test jobs). */
  onAdvance(fn: (shopId: string) => void): void {
    this.listeners.push(fn);
  }

  /** The shop's test clock offset in ms. */
  offset(shopId: string): number {
    let off = this.offsets.get(shopId);
    if (off === undefined) {
      const row = this.store.stmt('SELECT test_clock_offset_ms AS o FROM shops WHERE id = ?').get(shopId) as
        | { o: number }
        | undefined;
      off = row?.o ?? 0;
      this.offsets.set(shopId, off);
    }
    return off;
  }

  /** Move a shop's test clock forward by `delta_ms` (never back); returns the new offset. */
  advance(shopId: string, delta_ms: number): number {
    if (!(delta_ms >= 0 && Number.isSafeInteger(delta_ms))) {
      throw new Error(`cannot move a test clock by ${delta_ms} ms: only forward, in whole ms`);
    }
    const next = this.offset(shopId) + delta_ms;
    this.store.tx(({ db }) => {
      db.prepare('UPDATE shops SET test_clock_offset_ms = ? WHERE id = ?').run(next, shopId);
      // Pending test jobs wait in real time (run_at = due_at - offset): move them with the clock, atomically.
      db.prepare(`UPDATE jobs SET run_at = due_at - ? WHERE shop_id = ? AND mode = 'test' AND state = 'pending'`).run(next, shopId);
    });
    this.offsets.set(shopId, next);
    for (const fn of this.listeners) fn(shopId);
    return next;
  }

  /** Forget a cached offset (after the shop's row changed elsewhere). */
  forget(shopId: string): void {
    this.offsets.delete(shopId);
  }

  /** Real time at which a moment on a shop's clock arrives. */
  toReal(shopId: string | null, mode: Mode, at_ms: number): number {
    if (mode === 'live' || shopId === null) return at_ms;
    return at_ms - this.offset(shopId);
  }
}

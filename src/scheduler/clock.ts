import type { Store } from '../db/tx';

/** A mode of the API: test keys drive the simulator on a per-shop test clock; live keys use real time. */
export type Mode = 'test' | 'live';

/**
 * Time for domain code. Live objects use real time; each shop's test-mode objects use that shop's test
 * clock: real time plus an offset that only moves forward. Domain code never calls Date.now().
 */
export class Clocks {
  private readonly offsets = new Map<string, number>();

  constructor(
    private readonly store: Store,
    /** Real time in ms; injectable so tests of the scheduler can drive it. */
    readonly real: () => number = Date.now,
  ) {}

  /** Now on the clock of a shop's mode. */
  now(shopId: string | null, mode: Mode): number {
    const real = this.real();
    if (mode === 'live' || shopId === null) return real;
    return real + this.offset(shopId);
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
    if (!(delta_ms >= 0)) throw new Error(`cannot move a test clock back: delta ${delta_ms} ms`);
    const next = this.offset(shopId) + delta_ms;
    this.store.tx(({ db }) => {
      db.prepare('UPDATE shops SET test_clock_offset_ms = ? WHERE id = ?').run(next, shopId);
    });
    this.offsets.set(shopId, next);
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

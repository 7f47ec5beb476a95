import type { Reader, Tx } from './storage/store';

/** A mode of the API: test keys drive the simulator on a per-shop test clock; live keys use real time. */
export type Mode = 'test' | 'live';

/**
 * Where a wrapper of a transaction (a job's view of its savepoint) keeps the transaction it wraps: a clock
 * pinned on a transaction reads the same through every view of it.
 */
export const TX_BASE: unique symbol = Symbol('kopek.tx-base');

/** The claim an advance holds on its shop's due jobs: jobs its own jobs schedule due by `dueBy` are claimed by it too. */
export interface AdvanceClaim {
  /** The claiming process's id. */
  by: string;
  /** The advance's token. */
  token: string;
  /** On the shop's clock: jobs due by then are the advance's to run. */
  dueBy: number;
}

/** A shop's test clock as the jobs of an advance see it: fixed at one job's due time. */
export interface Pin {
  /** What the shop's clock reads. */
  at: number;
  /** The advance's claim, when an advance runs the job. */
  claim: AdvanceClaim | null;
}

/**
 * Time for domain code. Live objects use real time; each shop's test-mode objects use that shop's test
 * clock: real time plus an offset that only moves forward. Domain code never calls Date.now().
 *
 * The offsets live in the database only (`shops.test_clock_offset_ms`): a clock is read through the transaction
 * that uses it (or the store, outside one), so an advance through any process is seen by every process. A
 * transaction reads a shop's offset once (a memo tied to the transaction object). A job run by an advance
 * reads its due time instead: that pin is tied to the job's transaction too, never to the process, so no
 * other request can see it.
 */
export class Clocks {
  /** Pins by transaction (its base object): shop → pin. */
  private readonly pins = new WeakMap<object, Map<string, Pin>>();
  /** Offsets a transaction already read, by transaction (its base object): shop → offset. */
  private readonly memo = new WeakMap<object, Map<string, number>>();

  constructor(
    /** Real time in ms; injectable so tests of the scheduler can drive it. */
    readonly real: () => number = Date.now,
  ) {}

  /** Now on the clock of a shop's mode, read through `q` (the caller's transaction, or the store outside one). */
  async now(q: Reader, shopId: string | null, mode: Mode): Promise<number> {
    if (mode === 'live' || shopId === null) return this.real();
    const pin = this.pins.get(base(q))?.get(shopId);
    if (pin) return pin.at;
    return this.real() + (await this.offset(q, shopId));
  }

  /**
   * A shop's test clock offset in ms, read through `q`. Pinned or not, the offset is the committed one (a second
   * advance of the shop may have moved it since the first began): it places new jobs in real time.
   */
  async offset(q: Reader, shopId: string): Promise<number> {
    const key = base(q);
    const known = this.memo.get(key)?.get(shopId);
    if (known !== undefined) return known;
    const row = await q.get<{ o: number }>('SELECT test_clock_offset_ms AS o FROM shops WHERE id = ?', shopId);
    const o = row?.o ?? 0;
    // Only a transaction keeps what it read: the store answers for whatever is committed when asked.
    if (isTx(q)) remember(this.memo, key, shopId, o);
    return o;
  }

  /** Real time at which a moment on a shop's clock arrives, read through `q`. */
  async toReal(q: Reader, shopId: string | null, mode: Mode, at_ms: number): Promise<number> {
    if (mode === 'live' || shopId === null) return at_ms;
    return at_ms - (await this.offset(q, shopId));
  }

  /** The pin of a shop's clock in this transaction, if a job of an advance runs in it. */
  pinOf(q: Reader, shopId: string): Pin | undefined {
    return this.pins.get(base(q))?.get(shopId);
  }

  /**
   * Run `fn` with the shop's test clock reading `pin.at` in transaction `tx` until the promise it returns settles.
   * An advance runs each due job at its own due time, so a job that schedules "a month from now" lands a month
   * after its predecessor, not after the end of the advance: a year of monthly charges happens in one advance.
   */
  async pinned<T>(tx: Tx, shopId: string, pin: Pin, fn: () => Promise<T>): Promise<T> {
    const key = base(tx);
    let m = this.pins.get(key);
    if (!m) this.pins.set(key, (m = new Map()));
    const before = m.get(shopId);
    m.set(shopId, pin);
    try {
      return await fn();
    } finally {
      if (before === undefined) m.delete(shopId);
      else m.set(shopId, before);
    }
  }
}

/** The object a transaction's pins and memo are kept under: the transaction a view wraps, or the reader itself. */
function base(q: Reader): object {
  let k = q as { [TX_BASE]?: Reader };
  while (k[TX_BASE] !== undefined) k = k[TX_BASE] as { [TX_BASE]?: Reader };
  return k;
}

/** True for a transaction (the store reads committed data and keeps nothing). */
function isTx(q: Reader): q is Tx {
  return typeof (q as Partial<Tx>).afterCommit === 'function';
}

function remember(memo: WeakMap<object, Map<string, number>>, key: object, shopId: string, o: number): void {
  let m = memo.get(key);
  if (!m) memo.set(key, (m = new Map()));
  m.set(shopId, o);
}

/**
 * A hierarchical timing wheel (Varghese & Lauck, 1987), shaped after Kafka's purgatory timer.
 *
 * Level 0 has `wheelSize` buckets of `tickMs`; each overflow level's tick is the whole span of the level
 * below, created only when a timer lies beyond it. A bucket is an intrusive circular doubly linked list,
 * so add and cancel are O(1). Non-empty buckets sit in a small min-heap keyed by their start time: the
 * clock moves only when the earliest bucket is due (no ticking through empty buckets), and the owner arms
 * one real timer for `nextDue()`. When a bucket of a higher level comes due its timers cascade down.
 *
 * Times are kept relative to the wheel's epoch so that an entry's time is a small integer (V8 keeps it
 * unboxed), which is most of why an entry costs a fraction of a Node `Timeout`.
 */

/** One timer: a node of its bucket's list. Hold it to cancel the timer. */
export class TimerEntry<T> {
  /** Links of the bucket's circular list; null while the entry is in no bucket. */
  prev: TimerEntry<T> | null = null;
  next: TimerEntry<T> | null = null;

  constructor(
    /** Due time in ms relative to the wheel's epoch, rounded up to a whole tick. */
    readonly t: number,
    /** What the owner gets back when the timer fires. */
    readonly value: T,
  ) {}
}

class Bucket<T> {
  /** Start time (relative ms) of the slot this bucket currently stands for; -1 when it is not in the heap. */
  expiration = -1;
  readonly head: TimerEntry<T>;

  constructor() {
    this.head = new TimerEntry<T>(-1, undefined as T);
    this.head.prev = this.head;
    this.head.next = this.head;
  }

  push(e: TimerEntry<T>): void {
    const last = this.head.prev!;
    e.prev = last;
    e.next = this.head;
    last.next = e;
    this.head.prev = e;
  }

  /** Unlink every entry and hand each to `fn`; resets the expiration so the bucket can stand for a new slot. */
  drain(fn: (e: TimerEntry<T>) => void): void {
    this.expiration = -1;
    let e = this.head.next!;
    this.head.next = this.head;
    this.head.prev = this.head;
    while (e !== this.head) {
      const next = e.next!;
      e.prev = null;
      e.next = null;
      fn(e);
      e = next;
    }
  }
}

class Level<T> {
  readonly intervalMs: number;
  readonly buckets: Bucket<T>[];
  currentTime: number;
  overflow: Level<T> | null = null;

  constructor(
    readonly tickMs: number,
    readonly size: number,
    startMs: number,
  ) {
    this.intervalMs = tickMs * size;
    this.currentTime = startMs - (startMs % tickMs);
    this.buckets = Array.from({ length: size }, () => new Bucket<T>());
  }
}

/** Options of a wheel: the time source and its geometry. */
export interface TimerWheelOptions {
  /** Time source in ms; default Date.now. Read at construction and by `advance()` without an argument. */
  now?: () => number;
  /** Resolution of level 0 in ms (default 1). */
  tickMs?: number;
  /** Buckets per level (default 512: level 0 spans 0.5 s, level 1 4.4 min, level 2 37 h at 1 ms ticks). */
  wheelSize?: number;
}

/** A hierarchical timing wheel of values of type T. Not a timer itself: the owner calls `advance`. */
export class TimerWheel<T> {
  private readonly clock: () => number;
  private readonly epoch: number;
  private readonly root: Level<T>;
  /** Entries that were already due when added; they fire on the next advance, before any bucket. */
  private readonly overdue = new Bucket<T>();
  /** Min-heap of buckets by expiration; a bucket is in it at most once. */
  private readonly heap: Bucket<T>[] = [];
  private count = 0;

  constructor(opts: TimerWheelOptions = {}) {
    this.clock = opts.now ?? Date.now;
    const tickMs = opts.tickMs ?? 1;
    const wheelSize = opts.wheelSize ?? 512;
    if (!(Number.isInteger(tickMs) && tickMs >= 1)) throw new Error(`cannot build a timer wheel: tickMs ${tickMs} is not a positive integer`);
    if (!(Number.isInteger(wheelSize) && wheelSize >= 2)) throw new Error(`cannot build a timer wheel: wheelSize ${wheelSize} is under 2`);
    this.epoch = Math.floor(this.clock());
    this.root = new Level<T>(tickMs, wheelSize, 0);
  }

  /** Timers held (added, not yet fired or cancelled). */
  get size(): number {
    return this.count;
  }

  /** Absolute due time (ms) of an entry, rounded up to the wheel's tick. */
  dueOf(e: TimerEntry<T>): number {
    return this.epoch + e.t;
  }

  /** Add a timer due at absolute time `due_ms`; O(1). A time already past fires on the next advance. */
  add(due_ms: number, value: T): TimerEntry<T> {
    // Rounded up to a whole tick so that a timer never fires before its due time.
    const tick = this.root.tickMs;
    // Times before the epoch stay negative (not clamped) so the owner can still order overdue timers by due time.
    const e = new TimerEntry<T>(Math.ceil((due_ms - this.epoch) / tick) * tick, value);
    if (!this.place(this.root, e)) this.overdue.push(e);
    this.count++;
    return e;
  }

  /** Cancel a timer; O(1). False when it already fired or was cancelled. */
  cancel(e: TimerEntry<T>): boolean {
    if (e.prev === null || e.next === null) return false;
    e.prev.next = e.next;
    e.next.prev = e.prev;
    e.prev = null;
    e.next = null;
    this.count--;
    return true;
  }

  /** The earliest time (absolute ms) at which `advance` may fire something; Infinity when empty. */
  nextDue(): number {
    if (this.overdue.head.next !== this.overdue.head) return this.epoch + this.root.currentTime;
    while (this.heap.length > 0 && this.heap[0].head.next === this.heap[0].head) {
      // A bucket emptied by cancels: drop it now rather than wake for nothing.
      this.heapPop().expiration = -1;
    }
    return this.heap.length > 0 ? this.epoch + this.heap[0].expiration : Infinity;
  }

  /** Move the wheel to `now_ms` and call `fire` for every timer due by then, earliest bucket first; returns how many fired. */
  advance(fire: (value: T, due_ms: number) => void, now_ms: number = this.clock()): number {
    const t = Math.floor(now_ms - this.epoch);
    let fired = 0;
    const settle = (e: TimerEntry<T>): void => {
      if (!this.place(this.root, e)) {
        this.count--;
        fired++;
        fire(e.value, this.epoch + e.t);
      }
    };
    this.overdue.drain(settle);
    while (this.heap.length > 0 && this.heap[0].expiration <= t) {
      const b = this.heapPop();
      this.advanceLevel(this.root, b.expiration);
      b.drain(settle);
      // Timers added by `fire` itself that are already due land here; run them in this advance too.
      this.overdue.drain(settle);
    }
    if (t > this.root.currentTime) this.advanceLevel(this.root, t);
    return fired;
  }

  /** Drop every timer. */
  clear(): void {
    for (const b of this.heap) b.drain(() => {});
    this.heap.length = 0;
    this.overdue.drain(() => {});
    this.count = 0;
  }

  /** Put an entry in the lowest level whose span holds it; false when it is due already. */
  private place(level: Level<T>, e: TimerEntry<T>): boolean {
    for (let l = level; ; ) {
      if (e.t < l.currentTime + l.tickMs) return false;
      if (e.t < l.currentTime + l.intervalMs) {
        const slot = Math.floor(e.t / l.tickMs);
        const b = l.buckets[slot % l.size];
        b.push(e);
        const expiration = slot * l.tickMs;
        if (b.expiration !== expiration) {
          b.expiration = expiration;
          this.heapPush(b);
        }
        return true;
      }
      l.overflow ??= new Level<T>(l.intervalMs, l.size, l.currentTime);
      l = l.overflow;
    }
  }

  private advanceLevel(level: Level<T>, t: number): void {
    for (let l: Level<T> | null = level; l !== null && t >= l.currentTime + l.tickMs; l = l.overflow) {
      l.currentTime = t - (t % l.tickMs);
    }
  }

  private heapPush(b: Bucket<T>): void {
    const h = this.heap;
    let i = h.length;
    h.push(b);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (h[p].expiration <= b.expiration) break;
      h[i] = h[p];
      i = p;
    }
    h[i] = b;
  }

  private heapPop(): Bucket<T> {
    const h = this.heap;
    const top = h[0];
    const last = h.pop()!;
    if (h.length > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= h.length) break;
        const r = l + 1;
        const c = r < h.length && h[r].expiration < h[l].expiration ? r : l;
        if (h[c].expiration >= last.expiration) break;
        h[i] = h[c];
        i = c;
      }
      h[i] = last;
    }
    return top;
  }
}

/**
 * A hierarchical timing wheel (Varghese & Lauck, 1987), shaped after Kafka's purgatory timer.
 *
 * Level 0 has `wheelSize` buckets of `tickMs`; each overflow level's tick is the whole span of the level
 * below, created only when a timer lies beyond it. A bucket is an intrusive circular doubly linked list,
 * so add and cancel are O(1). Non-empty buckets sit in a small min-heap keyed by their start time: the
 * clock moves only when the earliest bucket is due (no ticking through empty buckets), and the owner arms
 * one real timer for `nextDue()`. When a bucket of a higher level comes due its timers cascade down.
 *
 * Timers live in parallel typed arrays (due time, prev, next, generation) indexed by slot, with a free
 * list, rather than one object each: no allocation per timer and nothing for the garbage collector to
 * trace, which is most of why it is several times cheaper than a Node `Timeout`. A timer's handle is its
 * slot plus a generation, so a stale handle (fired or cancelled, slot reused) cancels nothing.
 */

/** A timer's handle, for `cancel`: a positive integer. */
export type TimerHandle = number;

/** Handles encode slot + generation * SLOTS; slots are below 2^24. */
const SLOTS = 2 ** 24;
/** prev[] of a slot that is in no list. */
const UNLINKED = -1;

class Bucket {
  /** Start time (relative ms) of the slot this bucket currently stands for; -1 when it is not in the heap. */
  expiration = -1;

  constructor(
    /** The sentinel slot of this bucket's list. */
    readonly head: number,
  ) {}
}

class Level {
  readonly intervalMs: number;
  readonly buckets: Bucket[];
  currentTime: number;
  overflow: Level | null = null;

  constructor(
    readonly tickMs: number,
    readonly size: number,
    startMs: number,
    newHead: () => number,
  ) {
    this.intervalMs = tickMs * size;
    this.currentTime = startMs - (startMs % tickMs);
    this.buckets = Array.from({ length: size }, () => new Bucket(newHead()));
  }
}

/** Options of a wheel: the time source and its geometry. */
export interface TimerWheelOptions {
  /** Time source in ms; default Date.now. Read at construction and by `advance()` without a time. */
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
  private readonly root: Level;
  /** Per slot: due time relative to the epoch (rounded up to a tick), list links, generation. */
  private due = new Float64Array(1024);
  private prev = new Int32Array(1024);
  private next = new Int32Array(1024);
  private gen = new Uint32Array(1024);
  private values: Array<T | undefined> = [];
  private used = 0;
  private free = -1;
  /** Entries that were already due when added; they fire on the next advance, before any bucket. */
  private readonly overdue: Bucket;
  /** Min-heap of buckets by expiration; a bucket is in it at most once. */
  private readonly heap: Bucket[] = [];
  private count = 0;

  constructor(opts: TimerWheelOptions = {}) {
    this.clock = opts.now ?? Date.now;
    const tickMs = opts.tickMs ?? 1;
    const wheelSize = opts.wheelSize ?? 512;
    if (!(Number.isInteger(tickMs) && tickMs >= 1)) throw new Error(`cannot build a timer wheel: tickMs ${tickMs} is not a positive integer`);
    if (!(Number.isInteger(wheelSize) && wheelSize >= 2)) throw new Error(`cannot build a timer wheel: wheelSize ${wheelSize} is under 2`);
    this.epoch = Math.floor(this.clock());
    this.overdue = new Bucket(this.newHead());
    this.root = new Level(tickMs, wheelSize, 0, () => this.newHead());
  }

  /** Timers held (added, not yet fired or cancelled). */
  get size(): number {
    return this.count;
  }

  /** Absolute due time (ms, rounded up to the tick) of a held timer; NaN for a stale handle. */
  dueOf(h: TimerHandle): number {
    const slot = this.live(h);
    return slot < 0 ? NaN : this.epoch + this.due[slot];
  }

  /** Add a timer due at absolute time `due_ms`; O(1). A time already past fires on the next advance. */
  add(due_ms: number, value: T): TimerHandle {
    const tick = this.root.tickMs;
    const slot = this.alloc();
    // Rounded up to a whole tick so a timer never fires early; times before the epoch stay negative so the
    // owner can still order overdue timers by due time.
    this.due[slot] = Math.ceil((due_ms - this.epoch) / tick) * tick;
    this.values[slot] = value;
    if (!this.place(slot)) this.link(this.overdue.head, slot);
    this.count++;
    return this.gen[slot] * SLOTS + slot;
  }

  /** Cancel a timer; O(1). False when it already fired or was cancelled. */
  cancel(h: TimerHandle): boolean {
    const slot = this.live(h);
    if (slot < 0) return false;
    this.next[this.prev[slot]] = this.next[slot];
    this.prev[this.next[slot]] = this.prev[slot];
    this.release(slot);
    this.count--;
    return true;
  }

  /** The earliest time (absolute ms) at which `advance` may fire something; Infinity when empty. */
  nextDue(): number {
    if (this.next[this.overdue.head] !== this.overdue.head) return this.epoch + this.root.currentTime;
    while (this.heap.length > 0 && this.next[this.heap[0].head] === this.heap[0].head) {
      // A bucket emptied by cancels: drop it now rather than wake for nothing.
      this.heapPop().expiration = -1;
    }
    return this.heap.length > 0 ? this.epoch + this.heap[0].expiration : Infinity;
  }

  /** Move the wheel to `now_ms` and call `fire` for every timer due by then, earliest bucket first; returns how many fired. */
  advance(fire: (value: T, due_ms: number) => void, now_ms: number = this.clock()): number {
    const t = Math.floor(now_ms - this.epoch);
    let fired = this.drain(this.overdue, fire);
    while (this.heap.length > 0 && this.heap[0].expiration <= t) {
      const b = this.heapPop();
      this.advanceLevel(b.expiration);
      fired += this.drain(b, fire);
      // Timers added by `fire` itself that are already due land here; run them in this advance too.
      fired += this.drain(this.overdue, fire);
    }
    if (t > this.root.currentTime) this.advanceLevel(t);
    return fired;
  }

  /** Drop every timer. */
  clear(): void {
    for (const b of [...this.heap, this.overdue]) {
      for (let s = this.next[b.head]; s !== b.head; ) {
        const n = this.next[s];
        this.release(s);
        s = n;
      }
      this.next[b.head] = b.head;
      this.prev[b.head] = b.head;
      b.expiration = -1;
    }
    this.heap.length = 0;
    this.count = 0;
  }

  /** Slot of a handle that still names a held timer, else -1. */
  private live(h: TimerHandle): number {
    const slot = h % SLOTS;
    if (!(h >= 0) || slot >= this.used || this.gen[slot] !== Math.floor(h / SLOTS) || this.prev[slot] === UNLINKED) return -1;
    return slot;
  }

  private newHead(): number {
    const s = this.alloc();
    this.prev[s] = s;
    this.next[s] = s;
    return s;
  }

  private alloc(): number {
    if (this.free >= 0) {
      const s = this.free;
      this.free = this.next[s];
      return s;
    }
    if (this.used === this.due.length) this.grow();
    return this.used++;
  }

  private release(s: number): void {
    this.prev[s] = UNLINKED;
    this.values[s] = undefined;
    this.gen[s] = (this.gen[s] + 1) % (2 ** 28);
    this.next[s] = this.free;
    this.free = s;
  }

  private grow(): void {
    const n = this.due.length * 2;
    if (n > SLOTS) throw new Error(`cannot add a timer: the wheel holds its maximum of ${SLOTS} timers`);
    const g = <A extends Float64Array | Int32Array | Uint32Array>(a: A, make: (n: number) => A): A => {
      const b = make(n);
      b.set(a);
      return b;
    };
    this.due = g(this.due, (k) => new Float64Array(k));
    this.prev = g(this.prev, (k) => new Int32Array(k));
    this.next = g(this.next, (k) => new Int32Array(k));
    this.gen = g(this.gen, (k) => new Uint32Array(k));
  }

  private link(head: number, s: number): void {
    const last = this.prev[head];
    this.prev[s] = last;
    this.next[s] = head;
    this.next[last] = s;
    this.prev[head] = s;
  }

  /** Empty a bucket: timers now due fire (and free their slot), the rest cascade to a lower level. */
  private drain(b: Bucket, fire: (value: T, due_ms: number) => void): number {
    const head = b.head;
    b.expiration = -1;
    let s = this.next[head];
    if (s === head) return 0;
    this.next[head] = head;
    this.prev[head] = head;
    let fired = 0;
    while (s !== head) {
      const n = this.next[s];
      if (!this.place(s)) {
        const v = this.values[s] as T;
        const due = this.epoch + this.due[s];
        this.release(s);
        this.count--;
        fired++;
        fire(v, due);
      }
      s = n;
    }
    return fired;
  }

  /** Link a slot into the lowest level whose span holds it; false when it is due already. */
  private place(s: number): boolean {
    const t = this.due[s];
    for (let l = this.root; ; ) {
      if (t < l.currentTime + l.tickMs) return false;
      if (t < l.currentTime + l.intervalMs) {
        const k = Math.floor(t / l.tickMs);
        const b = l.buckets[k % l.size];
        this.link(b.head, s);
        const expiration = k * l.tickMs;
        if (b.expiration !== expiration) {
          b.expiration = expiration;
          this.heapPush(b);
        }
        return true;
      }
      l.overflow ??= new Level(l.intervalMs, l.size, l.currentTime, () => this.newHead());
      l = l.overflow;
    }
  }

  private advanceLevel(t: number): void {
    for (let l: Level | null = this.root; l !== null && t >= l.currentTime + l.tickMs; l = l.overflow) {
      l.currentTime = t - (t % l.tickMs);
    }
  }

  private heapPush(b: Bucket): void {
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

  private heapPop(): Bucket {
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

/** setTimeout's longest delay; a wake further away is re-armed on the way. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The scheduler's one timer. Its deadline is kept on the monotonic clock as well: real time may jump (a clock
 * step, a test's fake clock), and a timer armed before the jump still fires when its delay is over.
 */
export class WakeTimer {
  private timer: NodeJS.Timeout | null = null;
  /** The real time it was armed for, and the same moment on the monotonic clock. */
  private atReal = Infinity;
  private due = Infinity;

  constructor(
    private readonly realNow: () => number,
    private readonly fire: () => void,
  ) {}

  /** The real time the timer fires at (Infinity when not armed). */
  get at(): number {
    return this.atReal;
  }

  /** True when real time `at` comes before the timer fires (or none is armed). */
  sooner(at: number): boolean {
    return this.timer === null || performance.now() + Math.max(0, at - this.realNow()) < this.due;
  }

  /** Fire at real time `when`, unless the timer already fires sooner (it is only ever moved earlier). */
  arm(when: number): void {
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, when - this.realNow()));
    const due = performance.now() + delay;
    if (this.timer && due >= this.due) return;
    if (this.timer) clearTimeout(this.timer);
    this.atReal = when;
    this.due = due;
    this.timer = setTimeout(() => {
      this.clear();
      this.fire();
    }, delay);
    this.timer.unref();
  }

  /** Disarm. */
  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.atReal = Infinity;
    this.due = Infinity;
  }
}

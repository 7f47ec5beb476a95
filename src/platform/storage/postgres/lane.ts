/** A transaction's hold on the lane: `leave` is set once it has entered. */
export interface InLane {
  leave?: () => void;
}

/**
 * A node's lane for transactions that keep losing serialization races. SERIALIZABLE lets every contender of a
 * hot row (one shop's balance under many payouts at once) start, and all but one of them fail at COMMIT; each
 * loser starts again and meets the same crowd, so with n contenders a transaction can need about n attempts.
 * A transaction that has failed PG_LIMITS.lane_after times waits here for its next attempts, one at a time on
 * this node: the crowd at the row shrinks to a contender or two per node, and each attempt has a fair chance.
 * The lane orders attempts only: what two transactions may do together is still PostgreSQL's to decide.
 */
export class RetryLane {
  private held = false;
  private readonly waiting: Array<() => void> = [];

  /** Wait for the lane; the promise's function gives it to the next waiter (a second call does nothing). */
  async enter(): Promise<() => void> {
    if (this.held) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.held = true;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.held = false;
    };
  }
}

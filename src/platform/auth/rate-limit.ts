import { ApiError } from '../http/errors';

/** Most keys tracked at once; idle buckets are dropped first. */
const MAX_BUCKETS = 100_000;

/** A token bucket per API key: `rate` tokens a second, up to `burst`. Over it: 429 rate_limited with Retry-After. */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly rate: number,
    private readonly burst: number,
  ) {}

  take(key: string): void {
    const t = performance.now();
    let b = this.buckets.get(key);
    if (!b) {
      if (this.buckets.size >= MAX_BUCKETS) this.buckets.delete(this.buckets.keys().next().value as string);
      b = { tokens: this.burst, at: t };
      this.buckets.set(key, b);
    } else {
      b.tokens = Math.min(this.burst, b.tokens + ((t - b.at) / 1000) * this.rate);
      b.at = t;
      // Keep recently used keys at the end, so eviction takes the idle ones.
      this.buckets.delete(key);
      this.buckets.set(key, b);
    }
    if (b.tokens < 1) {
      const wait_s = Math.max(1, Math.ceil((1 - b.tokens) / this.rate));
      throw new ApiError(429, 'rate_limited', `Cannot serve the request: rate limit of ${this.rate} requests per second exceeded`, undefined, {
        'Retry-After': String(wait_s),
      });
    }
    b.tokens -= 1;
  }
}

/** A real-time source that tests move by hand, for startTestServer's `realNow`. */
export interface FakeTime {
  /** The current fake real time in ms. */
  now(): number;
  /** Move fake real time forward by `ms`. */
  advance(ms: number): void;
}

/** A fake real clock starting at `start_ms` (default: the actual time, so ids and logs look normal). */
export function fakeTime(start_ms: number = Date.now()): FakeTime {
  let t = start_ms;
  return {
    now: () => t,
    advance(ms) {
      if (!(ms >= 0)) throw new Error(`cannot move fake time back by ${ms} ms`);
      t += ms;
    },
  };
}

/** Resolve when `cond()` holds, checking after each turn of the event loop; reject after `limit` turns. */
export async function eventually(cond: () => boolean, what: string, limit = 2000): Promise<void> {
  for (let i = 0; i < limit; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 1));
  }
  throw new Error(`timed out waiting for ${what}`);
}

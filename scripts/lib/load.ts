import { Agent, request } from 'node:http';

/** One request of a load run: method, path, headers, body. */
export interface LoadRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

/** Figures of one load run. */
export interface LoadResult {
  requests: number;
  errors: number;
  /** Answers whose status was not the expected one. */
  unexpected: number;
  rps: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

/**
 * Drive `base` with `connections` keep-alive connections, each sending its next request as soon as the last
 * answer arrived, for `duration_ms` (after `warmup_ms` not counted). `next(i)` gives request number i.
 */
export async function runLoad(
  base: string,
  o: {
    connections: number;
    duration_ms: number;
    warmup_ms: number;
    expect: number;
    next: (i: number) => LoadRequest;
    onTick?: () => void;
    /** Send at most this many requests (warm-up included); a run that stops early is measured over the time it ran. */
    max_requests?: number;
    /** Called when the measured window opens ('start') and when it closes or the run ends early ('end'), once each. */
    onWindow?: (edge: 'start' | 'end') => void;
  },
): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: o.connections, maxFreeSockets: o.connections });
  const url = new URL(base);
  const latencies: number[] = [];
  let errors = 0;
  let unexpected = 0;
  let n = 0;
  const t0 = performance.now();
  const measureFrom = t0 + o.warmup_ms;
  const until = measureFrom + o.duration_ms;
  let counted = 0;
  let lastEnd = measureFrom;
  const max = o.max_requests ?? Infinity;
  const one = (r: LoadRequest): Promise<void> =>
    new Promise((resolve) => {
      const started = performance.now();
      const body = r.body === undefined ? undefined : Buffer.from(r.body);
      const headers = { ...(r.headers ?? {}), ...(body ? { 'content-type': 'application/json', 'content-length': String(body.length) } : {}) };
      const req = request({ host: url.hostname, port: url.port, method: r.method, path: r.path, headers, agent }, (res) => {
        res.resume();
        res.on('end', () => {
          const end = performance.now();
          if (started >= measureFrom && end <= until) {
            latencies.push(end - started);
            counted++;
            lastEnd = end;
            if (res.statusCode !== o.expect) unexpected++;
          }
          resolve();
        });
      });
      req.on('error', () => {
        errors++;
        resolve();
      });
      req.end(body);
    });
  const tick = o.onTick ? setInterval(o.onTick, 250) : null;
  let opened = false;
  let closed = false;
  const edge = (e: 'start' | 'end'): void => {
    if (e === 'start' && !opened) {
      opened = true;
      o.onWindow?.('start');
    } else if (e === 'end' && opened && !closed) {
      closed = true;
      o.onWindow?.('end');
    }
  };
  const windowTimers = [setTimeout(() => edge('start'), o.warmup_ms), setTimeout(() => edge('end'), o.warmup_ms + o.duration_ms)];
  await Promise.all(
    Array.from({ length: o.connections }, async () => {
      while (performance.now() < until && n < max) await one(o.next(n++));
    }),
  );
  for (const t of windowTimers) clearTimeout(t);
  edge('end');
  if (tick) clearInterval(tick);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const q = (p: number) => (latencies.length === 0 ? NaN : latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]);
  const measured_ms = n >= max ? Math.max(1, lastEnd - measureFrom) : o.duration_ms;
  return { requests: counted, errors, unexpected, rps: counted / (measured_ms / 1000), p50_ms: q(0.5), p99_ms: q(0.99), max_ms: latencies.at(-1) ?? NaN };
}

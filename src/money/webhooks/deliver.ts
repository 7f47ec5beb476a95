import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { fixedLookup, type Resolved } from './url-safety';

/** One POST of a webhook: where, what, and how long it may take. */
export interface PostSpec {
  url: URL;
  headers: Record<string, string>;
  body: string;
  timeout_ms: number;
  /** Connect to this checked address instead of resolving the host again (live mode). */
  resolved?: Resolved;
  /** Aborts on shutdown. */
  signal?: AbortSignal;
}

/** What an attempt came to: the status code if the receiver answered, else the error. */
export interface PostOutcome {
  response_code: number | null;
  error: string | null;
  latency_ms: number;
  /** True when the attempt was cut by shutdown: it is not recorded, and runs again after restart. */
  aborted_by_shutdown: boolean;
}

/** Bytes of a response body read (then dropped) before the connection is closed. */
const MAX_RESPONSE_BYTES = 64 * 1024;

/**
 * POST the body once. Any answer within the deadline is reported with its status (redirects are not
 * followed: a 3xx is an answer like any other); no answer is an error.
 */
export function postWebhook(spec: PostSpec): Promise<PostOutcome> {
  const started = process.hrtime.bigint();
  const elapsed = (): number => Math.round(Number(process.hrtime.bigint() - started) / 1e6);
  const deadline = AbortSignal.timeout(spec.timeout_ms);
  const signal = spec.signal ? AbortSignal.any([deadline, spec.signal]) : deadline;
  const isHttps = spec.url.protocol === 'https:';
  const send = isHttps ? httpsRequest : httpRequest;
  const buf = Buffer.from(spec.body, 'utf8');
  const options: Record<string, unknown> = {
    method: 'POST',
    headers: { ...spec.headers, 'Content-Length': String(buf.length) },
    signal,
    agent: false,
  };
  if (spec.resolved) options.lookup = fixedLookup(spec.resolved);
  return new Promise((resolve) => {
    let settled = false;
    const finish = (response_code: number | null, error: string | null): void => {
      if (settled) return;
      settled = true;
      const byShutdown = !!spec.signal?.aborted && !deadline.aborted;
      resolve({ response_code, error, latency_ms: elapsed(), aborted_by_shutdown: byShutdown });
    };
    const req = send(spec.url, options, (res: IncomingMessage) => {
      const code = res.statusCode ?? 0;
      const latency = elapsed();
      let read = 0;
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_RESPONSE_BYTES) res.destroy();
      });
      const done = (): void => {
        if (settled) return;
        settled = true;
        resolve({ response_code: code, error: null, latency_ms: latency, aborted_by_shutdown: false });
      };
      res.on('end', done);
      res.on('close', done);
      res.on('error', done);
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (deadline.aborted) finish(null, `timeout: no answer within ${spec.timeout_ms} ms`);
      else if (spec.signal?.aborted) finish(null, 'shutdown');
      else finish(null, `${err.code ?? 'error'}: ${err.message}`.slice(0, 300));
    });
    req.end(buf);
  });
}

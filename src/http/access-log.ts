import type { App } from '../app-types';

/** Longest path written to the log; longer paths are cut so one request cannot flood it. */
const MAX_PATH_CHARS = 256;

/** What one access-log line says about a request. Never the query string, headers or body: they may carry secrets. */
export interface AccessRecord {
  requestId: string;
  method: string;
  /** The path without its query string. */
  path: string;
  /** The route pattern matched, when one was. */
  route?: string;
  status: number;
  durationMs: number;
  /** True when the connection ended before the whole response was written. */
  aborted?: boolean;
  /** Safe facts a handler added for the log (ids, outcomes). */
  extra?: Record<string, unknown>;
}

/** Write the one JSON access-log line of a request. */
export function logAccess(app: App, r: AccessRecord): void {
  app.log.info('request', {
    ...r.extra,
    request_id: r.requestId,
    method: r.method,
    path: r.path.length > MAX_PATH_CHARS ? r.path.slice(0, MAX_PATH_CHARS) + '…' : r.path,
    ...(r.route ? { route: r.route } : {}),
    status: r.status,
    duration_ms: Math.round(r.durationMs * 1000) / 1000,
    ...(r.aborted ? { aborted: true } : {}),
  });
}

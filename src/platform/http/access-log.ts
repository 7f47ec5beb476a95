import type { Logger } from '../log';

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
export function logAccess(log: Logger, r: AccessRecord): void {
  // Built field by field: spreading optional parts made a temporary object each, once per request.
  const fields: Record<string, unknown> = r.extra ? { ...r.extra } : {};
  fields.request_id = r.requestId;
  fields.method = r.method;
  fields.path = r.path.length > MAX_PATH_CHARS ? r.path.slice(0, MAX_PATH_CHARS) + '…' : r.path;
  if (r.route) fields.route = r.route;
  fields.status = r.status;
  fields.duration_ms = Math.round(r.durationMs * 1000) / 1000;
  if (r.aborted) fields.aborted = true;
  log.info('request', fields);
}

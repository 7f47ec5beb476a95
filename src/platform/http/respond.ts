import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { gzip } from 'node:zlib';
import type { Logger } from '../log';
import type { Ctx, Reply } from './types';
import { ApiError } from './errors';

/** Write a handler's reply; returns the status written (-1 for a raw reply the handler wrote itself). */
export function send(ctx: Ctx, reply: Reply): number {
  const res = ctx.res;
  if ('raw' in reply) return -1;
  if ('location' in reply) {
    res.writeHead(reply.status, { ...reply.headers, Location: reply.location, 'Content-Length': 0 });
    res.end();
    return reply.status;
  }
  const status = reply.status ?? 200;
  if (reply.headers) for (const [k, v] of Object.entries(reply.headers)) res.setHeader(k, v);
  if ('html' in reply) writeBody(res, status, 'text/html; charset=utf-8', reply.html, ctx.method);
  else if ('text' in reply) writeBody(res, status, reply.contentType ?? 'text/plain; charset=utf-8', reply.text, ctx.method);
  else {
    const text = reply.json ?? JSON.stringify(reply.body);
    if (text.length < GZIP_MIN_BYTES || ctx.method === 'HEAD') writeBody(res, status, 'application/json', text, ctx.method);
    else writeLargeJson(ctx, status, text);
  }
  return status;
}

/** A large JSON body, gzipped when the client accepts gzip (the OpenAPI document, register pages). */
function writeLargeJson(ctx: Ctx, status: number, text: string): void {
  const res = ctx.res;
  res.setHeader('Vary', 'Accept-Encoding');
  if (!acceptsGzip(ctx.req.headers['accept-encoding'])) return writeBody(res, status, 'application/json', text, ctx.method);
  // zlib runs on the thread pool, off the event loop; when it fails the body goes out as it is.
  gzip(text, (err, gz) => {
    if (res.destroyed) return;
    if (err) return writeBody(res, status, 'application/json', text, ctx.method);
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', 'Content-Length': gz.length });
    res.end(gz);
  });
}

/** Write an error in the documented shape, or cut a response already under way. */
export function sendError(ctx: Ctx, err: ApiError): number {
  const res = ctx.res;
  if (res.headersSent) {
    // A response already under way cannot turn into an error; cut it, unless it was fully written (a 408 sent on timeout).
    if (!res.writableEnded) res.destroy();
    return err.status;
  }
  if (err.headers) for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
  writeBody(res, err.status, 'application/json', JSON.stringify(err.toBody()), ctx.method);
  return err.status;
}

function writeBody(res: ServerResponse, status: number, type: string, text: string, method: string): void {
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(text, 'utf8') });
  // A string body goes out in one write with the head; a Buffer would take a second, gathered one.
  if (method === 'HEAD') res.end();
  else res.end(text, 'utf8');
}

/** JSON bodies from this size up are gzipped for a client that accepts it; below it gzip saves less than it costs. */
const GZIP_MIN_BYTES = 4096;

/** Whether an Accept-Encoding header allows gzip: named (or `*`) without `q=0`. */
function acceptsGzip(header: string | undefined): boolean {
  let star = false;
  for (const part of (header ?? '').toLowerCase().split(',')) {
    const [name, ...params] = part.split(';').map((p) => p.trim());
    const q = params.find((p) => p.startsWith('q='));
    const allowed = q === undefined || Number(q.slice(2)) > 0;
    if (name === 'gzip' || name === 'x-gzip') return allowed;
    if (name === '*') star = allowed;
  }
  return star;
}

/** Longest path written to the log; longer paths are cut so one request cannot flood it. */
const MAX_PATH_CHARS = 256;

/**
 * What one access-log line says about a request: never the query string, headers or body (they may carry secrets).
 * `aborted`: the connection ended before the whole response was written; `extra`: safe facts a handler added.
 */
interface AccessRecord {
  requestId: string;
  method: string;
  path: string;
  route?: string;
  status: number;
  durationMs: number;
  aborted?: boolean;
  extra?: Record<string, unknown>;
}

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

/** A connection-level failure by Node's code: the status, the reason phrase of its status line, the error. */
const CLIENT_ERRORS: Record<string, [number, string, string, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'bad_request', 'Cannot read the request: headers too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'request_timeout', 'Cannot read the request: the client was too slow to send it'],
};
const MALFORMED: [number, string, string, string] = [400, 'Bad Request', 'bad_request', 'Cannot parse the HTTP request'];

/**
 * Answer a connection-level failure (malformed HTTP, headers too large, a client too slow) with the error body, an
 * X-Request-Id and an access-log line, then close. `inflight`: the response of a request whose body still arrived.
 */
export function onClientError(log: Logger, err: NodeJS.ErrnoException, socket: Duplex, inflight: ServerResponse | undefined): void {
  if (err.code === 'ECONNRESET' || err.code === 'EPIPE') {
    socket.destroy();
    return;
  }
  const [status, reason, code, message] = err.code !== undefined && Object.hasOwn(CLIENT_ERRORS, err.code) ? CLIENT_ERRORS[err.code] : MALFORMED;
  const apiErr = new ApiError(status, code, message);
  const body = JSON.stringify(apiErr.toBody());
  if (inflight && !inflight.headersSent && inflight.writable) {
    // The request is known (its body was too slow): answer through its response so its own access line says 408.
    inflight.writeHead(apiErr.status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), Connection: 'close' });
    inflight.end(body);
    return;
  }
  if (!socket.writable || inflight) {
    socket.destroy();
    return;
  }
  const requestId = randomUUID();
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
  );
  logAccess(log, { requestId, method: '-', path: '-', status: apiErr.status, durationMs: 0, extra: { error: err.code ?? 'client_error' } });
}

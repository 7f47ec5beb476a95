import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import type { App } from '../app-types';
import type { Router } from './router';
import type { Ctx, Reply, RouteDef } from './types';
import { ApiError, toApiError } from './errors';
import { mediaCharset, mediaType, parseForm, parseJson, readBody } from './body';
import { authenticate, requireScope } from '../auth/authenticate';
import { authenticateStreamToken } from '../auth/stream-token';
import { unmapIp } from '../auth/ip-allowlist';
import type { RateLimiter } from '../auth/rate-limit';
import { logAccess } from './access-log';
import { onClientError } from './client-error';
import { acceptsGzip, GZIP_MIN_BYTES, gzipText } from './compress';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const REQUEST_ID_RE = /^[A-Za-z0-9._-]{1,64}$/;

/** Per-route observer (metrics); called once per finished request. */
export type RequestObserver = (route: string, method: string, status: number, duration_ms: number) => void;

/**
 * The whole request chain, in order: request id → route match (404/405) → body (413/415/400) →
 * authentication (401/403) → rate limit (429) → scope (403) → handler → one response writer → access log.
 */
export function createHttpServer(app: App, router: Router<RouteDef>, limiter: RateLimiter | null, observe?: RequestObserver): Server {
  const { headersTimeoutMs, requestTimeoutMs } = app.config;
  const server = createServer({
    headersTimeout: headersTimeoutMs,
    requestTimeout: requestTimeoutMs,
    keepAliveTimeout: app.config.keepAliveTimeoutMs,
    // Node checks the two timeouts only this often (30 s by default), which would let a slow client hold on far longer.
    // The config guarantees headersTimeoutMs <= requestTimeoutMs.
    connectionsCheckingInterval: Math.max(25, Math.min(1000, Math.floor(headersTimeoutMs / 4))),
    maxHeaderSize: 16 * 1024,
  });
  server.maxHeadersCount = 100;
  const inflight = new WeakMap<Socket, ServerResponse>();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    inflight.set(req.socket, res);
    void handle(app, router, limiter, req, res, observe, inflight);
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => onClientError(app, err, socket, inflight.get(socket)));
  return server;
}

/**
 * The client address. Behind a trusted proxy it is the last X-Forwarded-For entry: the one the proxy itself
 * appended; earlier entries come from the client and could be forged to pass an allow-list.
 */
function clientIp(app: App, req: IncomingMessage): string {
  if (app.config.trustProxy) {
    const xff = req.headers['x-forwarded-for'];
    const entries = (Array.isArray(xff) ? xff.join(',') : xff ?? '').split(',').map((e) => e.trim()).filter(Boolean);
    const last = entries[entries.length - 1];
    if (last) return unmapIp(last);
  }
  // A keep-alive connection sends many requests from one address: normalise it once per connection.
  let ip = socketIps.get(req.socket);
  if (ip === undefined) {
    ip = unmapIp(req.socket.remoteAddress ?? '');
    socketIps.set(req.socket, ip);
  }
  return ip;
}

const socketIps = new WeakMap<Socket, string>();

async function handle(
  app: App,
  router: Router<RouteDef>,
  limiter: RateLimiter | null,
  req: IncomingMessage,
  res: ServerResponse,
  observe: RequestObserver | undefined,
  inflight: WeakMap<Socket, ServerResponse>,
): Promise<void> {
  const started = performance.now();
  const incomingId = req.headers['x-request-id'];
  const requestId = typeof incomingId === 'string' && REQUEST_ID_RE.test(incomingId) ? incomingId : randomUUID();
  res.setHeader('X-Request-Id', requestId);
  const method = req.method ?? 'GET';
  const url = parseTarget(req.url);
  const path = url.pathname;
  const ctx: Ctx = {
    app,
    req,
    res,
    requestId,
    method,
    path,
    route: '',
    params: {},
    query: url.searchParams,
    rawBody: Buffer.alloc(0),
    body: undefined,
    ip: clientIp(app, req),
  };
  let status = 0;
  // The line is written when the response is over (or the connection died), so a streamed response logs once, at its end.
  // One listener per request for both jobs: 'close' comes once.
  res.on('close', () => {
    if (inflight.get(req.socket) === res) inflight.delete(req.socket);
    const duration_ms = performance.now() - started;
    const final = res.headersSent ? res.statusCode : status;
    observe?.(ctx.route || 'unmatched', method, final, duration_ms);
    logAccess(app, {
      requestId,
      method,
      path,
      route: ctx.route,
      status: final,
      durationMs: duration_ms,
      aborted: !res.writableFinished,
      extra: ctx.logExtra,
    });
  });
  try {
    if (app.closing) throw new ApiError(503, 'unavailable', 'Cannot serve the request: the server is shutting down', undefined, { Connection: 'close' });
    const match = router.match(method, path);
    if (match.kind === 'not_found') throw new ApiError(404, 'not_found', `Cannot find route ${method} ${path}`);
    if (match.kind === 'method_not_allowed') {
      throw new ApiError(405, 'method_not_allowed', `Cannot ${method} ${path}; allowed: ${match.allow.join(', ')}`, undefined, {
        Allow: match.allow.join(', '),
      });
    }
    const route = match.value;
    ctx.route = match.pattern;
    ctx.params = match.params;
    if (BODY_METHODS.has(method)) await readRequestBody(app, ctx, route);
    else req.resume();
    const streamToken = route.streamToken && header(req, 'authorization') === undefined ? ctx.query.get('token') : null;
    if (streamToken !== null && streamToken !== undefined) {
      ctx.auth = authenticateStreamToken(app.store, streamToken, app.clocks.real());
      if (limiter) limiter.take(ctx.auth.keyId);
      if (route.scope) requireScope(ctx.auth, route.scope);
      // A token is the whole credential (no cookies), so a page of any origin may read the stream with it.
      res.setHeader('Access-Control-Allow-Origin', '*');
    } else if (route.auth !== 'none') {
      ctx.auth = authenticate(app.store, {
        authorization: header(req, 'authorization'),
        signature: header(req, 'x-psp-signature'),
        ip: ctx.ip,
        rawBody: ctx.rawBody,
        connection: req.socket,
      });
      if (route.auth === 'test' && ctx.auth.mode !== 'test') {
        throw new ApiError(404, 'not_found', `Cannot find route ${method} ${path}: test helpers need a test key`);
      }
      if (limiter) limiter.take(ctx.auth.keyId);
      if (route.scope) requireScope(ctx.auth, route.scope);
    }
    const reply = await route.handler(ctx);
    // What the handler read may include a commit whose WAL sync is still running: answer once it is on disk.
    const durable = 'raw' in reply ? null : app.store.whenDurable(ctx.seen?.seq);
    if (durable) await durable;
    status = send(ctx, reply);
  } catch (err) {
    const apiErr = withAction(toApiError(err), method, ctx.route);
    if (apiErr.status >= 500 && err instanceof ApiError) {
      // Raised on purpose (shutting down, a bank's router refusing): a known condition, not a bug; no stack.
      const fields = { request_id: requestId, method, path, status: apiErr.status, code: apiErr.code, error: apiErr.message };
      if (app.closing && apiErr.status === 503) app.log.info('request refused while shutting down', fields);
      else app.log.warn('request failed', fields);
    } else if (apiErr.status >= 500) {
      app.log.error('request failed', {
        request_id: requestId,
        method,
        path,
        status: apiErr.status,
        error: err instanceof Error ? err.message : String(err),
        stack: err instanceof Error ? err.stack : undefined,
      });
    }
    // A refusal can rest on data as much as an answer can (say, a refund over a remainder just committed).
    const durable = app.store.whenDurable();
    if (durable) await durable;
    status = sendError(ctx, apiErr);
  }
}

/**
 * A refused request's message starts with what failed. Field and query rules (src/http/validate.ts,
 * src/registers/query.ts) describe the value only, the same for every route, so the route is put in front of
 * them here: `Cannot POST /v1/public/payments: field "amount" must be …`.
 */
function withAction(err: ApiError, method: string, route: string): ApiError {
  if (err.status !== 400 || route === '' || err.message.startsWith('Cannot ')) return err;
  const message = `Cannot ${method} ${route}: ${err.message.charAt(0).toLowerCase()}${err.message.slice(1)}`;
  return new ApiError(err.status, err.code, message, err.param, err.headers);
}

/** The query of every request without one; handlers only read a query. */
const NO_QUERY = new URLSearchParams();

/** A path the URL parser would return unchanged: plain characters, no query, no dot segments, no escapes. */
const PLAIN_PATH_RE = /^\/[A-Za-z0-9\-_~/]*(?:\.[A-Za-z0-9\-_~]+)?$/;

/**
 * The request target as a URL; an origin-form target (`//a/b` included) is a path, never a host. A plain
 * path (every API call without a query) skips the URL parser, which costs more than the rest of routing.
 */
function parseTarget(target: string | undefined): { pathname: string; searchParams: URLSearchParams } {
  if (target !== undefined && PLAIN_PATH_RE.test(target)) return { pathname: target, searchParams: NO_QUERY };
  try {
    return new URL(target?.startsWith('/') ? 'http://x' + target : target ?? '/', 'http://x');
  } catch {
    return new URL('http://x/');
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

async function readRequestBody(app: App, ctx: Ctx, route: RouteDef): Promise<void> {
  const raw = await readBody(ctx.req, app.config.bodyLimitBytes);
  ctx.rawBody = raw;
  if (raw.length === 0) return;
  const type = mediaType(ctx.req);
  const charset = mediaCharset(ctx.req);
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new ApiError(415, 'unsupported_media_type', `Cannot accept charset "${charset}": send UTF-8`);
  }
  if (type === 'application/json') {
    ctx.body = parseJson(raw);
  } else if (route.body === 'form' && type === 'application/x-www-form-urlencoded') {
    ctx.body = parseForm(raw);
  } else {
    throw new ApiError(415, 'unsupported_media_type', `Cannot accept Content-Type "${type || '(none)'}": send application/json`);
  }
}

function send(ctx: Ctx, reply: Reply): number {
  const res = ctx.res;
  if ('raw' in reply) return -1;
  if ('location' in reply) {
    res.writeHead(reply.status, { Location: reply.location, 'Content-Length': 0 });
    res.end();
    return reply.status;
  }
  const status = reply.status ?? 200;
  if (reply.headers) for (const [k, v] of Object.entries(reply.headers)) res.setHeader(k, v);
  if ('html' in reply) {
    writeBody(res, status, 'text/html; charset=utf-8', reply.html, ctx.method);
  } else if ('json' in reply) {
    writeJson(ctx, status, reply.json);
  } else if ('text' in reply) {
    writeBody(res, status, reply.contentType ?? 'text/plain; charset=utf-8', reply.text, ctx.method);
  } else {
    writeJson(ctx, status, JSON.stringify(reply.body));
  }
  return status;
}

/** A JSON body, gzipped when it is large and the client accepts gzip (the OpenAPI document, register pages). */
function writeJson(ctx: Ctx, status: number, text: string): void {
  const res = ctx.res;
  if (text.length < GZIP_MIN_BYTES || ctx.method === 'HEAD') return writeBody(res, status, 'application/json', text, ctx.method);
  res.setHeader('Vary', 'Accept-Encoding');
  if (!acceptsGzip(ctx.req.headers['accept-encoding'])) return writeBody(res, status, 'application/json', text, ctx.method);
  gzipText(text, (gz) => {
    if (res.destroyed) return;
    if (!gz) return writeBody(res, status, 'application/json', text, ctx.method);
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', 'Content-Length': gz.length });
    res.end(gz);
  });
}

function sendError(ctx: Ctx, err: ApiError): number {
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

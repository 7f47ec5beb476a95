import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import type { App } from '../app-types';
import type { Router } from './router';
import type { Ctx, Reply, RouteDef } from './types';
import { ApiError, toApiError } from './errors';
import { mediaCharset, mediaType, parseForm, parseJson, readBody } from './body';
import { authenticateKey, requireScope } from '../auth/authenticate';
import { authenticateStreamToken } from '../auth/stream-token';
import type { RateLimiter } from '../auth/rate-limit';
import { logAccess } from './access-log';
import { onClientError } from './client-error';
import { authenticateCabinet, cabinetErrorReply } from '../cabinet/guard';
import { clientIp, guardConnections } from './connections';
import { send, sendError } from './respond';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const REQUEST_ID_RE = /^[A-Za-z0-9._-]{1,64}$/;

/** Per-route observer (metrics); called once per finished request. */
export type RequestObserver = (route: string, method: string, status: number, duration_ms: number) => void;

/** Named limits of connections and request bodies. */
export const SERVER_LIMITS = {
  /** Bytes of request bodies all requests in flight may hold at once; past it a body is refused with 503. */
  body_inflight_bytes: 64 * 1024 * 1024,
};

/**
 * The whole request chain, in order: connection cap (503) and first-byte deadline → request id → path
 * normalised (400) → route match (404/405) → authentication from the headers: key, live mode, IP
 * allow-list (401/403) → body (503 when too many bodies are in flight, 413/415/400) → request signature
 * (401; a cabinet route: session cookie and CSRF token instead of a key) → rate limit (429) → scope (403)
 * → handler → one response writer (cabinet errors as HTML pages) → access log.
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
  const shed = guardConnections(app, server);
  const bodies = new BodyBudget(SERVER_LIMITS.body_inflight_bytes);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (shed.has(req.socket)) {
      res.destroy();
      return;
    }
    inflight.set(req.socket, res);
    void handle(app, router, limiter, req, res, observe, inflight, bodies);
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => onClientError(app, err, socket, inflight.get(socket)));
  return server;
}

/** Bytes of request bodies held by the requests in flight, against one bound. */
class BodyBudget {
  private held = 0;
  constructor(private readonly limit_bytes: number) {}

  /** Reserve room for a body of `bytes` (its declared length, or the body limit when unknown); false when there is none. */
  take(bytes: number): boolean {
    if (this.held + bytes > this.limit_bytes) return false;
    this.held += bytes;
    return true;
  }

  /** Give back what take() reserved. */
  give(bytes: number): void {
    this.held -= bytes;
  }
}

async function handle(
  app: App,
  router: Router<RouteDef>,
  limiter: RateLimiter | null,
  req: IncomingMessage,
  res: ServerResponse,
  observe: RequestObserver | undefined,
  inflight: WeakMap<Socket, ServerResponse>,
  bodies: BodyBudget,
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
  let bodyTaken = false;
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
    if (!isNormalised(req.url ?? '', path)) {
      throw new ApiError(400, 'bad_request', `Cannot route "${(req.url ?? '').split('?')[0].slice(0, 128)}": the path has dot segments or encoded separators; send it normalised`);
    }
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
    // The key is checked before a byte of the body is read: a keyless client cannot make the server hold its body.
    // A stream token (GET /v1/public/events?token=…, for a browser's EventSource) stands in for the key.
    const streamToken = (route.streamToken && header(req, 'authorization') === undefined ? ctx.query.get('token') : null) || null;
    const key =
      route.auth === 'none' || route.auth === 'cabinet' || streamToken ? null : await authenticateKey(app.store, { authorization: header(req, 'authorization'), ip: ctx.ip, connection: req.socket });
    if (key && route.auth === 'test' && key.auth.mode !== 'test') {
      throw new ApiError(404, 'not_found', `Cannot find route ${method} ${path}: test helpers need a test key`);
    }
    bodyTaken = true;
    if (BODY_METHODS.has(method)) await readRequestBody(app, ctx, route, bodies);
    else req.resume();
    if (route.auth === 'cabinet') {
      ctx.cabinet = await authenticateCabinet(ctx);
    } else if (streamToken) {
      ctx.auth = await authenticateStreamToken(app.store, streamToken, app.clocks.real());
      if (limiter) limiter.take(ctx.auth.keyId);
      if (route.scope) requireScope(ctx.auth, route.scope);
      // A token is the whole credential (no cookies), so a page of any origin may read the stream with it.
      res.setHeader('Access-Control-Allow-Origin', '*');
    } else if (key) {
      key.verifyBody(header(req, 'x-psp-signature'), ctx.rawBody);
      ctx.auth = key.auth;
      app.keyUsage.note(ctx.auth.keyId);
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
    // A body never read (refused before it) would still have to be received to reach the next request: close instead.
    if (!bodyTaken && hasBody(req) && !ctx.res.headersSent) ctx.res.setHeader('Connection', 'close');
    // The cabinet is a site for people: its refusals are pages (or the way to the sign-in page), not JSON.
    const cabinet = path === '/cabinet' || path.startsWith('/cabinet/');
    status = cabinet && !res.headersSent ? send(ctx, cabinetErrorReply(ctx, apiErr)) : sendError(ctx, apiErr);
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

/**
 * True when the request target's path is what routing sees: the URL parser left it as sent, and no
 * segment is `.` or `..`, written plainly or percent-encoded (`/./metrics`, `/x/%2e%2e/metrics`).
 */
function isNormalised(target: string, pathname: string): boolean {
  const q = target.indexOf('?');
  const raw = q < 0 ? target : target.slice(0, q);
  if (raw.startsWith('/') && raw !== pathname) return false;
  if (!/%2e/i.test(raw)) return true;
  return !raw.split('/').some((seg) => /^(?:\.|%2e){1,2}$/i.test(seg));
}

/** True when the request announces a body (a length above 0, or chunks). */
function hasBody(req: IncomingMessage): boolean {
  return Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
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

async function readRequestBody(app: App, ctx: Ctx, route: RouteDef, bodies: BodyBudget): Promise<void> {
  const declared = Number(ctx.req.headers['content-length']);
  const reserve = Number.isFinite(declared) ? Math.min(declared, app.config.bodyLimitBytes) : app.config.bodyLimitBytes;
  if (reserve > 0 && !bodies.take(reserve)) {
    throw new ApiError(503, 'unavailable', 'Cannot read the request body: the server holds as many bodies as it may; retry shortly', undefined, {
      'Retry-After': '1',
    });
  }
  let raw: Buffer;
  try {
    raw = await readBody(ctx.req, app.config.bodyLimitBytes);
  } finally {
    if (reserve > 0) bodies.give(reserve);
  }
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

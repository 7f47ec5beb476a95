import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import type { Router } from './router';
import type { Ctx, RouteDef } from './types';
import type { ServerDeps } from './deps';
import { ApiError, toApiError } from './errors';
import { BodyBudget, checkUrlEncoded, hasBody, illFormed, takeBody } from './body';
import { clientIp, guardConnections, lingerOnClose } from './connections';
import { logAccess, onClientError, send, sendError } from './respond';

export type { KeyCheck, KeyInput, RequestObserver, ServerConfig, ServerDeps, ServerGuards } from './deps';

const REQUEST_ID_RE = /^[A-Za-z0-9._-]{1,64}$/;

/** Named limits of connections and request bodies. */
export const SERVER_LIMITS = {
  /** Bytes of request bodies all requests in flight may hold at once; past it a body is refused with 503. */
  body_inflight_bytes: 64 * 1024 * 1024,
};

/** One server's state shared by its requests. */
interface Chain<S> {
  deps: ServerDeps<S>;
  router: Router<RouteDef<S>>;
  /** The response in flight on each connection (a client error while its body arrives is answered through it). */
  inflight: WeakMap<Socket, ServerResponse>;
  bodies: BodyBudget;
  /** Connections answered before their request ended, read and dropped until they close (lingerOnClose). */
  lingering: WeakSet<Socket>;
}

/** How far one request got: the status answered, and whether its body was taken (read, or let through). */
interface Progress {
  status: number;
  bodyTaken: boolean;
}

/**
 * The whole request chain, in order: connection cap (503) and first-byte deadline → request id → path
 * normalised (400) → route match (404/405) → authentication from the headers: key, live mode, IP
 * allow-list (401/403) → query and path parameters well-formed (400) → body (503 when too many bodies are in
 * flight, 413/415/400; any body on a GET or HEAD 400) → request signature
 * (401; a cabinet route: session cookie and CSRF token instead of a key) → rate limit (429) → scope (403)
 * → handler → one response writer (cabinet errors as HTML pages) → access log. The steps that belong to
 * other layers (keys, stream tokens, cabinet sessions and pages, scopes, rate limits) are `deps.guards`.
 */
export function createHttpServer<S>(deps: ServerDeps<S>, router: Router<RouteDef<S>>): Server {
  const { headersTimeoutMs, requestTimeoutMs } = deps.config;
  const server = createServer({
    headersTimeout: headersTimeoutMs,
    requestTimeout: requestTimeoutMs,
    keepAliveTimeout: deps.config.keepAliveTimeoutMs,
    // Node checks the two timeouts only this often (30 s by default), which would let a slow client hold on far longer.
    // The config guarantees headersTimeoutMs <= requestTimeoutMs.
    connectionsCheckingInterval: Math.max(25, Math.min(1000, Math.floor(headersTimeoutMs / 4))),
    maxHeaderSize: 16 * 1024,
  });
  server.maxHeadersCount = 100;
  const chain: Chain<S> = {
    deps,
    router,
    inflight: new WeakMap(),
    bodies: new BodyBudget(SERVER_LIMITS.body_inflight_bytes),
    lingering: new WeakSet(),
  };
  const shed = guardConnections(deps.config, server);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (shed.has(req.socket) || chain.lingering.has(req.socket)) {
      res.destroy();
      return;
    }
    chain.inflight.set(req.socket, res);
    void handle(chain, req, res);
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => onClientError(deps.log, err, socket, chain.inflight.get(socket)));
  return server;
}

/** One request: its context and access-log line around the chain, and the answer to whatever the chain threw. */
function handle<S>(chain: Chain<S>, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { deps } = chain;
  const started = performance.now();
  const incomingId = req.headers['x-request-id'];
  const requestId = typeof incomingId === 'string' && REQUEST_ID_RE.test(incomingId) ? incomingId : randomUUID();
  res.setHeader('X-Request-Id', requestId);
  const method = req.method ?? 'GET';
  // A plain path (every API call without a query) skips the URL parser, which costs more than the rest of
  // routing, and the checks of what such a path cannot hold.
  const target = req.url;
  const plain = target !== undefined && PLAIN_PATH_RE.test(target);
  const url = plain ? { pathname: target, searchParams: NO_QUERY } : parseTarget(target);
  const path = url.pathname;
  const ctx: Ctx<S> = {
    app: deps.services,
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
    ip: clientIp(deps.config.trustProxy, req),
  };
  const progress: Progress = { status: 0, bodyTaken: false };
  // The line is written when the response is over (or the connection died), so a streamed response logs once, at its end.
  // One listener per request for both jobs: 'close' comes once.
  res.on('close', () => {
    if (chain.inflight.get(req.socket) === res) chain.inflight.delete(req.socket);
    const duration_ms = performance.now() - started;
    const final = res.headersSent ? res.statusCode : progress.status;
    deps.observe?.(ctx.route || 'unmatched', method, final, duration_ms);
    logAccess(deps.log, {
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
  return serve(chain, ctx, progress, plain).catch((err: unknown) => refuse(chain, ctx, progress, err));
}

/** The chain from the shutdown check to the handler's reply, in the order createHttpServer's comment gives. */
async function serve<S>(chain: Chain<S>, ctx: Ctx<S>, progress: Progress, plain: boolean): Promise<void> {
  const { deps } = chain;
  const { req, method, path } = ctx;
  if (deps.closing()) throw new ApiError(503, 'unavailable', 'Cannot serve the request: the server is shutting down', undefined, { Connection: 'close' });
  if (!plain && !isNormalised(req.url ?? '', path)) {
    throw new ApiError(400, 'bad_request', `Cannot route "${(req.url ?? '').split('?')[0].slice(0, 128)}": the path has dot segments or encoded separators; send it normalised`);
  }
  const match = chain.router.match(method, path);
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
  const { guards } = deps;
  const authorization = firstOf(req.headers.authorization);
  const streamToken = (route.streamToken && authorization === undefined ? ctx.query.get('token') : null) || null;
  const key =
    route.auth === 'none' || route.auth === 'cabinet' || streamToken ? null : await guards.key({ authorization, ip: ctx.ip, connection: req.socket });
  if (key && route.auth === 'test' && key.auth.mode !== 'test') {
    throw new ApiError(404, 'not_found', `Cannot find route ${method} ${path}: test helpers need a test key`);
  }
  if (!plain) checkTarget(req.url ?? '', ctx.params);
  progress.bodyTaken = true;
  await takeBody(deps.config.bodyLimitBytes, ctx, route, chain.bodies);
  // After the body: cabinet session, or stream token, or the key's signature; then rate limit and scope.
  if (route.auth === 'cabinet') {
    ctx.cabinet = await guards.cabinet(ctx);
  } else if (streamToken) {
    ctx.auth = await guards.streamToken(streamToken);
    guards.rateLimit?.(ctx.auth.keyId);
    if (route.scope) guards.scope(ctx.auth, route.scope);
    // A token is the whole credential (no cookies), so a page of any origin may read the stream with it.
    ctx.res.setHeader('Access-Control-Allow-Origin', '*');
  } else if (key) {
    key.verifyBody(firstOf(req.headers['x-psp-signature']), ctx.rawBody);
    ctx.auth = key.auth;
    guards.noteKeyUse(ctx.auth.keyId);
    guards.rateLimit?.(ctx.auth.keyId);
    if (route.scope) guards.scope(ctx.auth, route.scope);
  }
  progress.status = send(ctx, await route.handler(ctx));
}

/** Answer what the chain threw: logged when it is a 5xx, written once on disk what it rests on, as JSON or a cabinet page. */
async function refuse<S>(chain: Chain<S>, ctx: Ctx<S>, progress: Progress, err: unknown): Promise<void> {
  const { deps } = chain;
  const { req, res, requestId, method, path } = ctx;
  const apiErr = withAction(toApiError(err), method, ctx.route);
  if (apiErr.status >= 500 && err instanceof ApiError) {
    // Raised on purpose (shutting down, a bank's router refusing): a known condition, not a bug; no stack.
    const fields = { request_id: requestId, method, path, status: apiErr.status, code: apiErr.code, error: apiErr.message };
    if (deps.closing() && apiErr.status === 503) deps.log.info('request refused while shutting down', fields);
    else deps.log.warn('request failed', fields);
  } else if (apiErr.status >= 500) {
    deps.log.error('request failed', {
      request_id: requestId,
      method,
      path,
      status: apiErr.status,
      error: err instanceof Error ? err.message : String(err),
      stack: err instanceof Error ? err.stack : undefined,
    });
  }
  // A body never read (refused before it) would still have to be received to reach the next request: close instead.
  if (!progress.bodyTaken && hasBody(req) && !res.headersSent) res.setHeader('Connection', 'close');
  // Answered while the body still arrives (413, or refused before it): close so that the client reads the answer.
  if (!req.complete) lingerOnClose(req.socket, chain.lingering);
  // The cabinet is a site for people: its refusals are pages (or the way to the sign-in page), not JSON.
  const cabinet = path === '/cabinet' || path.startsWith('/cabinet/');
  progress.status = cabinet && !res.headersSent ? send(ctx, deps.guards.cabinetError(ctx, apiErr)) : sendError(ctx, apiErr);
}

/**
 * A refused request's message starts with what failed. Field and query rules (src/platform/http/validate.ts,
 * src/money/registers/query.ts) describe the value only, the same for every route, so the route is put in front of
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

/**
 * The query and the path's parameters as well-formed text (400 naming the parameter): percent-decoded, the query
 * is UTF-8 without NUL, and no path parameter holds a NUL, as no field of a body may (src/platform/http/body.ts).
 */
function checkTarget(target: string, params: Record<string, string>): void {
  const q = target.indexOf('?');
  if (q !== -1) checkUrlEncoded(target.slice(q + 1), 'Query parameter');
  for (const name in params) {
    const why = illFormed(params[name]);
    if (why) throw new ApiError(400, 'bad_request', `Path parameter "${name}" must not contain ${why}`, name);
  }
}

/** The query of every request without one; handlers only read a query. */
const NO_QUERY = new URLSearchParams();

/**
 * A path the URL parser would return unchanged and routing sees as sent: plain characters, no query, no dot
 * segments, no escapes, so no parameter with a NUL.
 */
const PLAIN_PATH_RE = /^\/[A-Za-z0-9\-_~/]*(?:\.[A-Za-z0-9\-_~]+)?$/;

/** The request target as a URL; an origin-form target (`//a/b` included) is a path, never a host. */
function parseTarget(target: string | undefined): URL {
  try {
    return new URL(target?.startsWith('/') ? 'http://x' + target : target ?? '/', 'http://x');
  } catch {
    return new URL('http://x/');
  }
}

/** The first value of a request header. */
function firstOf(v: string | string[] | undefined): string | undefined {
  return typeof v === 'string' || v === undefined ? v : v[0];
}

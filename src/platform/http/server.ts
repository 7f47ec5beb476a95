import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { isIP, type Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import type { Ctx, RouteDef } from './types';
import type { ServerDeps, ServerConfig } from './deps';
import { ApiError, toApiError } from './errors';
import { BodyBudget, checkUrlEncoded, hasBody, illFormed, takeBody } from './body';
import { logAccess, onClientError, send, sendError } from './respond';

const REQUEST_ID_RE = /^[A-Za-z0-9._-]{1,64}$/;

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
  /** Connections whose requests are dropped, never answered: shed over the cap, or lingering (lingerOnClose). */
  dropped: WeakSet<Socket>;
}

/** The status answered, and whether the body was taken (read, or let through). */
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
    dropped: new WeakSet(),
  };
  guardConnections(deps.config, server, chain.dropped);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (chain.dropped.has(req.socket)) {
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
  // Written once the response is over (or the connection died), so a streamed response logs once, at its end.
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
  if (deps.shutdown.closing) throw new ApiError(503, 'unavailable', 'Cannot serve the request: the server is shutting down', undefined, { Connection: 'close' });
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
  // The key is checked before a byte of the body is read; a stream token (`?token=…`) stands in for it.
  const { guards } = deps;
  const authorization = req.headers.authorization;
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
    // Node joins a repeated header other than Set-Cookie into one string.
    key.verifyBody?.(req.headers['x-psp-signature'] as string | undefined, ctx.rawBody);
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
  if (apiErr.status >= 500) {
    const fields = { request_id: requestId, method, path, status: apiErr.status };
    if (err instanceof ApiError) {
      // Raised on purpose (shutting down, a bank's router refusing): a known condition, not a bug; no stack.
      const known = { ...fields, code: apiErr.code, error: apiErr.message };
      if (deps.shutdown.closing && apiErr.status === 503) deps.log.info('request refused while shutting down', known);
      else deps.log.warn('request failed', known);
    } else {
      const e = err instanceof Error ? err : undefined;
      deps.log.error('request failed', { ...fields, error: e ? e.message : String(err), stack: e?.stack });
    }
  }
  // A body never read (refused before it) would still have to be received to reach the next request: close instead.
  if (!progress.bodyTaken && hasBody(req) && !res.headersSent) res.setHeader('Connection', 'close');
  // Answered while the body still arrives (413, or refused before it): close so that the client reads the answer.
  if (!req.complete) lingerOnClose(req.socket, chain.dropped);
  // The cabinet is a site for people: its refusals are pages (or the way to the sign-in page), not JSON.
  const cabinet = path === '/cabinet' || path.startsWith('/cabinet/');
  progress.status = cabinet && !res.headersSent ? send(ctx, deps.guards.cabinetError(ctx, apiErr)) : sendError(ctx, apiErr);
}

/**
 * A refused request's message starts with what failed: field and query rules describe the value only, so the
 * route is put in front of them here: `Cannot POST /v1/public/payments: field "amount" must be …`.
 */
function withAction(err: ApiError, method: string, route: string): ApiError {
  if (err.status !== 400 || route === '' || err.message.startsWith('Cannot ')) return err;
  const message = `Cannot ${method} ${route}: ${err.message.charAt(0).toLowerCase()}${err.message.slice(1)}`;
  return new ApiError(err.status, err.code, message, err.param, err.headers);
}

/** True when the URL parser left the path as sent and no segment is `.` or `..`, plain or encoded (`/x/%2e%2e/metrics`). */
function isNormalised(target: string, pathname: string): boolean {
  const q = target.indexOf('?');
  const raw = q < 0 ? target : target.slice(0, q);
  if (raw.startsWith('/') && raw !== pathname) return false;
  if (!/%2e/i.test(raw)) return true;
  return !raw.split('/').some((seg) => /^(?:\.|%2e){1,2}$/i.test(seg));
}

/** The query and path parameters as well-formed text, as a body's fields must be: UTF-8 without NUL (400 naming it). */
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

/** A path the URL parser returns as sent: no query, dot segment or escape (so no parameter holds a NUL). */
const PLAIN_PATH_RE = /^\/[A-Za-z0-9\-_~/]*(?:\.[A-Za-z0-9\-_~]+)?$/;

/** The request target as a URL; an origin-form target (`//a/b` included) is a path, never a host. */
function parseTarget(target: string | undefined): URL {
  try {
    return new URL(target?.startsWith('/') ? 'http://x' + target : target ?? '/', 'http://x');
  } catch {
    return new URL('http://x/');
  }
}

/**
 * An address in the form allow-lists compare: zone id dropped, lower case, and an IPv4-mapped IPv6 address
 * (`::ffff:1.2.3.4`, `::ffff:102:304`, `0:0:0:0:0:ffff:…`) as plain IPv4.
 */
export function unmapIp(address: string): string {
  const plain = address.replace(/%.*$/, '').toLowerCase();
  if (isIP(plain) !== 6) return plain;
  // The URL parser writes an IPv6 address in its one canonical form, where a mapped address is `::ffff:` and two words.
  const m = /^\[::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})\]$/.exec(new URL(`http://[${plain}]/`).hostname);
  if (!m) return plain;
  const hi = parseInt(m[1], 16);
  const lo = parseInt(m[2], 16);
  return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
}

/**
 * The client address. Behind a trusted proxy it is the last X-Forwarded-For entry: the one the proxy itself
 * appended; earlier entries come from the client and could be forged to pass an allow-list.
 */
function clientIp(trustProxy: boolean, req: IncomingMessage): string {
  if (trustProxy) {
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

/** The answer to a connection over the cap, written by hand: the HTTP parser never sees that connection. */
const OVER_CAP_RESPONSE = (() => {
  const body = JSON.stringify({ error: { code: 'unavailable', message: 'Cannot accept the connection: the server holds as many as it may; retry shortly' } });
  return `HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n${body}`;
})();

/**
 * At most --max-connections at once (one more is answered 503, put in `dropped` and closed, never left hanging); a
 * connection with no byte within the headers timeout is closed (idle sockets would hold descriptors for ever).
 */
function guardConnections(config: Pick<ServerConfig, 'maxConnections' | 'headersTimeoutMs'>, server: Server, dropped: WeakSet<Socket>): void {
  let open = 0;
  const max = Math.min(config.maxConnections, fdCeiling());
  // Before the HTTP server's own listener, so a shed socket is marked before its parser starts.
  server.prependListener('connection', (socket: Socket) => {
    open++;
    if (open > max) {
      socket.once('close', () => open--);
      dropped.add(socket);
      socket.end(OVER_CAP_RESPONSE);
      socket.setTimeout(1000, () => socket.destroy());
      return;
    }
    const timer = setTimeout(() => {
      if (socket.bytesRead === 0) socket.destroy();
    }, config.headersTimeoutMs);
    timer.unref();
    socket.once('close', () => {
      open--;
      clearTimeout(timer);
    });
  });
}

/**
 * Close a connection refused while its body still arrives so that the client reads the answer. Node ends a
 * `Connection: close` answer with `socket.destroySoon()`, and a socket destroyed with bytes unread sends a reset,
 * which a client still sending may meet before the answer. Here destroySoon half-closes instead (the answer, then
 * FIN) and drops the client's bytes until it closes too, or at most a second; a request parsed meanwhile is dropped.
 */
function lingerOnClose(socket: Socket, dropped: WeakSet<Socket>): void {
  socket.destroySoon = (): void => {
    dropped.add(socket);
    if (socket.writable) socket.end();
    if (socket.destroyed) return;
    const timer = setTimeout(() => socket.destroy(), 1000);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
    // The client's FIN: everything it sent is read, so closing now sends no reset.
    socket.once('end', () => socket.destroy());
  };
}

/** Most of the soft open-files limit (the database, its WAL and webhooks need the rest); no limit known: no ceiling. */
function fdCeiling(): number {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m ? Math.max(16, Math.floor(Number(m[1]) * 0.8)) : Infinity;
  } catch {
    return Infinity;
  }
}

/** `/v1/public/payments/:id/refund` → a RegExp with named groups. */
interface Compiled<T> {
  method: string;
  pattern: string;
  regex: RegExp;
  keys: string[];
  value: T;
}

type Match<T> =
  | { kind: 'found'; value: T; params: Record<string, string>; pattern: string }
  | { kind: 'method_not_allowed'; allow: string[] }
  | { kind: 'not_found' };

const SEGMENT = /^[A-Za-z0-9._~-]+$/;
const PARAM = /^:([a-z_][a-z0-9_]*)$/i;

/** A small router: routes are checked when added (bad pattern or duplicate throws), matched by compiled RegExp. */
export class Router<T> {
  private readonly routes: Compiled<T>[] = [];
  private readonly params: Compiled<T>[] = [];
  private readonly statics = new Map<string, Map<string, Compiled<T>>>();

  add(method: string, pattern: string, value: T): void {
    if (!/^[A-Z]+$/.test(method)) throw new Error(`Cannot add route "${method} ${pattern}": bad method`);
    if (!pattern.startsWith('/')) throw new Error(`Cannot add route "${method} ${pattern}": pattern must start with /`);
    const keys: string[] = [];
    const parts = pattern === '/' ? [] : pattern.slice(1).split('/');
    let source = '^';
    for (const part of parts) {
      const param = PARAM.exec(part);
      if (param) {
        if (keys.includes(param[1])) throw new Error(`Cannot add route "${method} ${pattern}": param "${param[1]}" repeats`);
        keys.push(param[1]);
        source += `/(?<${param[1]}>[^/]+)`;
      } else if (SEGMENT.test(part)) {
        source += '/' + part.replace(/[.]/g, '\\.');
      } else {
        throw new Error(`Cannot add route "${method} ${pattern}": bad segment "${part}"`);
      }
    }
    source += pattern === '/' ? '/$' : '$';
    const shape = `${method} ${pattern.replace(/:[^/]+/g, ':')}`;
    const dup = this.routes.find((r) => `${r.method} ${r.pattern.replace(/:[^/]+/g, ':')}` === shape);
    if (dup) throw new Error(`Cannot add route "${method} ${pattern}": duplicates "${dup.method} ${dup.pattern}"`);
    const compiled: Compiled<T> = { method, pattern, regex: new RegExp(source), keys, value };
    this.routes.push(compiled);
    if (keys.length > 0) this.params.push(compiled);
    else if (this.statics.has(pattern)) this.statics.get(pattern)!.set(method, compiled);
    else this.statics.set(pattern, new Map([[method, compiled]]));
  }

  /** Match a method and a path (no query string). HEAD falls back to GET. */
  match(method: string, path: string): Match<T> {
    const byMethod = this.statics.get(path);
    if (byMethod) {
      const hit = byMethod.get(method) ?? (method === 'HEAD' ? byMethod.get('GET') : undefined);
      if (hit) return { kind: 'found', value: hit.value, params: {}, pattern: hit.pattern };
      // A path some route names literally is that resource: another method is 405, never an id of a param route
      // (GET /v1/public/payouts/batch is not the payout "batch").
      return { kind: 'method_not_allowed', allow: allowed(byMethod.keys()) };
    }
    // The first param route that takes the method.
    let allow: string[] | null = null;
    for (const r of this.params) {
      const m = r.regex.exec(path);
      if (!m) continue;
      if (r.method !== method && !(method === 'HEAD' && r.method === 'GET')) {
        (allow ??= []).push(r.method);
        continue;
      }
      const params: Record<string, string> = {};
      for (const k of r.keys) {
        try {
          params[k] = decodeURIComponent(m.groups![k]);
        } catch {
          params[k] = m.groups![k];
        }
      }
      return { kind: 'found', value: r.value, params, pattern: r.pattern };
    }
    return allow ? { kind: 'method_not_allowed', allow: allowed(allow) } : { kind: 'not_found' };
  }

  /** Every route as `[method, pattern]`, in the order added. */
  list(): Array<[string, string]> {
    return this.routes.map((r) => [r.method, r.pattern]);
  }
}

/** The methods of a 405's Allow, sorted, with HEAD wherever GET is. */
function allowed(methods: Iterable<string>): string[] {
  const set = new Set(methods);
  if (set.has('GET')) set.add('HEAD');
  return [...set].sort();
}

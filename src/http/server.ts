import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { App } from '../app-types';
import type { Router } from './router';
import type { Ctx, Reply, RouteDef } from './types';
import { ApiError, toApiError } from './errors';
import { mediaType, parseForm, parseJson, readBody } from './body';
import { authenticate, requireScope } from '../auth/authenticate';
import { unmapIp } from '../auth/ip-allowlist';
import type { RateLimiter } from '../auth/rate-limit';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const REQUEST_ID_RE = /^[A-Za-z0-9._-]{1,64}$/;

/** Per-route observer (metrics); called once per finished request. */
export type RequestObserver = (route: string, method: string, status: number, duration_ms: number) => void;

/**
 * The whole request chain, in order: request id → route match (404/405) → body (413/415/400) →
 * authentication (401/403) → rate limit (429) → scope (403) → handler → one response writer → access log.
 */
export function createHttpServer(app: App, router: Router<RouteDef>, limiter: RateLimiter | null, observe?: RequestObserver): Server {
  const server = createServer({
    headersTimeout: app.config.headersTimeoutMs,
    requestTimeout: app.config.requestTimeoutMs,
    keepAliveTimeout: app.config.keepAliveTimeoutMs,
    maxHeaderSize: 16 * 1024,
  });
  server.maxHeadersCount = 100;
  server.on('request', (req, res) => {
    void handle(app, router, limiter, req, res, observe);
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return socket.destroy();
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    const body = JSON.stringify(
      new ApiError(status, status === 408 ? 'request_timeout' : 'bad_request', status === 431 ? 'Cannot read the request: headers too large' : status === 408 ? 'Cannot read the request: the client was too slow' : 'Cannot parse the HTTP request').toBody(),
    );
    socket.end(
      `HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request'}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  return server;
}

function clientIp(app: App, req: IncomingMessage): string {
  if (app.config.trustProxy) {
    const xff = req.headers['x-forwarded-for'];
    const first = (Array.isArray(xff) ? xff[0] : xff)?.split(',')[0]?.trim();
    if (first) return unmapIp(first);
  }
  return unmapIp(req.socket.remoteAddress ?? '');
}

async function handle(
  app: App,
  router: Router<RouteDef>,
  limiter: RateLimiter | null,
  req: IncomingMessage,
  res: ServerResponse,
  observe?: RequestObserver,
): Promise<void> {
  const started = process.hrtime.bigint();
  const incomingId = req.headers['x-request-id'];
  const requestId = typeof incomingId === 'string' && REQUEST_ID_RE.test(incomingId) ? incomingId : randomUUID();
  res.setHeader('X-Request-Id', requestId);
  const method = req.method ?? 'GET';
  let url: URL;
  try {
    url = new URL(req.url ?? '/', 'http://x');
  } catch {
    url = new URL('http://x/');
  }
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
  let status = 500;
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
    if (route.auth !== 'none') {
      ctx.auth = authenticate(app.store, {
        authorization: header(req, 'authorization'),
        signature: header(req, 'x-psp-signature'),
        ip: ctx.ip,
        rawBody: ctx.rawBody,
      });
      if (route.auth === 'test' && ctx.auth.mode !== 'test') {
        throw new ApiError(404, 'not_found', `Cannot find route ${method} ${path}: test helpers need a test key`);
      }
      if (limiter) limiter.take(ctx.auth.keyId);
      if (route.scope) requireScope(ctx.auth, route.scope);
    }
    const reply = await route.handler(ctx);
    status = send(ctx, reply);
  } catch (err) {
    const apiErr = toApiError(err);
    if (apiErr.status >= 500) {
      app.log.error('request failed', {
        request_id: requestId,
        method,
        path,
        error: err instanceof Error ? err.message : String(err),
        stack: err instanceof Error ? err.stack : undefined,
      });
    }
    status = sendError(ctx, apiErr);
  } finally {
    const duration_ms = Number(process.hrtime.bigint() - started) / 1e6;
    observe?.(ctx.route || 'unmatched', method, status, duration_ms);
    if (status !== -1) {
      app.log.info('request', {
        request_id: requestId,
        method,
        path,
        status,
        duration_ms: Math.round(duration_ms * 1000) / 1000,
        ...ctx.logExtra,
      });
    }
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
  } else if ('text' in reply) {
    writeBody(res, status, reply.contentType ?? 'text/plain; charset=utf-8', reply.text, ctx.method);
  } else {
    writeBody(res, status, 'application/json', JSON.stringify(reply.body), ctx.method);
  }
  return status;
}

function sendError(ctx: Ctx, err: ApiError): number {
  const res = ctx.res;
  if (res.headersSent) {
    res.destroy();
    return err.status;
  }
  if (err.headers) for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
  writeBody(res, err.status, 'application/json', JSON.stringify(err.toBody()), ctx.method);
  return err.status;
}

function writeBody(res: ServerResponse, status: number, type: string, text: string, method: string): void {
  const buf = Buffer.from(text, 'utf8');
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': buf.length });
  res.end(method === 'HEAD' ? undefined : buf);
}

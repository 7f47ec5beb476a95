import type { ServerResponse } from 'node:http';
import type { Ctx, Reply } from './types';
import type { ApiError } from './errors';
import { acceptsGzip, GZIP_MIN_BYTES, gzipText } from './compress';

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
  if ('html' in reply) {
    writeBody(res, status, 'text/html; charset=utf-8', reply.html, ctx.method);
  } else if ('text' in reply) {
    writeBody(res, status, reply.contentType ?? 'text/plain; charset=utf-8', reply.text, ctx.method);
  } else {
    writeJson(ctx, status, reply.json ?? JSON.stringify(reply.body));
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

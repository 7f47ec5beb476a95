import type { IncomingMessage } from 'node:http';
import type { Ctx, RouteDef } from './types';
import { ApiError } from './errors';
import { checkJsonValue, checkUrlEncoded } from './well-formed';

/** Methods whose request body is read and parsed; any other takes none (a body sent with a GET is refused). */
export const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Bytes of request bodies held by the requests in flight, against one bound. */
export class BodyBudget {
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

/** True when the request announces a body (a length above 0, or chunks). */
export function hasBody(req: IncomingMessage): boolean {
  return Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
}

/** Read, bound and parse the body (503 when too many bodies are held, 413, 415, 400). */
export async function readRequestBody<S>(limit_bytes: number, ctx: Ctx<S>, route: RouteDef<S>, bodies: BodyBudget): Promise<void> {
  const raw = await receiveBody(limit_bytes, ctx.req, bodies);
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

/**
 * A request whose method takes no body (GET, HEAD): one that comes with a body anyway is 400. Ignoring it would
 * leave the request signature over bytes other than those sent (the empty string for a body of `{"x":1}`), and
 * a body the server never reads means nothing to it. A body announced as chunks is read to learn whether it
 * is empty (within the body limit, 413 past it).
 */
export async function refuseStrayBody<S>(limit_bytes: number, ctx: Ctx<S>, bodies: BodyBudget): Promise<void> {
  if (!hasBody(ctx.req)) {
    ctx.req.resume();
    return;
  }
  const raw = await receiveBody(limit_bytes, ctx.req, bodies);
  if (raw.length > 0) throw new ApiError(400, 'bad_request', `Cannot ${ctx.method} ${ctx.path}: a ${ctx.method} request takes no body (got ${raw.length} bytes); send its parameters in the query`);
}

/** The whole body within the in-flight budget (503 when it has no room) and `limit_bytes` (413). */
async function receiveBody(limit_bytes: number, req: IncomingMessage, bodies: BodyBudget): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  const reserve = Number.isFinite(declared) ? Math.min(declared, limit_bytes) : limit_bytes;
  if (reserve > 0 && !bodies.take(reserve)) {
    throw new ApiError(503, 'unavailable', 'Cannot read the request body: the server holds as many bodies as it may; retry shortly', undefined, {
      'Retry-After': '1',
    });
  }
  try {
    return await readBody(req, limit_bytes);
  } finally {
    if (reserve > 0) bodies.give(reserve);
  }
}

/** Read the whole body up to `limit_bytes`; a larger body is 413 before it is all read. */
export function readBody(req: IncomingMessage, limit_bytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit_bytes) {
      reject(tooLarge(limit_bytes));
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limit_bytes) {
        done = true;
        reject(tooLarge(limit_bytes));
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (done) return;
      done = true;
      resolve(Buffer.concat(chunks, size));
    });
    req.on('error', (err) => {
      if (done) return;
      done = true;
      reject(err);
    });
    const aborted = (): void => {
      if (done) return;
      done = true;
      reject(new ApiError(400, 'bad_request', 'Cannot read the request body: the connection closed before it ended'));
    };
    req.on('aborted', aborted);
    req.on('close', aborted);
    // A client that goes away in mid-body does not always make the request emit anything (Node answers the
    // cut-off parse as a client error instead): the socket's close settles the read, so nothing waits for ever.
    const socket = req.socket;
    socket.once('close', aborted);
    const forget = (): void => void socket.off('close', aborted);
    req.once('end', forget);
    req.once('error', forget);
  });
}

function tooLarge(limit_bytes: number): ApiError {
  // Close the connection after answering, so the rest of an oversized body is not read just to keep it alive.
  return new ApiError(413, 'payload_too_large', `Cannot accept the request body: it exceeds ${limit_bytes} bytes`, undefined, {
    Connection: 'close',
  });
}

/** Nesting deeper than this is refused before JSON.parse can recurse on it. */
const MAX_DEPTH = 64;

/** The media type of a request, lower-cased, parameters dropped ('' when absent). */
export function mediaType(req: IncomingMessage): string {
  const ct = req.headers['content-type'];
  if (!ct) return '';
  return ct.split(';')[0].trim().toLowerCase();
}

/** The charset parameter of the Content-Type, lower-cased and unquoted; undefined when absent. */
export function mediaCharset(req: IncomingMessage): string | undefined {
  const m = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(req.headers['content-type'] ?? '');
  return m ? m[1].toLowerCase() : undefined;
}

/**
 * Parse a JSON body: valid UTF-8, bounded nesting, a JSON value whose text is well-formed, without NUL, and names
 * each key once per object (src/platform/http/well-formed.ts); anything else is 400.
 */
export function parseJson(raw: Buffer): unknown {
  const text = strictUtf8(raw);
  let depth = 0;
  let inString = false;
  // Outside strings a colon ends a key: as many colons as keys the parsed objects hold, or a key was repeated.
  let pairs = 0;
  // Only a \u escape can make a NUL or a lone surrogate (see checkJsonValue).
  let unicodeEscapes = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) {
        if (text.charCodeAt(i + 1) === 117) unicodeEscapes = true;
        i++;
      } else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 58) pairs++;
    else if (c === 123 || c === 91) {
      if (++depth > MAX_DEPTH) {
        throw new ApiError(400, 'bad_request', `Cannot parse the request body: nesting exceeds ${MAX_DEPTH} levels`);
      }
    } else if (c === 125 || c === 93) depth--;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const detail = err instanceof Error ? err.message.split('\n')[0].slice(0, 120) : 'malformed';
    throw new ApiError(400, 'bad_request', `Cannot parse the request body as JSON: ${detail}`);
  }
  checkJsonValue(value, text, pairs, unicodeEscapes);
  return value;
}

/** A decoder that throws on bytes that are not UTF-8 (one call decodes a whole body, so one decoder serves all). */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** The body as UTF-8 text; bytes that are not UTF-8 are 400, never a silent U+FFFD. */
function strictUtf8(raw: Buffer): string {
  try {
    return UTF8.decode(raw);
  } catch {
    throw new ApiError(400, 'bad_request', 'Cannot parse the request body: it is not valid UTF-8');
  }
}

/** Parse an `application/x-www-form-urlencoded` body into a flat string map (hosted page forms). */
export function parseForm(raw: Buffer): Record<string, string> {
  const text = strictUtf8(raw);
  checkUrlEncoded(text, 'Field');
  const out: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(text)) out[k] = v;
  return out;
}

import type { IncomingMessage } from 'node:http';
import type { Ctx, RouteDef } from './types';
import { ApiError, badRequest } from './errors';

/** Methods whose request body is read and parsed; any other takes none (a body sent with a GET is refused). */
export const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Bytes of request bodies held by the requests in flight, against one bound. */
export class BodyBudget {
  held = 0;
  constructor(readonly limit_bytes: number) {}
}

/** True when the request announces a body (a length above 0, or chunks). */
export function hasBody(req: IncomingMessage): boolean {
  return Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
}

/** A decoder that throws on bytes that are not UTF-8 (one call decodes a whole body, so one decoder serves all). */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Read, bound and parse the body: within the in-flight budget (503) and the body limit (413), of a type the route
 * takes (415), in UTF-8 (400, never a silent U+FFFD). A GET or HEAD with a body (chunks are read to learn whether
 * it is empty) is 400: ignoring it would leave the request signature over bytes other than those sent.
 */
export async function takeBody<S>(limit_bytes: number, ctx: Ctx<S>, route: RouteDef<S>, bodies: BodyBudget): Promise<void> {
  const req = ctx.req;
  const takesBody = BODY_METHODS.has(ctx.method);
  if (!takesBody && !hasBody(req)) {
    req.resume();
    return;
  }
  const declared = Number(req.headers['content-length']);
  const reserve = Number.isFinite(declared) ? Math.min(declared, limit_bytes) : limit_bytes;
  if (reserve > 0) {
    if (bodies.held + reserve > bodies.limit_bytes) {
      throw new ApiError(503, 'unavailable', 'Cannot read the request body: the server holds as many bodies as it may; retry shortly', undefined, {
        'Retry-After': '1',
      });
    }
    bodies.held += reserve;
  }
  let raw: Buffer;
  try {
    if (Number.isFinite(declared) && declared > limit_bytes) {
      req.resume();
      throw tooLarge(limit_bytes);
    }
    raw = await readBody(req, limit_bytes);
  } finally {
    if (reserve > 0) bodies.held -= reserve;
  }
  if (!takesBody) {
    if (raw.length > 0) throw new ApiError(400, 'bad_request', `Cannot ${ctx.method} ${ctx.path}: a ${ctx.method} request takes no body (got ${raw.length} bytes); send its parameters in the query`);
    return;
  }
  ctx.rawBody = raw;
  if (raw.length === 0) return;
  const ct = req.headers['content-type'];
  const type = ct ? ct.split(';')[0].trim().toLowerCase() : '';
  const m = ct ? /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(ct) : null;
  const charset = m ? m[1].toLowerCase() : undefined;
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new ApiError(415, 'unsupported_media_type', `Cannot accept charset "${charset}": send UTF-8`);
  }
  const form = route.body === 'form' && type === 'application/x-www-form-urlencoded';
  if (type !== 'application/json' && !form) {
    throw new ApiError(415, 'unsupported_media_type', `Cannot accept Content-Type "${type || '(none)'}": send application/json`);
  }
  let text: string;
  try {
    text = UTF8.decode(raw);
  } catch {
    throw new ApiError(400, 'bad_request', 'Cannot parse the request body: it is not valid UTF-8');
  }
  ctx.body = form ? parseForm(text) : parseJson(text);
}

/** Read the whole body up to `limit_bytes`; a larger body is 413 before it is all read (one declared larger is refused unread). */
function readBody(req: IncomingMessage, limit_bytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    // A client that goes away in mid-body does not always make the request emit anything (Node answers the
    // cut-off parse as a client error instead): the socket's close settles the read, so nothing waits for ever.
    const socket = req.socket;
    const aborted = (): void => {
      if (done) return;
      done = true;
      reject(new ApiError(400, 'bad_request', 'Cannot read the request body: the connection closed before it ended'));
    };
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
      socket.off('close', aborted);
      req.off('close', aborted);
      if (done) return;
      done = true;
      resolve(Buffer.concat(chunks, size));
    });
    req.on('error', (err) => {
      socket.off('close', aborted);
      if (!done) reject(err);
      done = true;
    });
    req.on('aborted', aborted);
    req.on('close', aborted);
    socket.once('close', aborted);
  });
}

/** Closes the connection after answering, so the rest of an oversized body is not read just to keep it alive. */
function tooLarge(limit_bytes: number): ApiError {
  return new ApiError(413, 'payload_too_large', `Cannot accept the request body: it exceeds ${limit_bytes} bytes`, undefined, { Connection: 'close' });
}

/** Nesting deeper than this is refused before JSON.parse can recurse on it. */
const MAX_DEPTH = 64;

/**
 * Parse a JSON body: bounded nesting, every string (keys too) well-formed without NUL, each key once; else 400.
 * `pairs` counts the colons outside strings: when the parsed objects hold fewer keys, one was repeated, and the text
 * is read again to name it. Without a `\u` escape no string can hold a NUL or a lone surrogate (JSON refuses a raw
 * control character, strict UTF-8 has no lone surrogate), so only the keys are counted, the cheaper walk.
 */
function parseJson(text: string): unknown {
  let depth = 0;
  let inString = false;
  let pairs = 0;
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
  if ((unicodeEscapes ? walk(value, []) : countKeys(value)) === pairs) return value;
  const repeated = repeatedKey(text);
  const name = repeated === null ? '(unknown)' : pathName(repeated);
  throw badRequest(`Field "${name}" is given more than once; send each key once per object`, name);
}

/** A form body (hosted page forms) as a flat string map. */
function parseForm(text: string): Record<string, string> {
  checkUrlEncoded(text, 'Field');
  const out: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(text)) out[k] = v;
  return out;
}

// Text the API takes in is well-formed Unicode without NUL, whatever the field: PostgreSQL cannot store U+0000 in
// text (SQLite does), and a lone UTF-16 surrogate has no UTF-8 form (one driver writes U+FFFD, another keeps it).
// So both are refused at the parsers, for every field, on either engine alike: JSON bodies (keys and values, at any
// depth), form bodies and query strings. A key given twice in one object (`{"amount":1,"amount":2}`) is refused too:
// JSON.parse keeps the last, another reader the first.

/** NUL or a UTF-16 surrogate (most strings have neither). */
const SUSPECT_RE = /[\0\uD800-\uDFFF]/;
/** NUL, or a surrogate that is not half of a pair. */
const ILL_FORMED_RE = /\0|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const ILL_FORMED_ALL_RE = new RegExp(ILL_FORMED_RE.source, 'g');

/** What is wrong with `s` (a NUL or a lone surrogate), or null when nothing is. */
export function illFormed(s: string): string | null {
  if (!SUSPECT_RE.test(s)) return null;
  const m = ILL_FORMED_RE.exec(s);
  if (!m) return null;
  return m[0] === '\0' ? 'a NUL character (U+0000)' : `a lone UTF-16 surrogate (U+${m[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')})`;
}

/** `s` for an error message: NUL and lone surrogates written as \uXXXX escapes, so the message itself is well-formed. */
function shown(s: string): string {
  return s.replace(ILL_FORMED_ALL_RE, (ch) => '\\u' + ch.charCodeAt(0).toString(16).padStart(4, '0'));
}

/** A path in a JSON value as the API names fields: `order_id`, `metadata.k`, `items[2].name`. */
function pathName(path: ReadonlyArray<string | number>): string {
  let out = '';
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : out === '' ? shown(seg) : '.' + shown(seg);
  return out;
}

/** The keys of the objects in `v`, counted, after checking every string of it; `path` leads to `v`. */
function walk(v: unknown, path: Array<string | number>): number {
  if (typeof v === 'string') {
    const why = illFormed(v);
    if (why) refuse(path, why, false);
    return 0;
  }
  if (v === null || typeof v !== 'object') return 0;
  let keys = 0;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      path.push(i);
      keys += walk(v[i], path);
      path.pop();
    }
    return keys;
  }
  const names = Object.keys(v);
  for (const k of names) {
    path.push(k);
    const why = illFormed(k);
    if (why) refuse(path, why, true);
    keys += walk((v as Record<string, unknown>)[k], path);
    path.pop();
  }
  return keys + names.length;
}

/** The keys of the objects in `v`, counted (Object.values: own keys only, and no array of names to build). */
function countKeys(v: unknown): number {
  if (v === null || typeof v !== 'object') return 0;
  const values = Array.isArray(v) ? v : Object.values(v);
  let keys = Array.isArray(v) ? 0 : values.length;
  for (let i = 0; i < values.length; i++) if (typeof values[i] === 'object') keys += countKeys(values[i]);
  return keys;
}

function refuse(path: ReadonlyArray<string | number>, why: string, isKey: boolean): never {
  const name = pathName(path);
  if (path.length === 0) throw badRequest(`Request body must not be a string holding ${why}`);
  throw badRequest(`${isKey ? 'Field name' : 'Field'} "${name}" must not contain ${why}; send well-formed text`, name);
}

/**
 * The path of the first key repeated within one object of `text` (as JSON reads keys: "a" and "\u0061" are one),
 * or null. `text` parsed and is nested at most MAX_DEPTH levels, so it is read without checks.
 */
function repeatedKey(text: string): Array<string | number> | null {
  let i = 0;
  const path: Array<string | number> = [];
  const space = (): void => {
    for (let c = text.charCodeAt(i); c === 32 || c === 9 || c === 10 || c === 13; c = text.charCodeAt(++i));
  };
  const string = (): string => {
    const start = i++;
    let escaped = false;
    for (let c = text.charCodeAt(i); c !== 34; c = text.charCodeAt(++i)) {
      if (c === 92) {
        escaped = true;
        i++;
      }
    }
    i++;
    return escaped ? (JSON.parse(text.slice(start, i)) as string) : text.slice(start + 1, i - 1);
  };
  const value = (): boolean => {
    space();
    const c = text.charCodeAt(i);
    if (c === 34) string();
    else if (c === 123 || c === 91) return members(c === 123);
    else while (i < text.length && !/[\s,\]}]/.test(text[i])) i++;
    return false;
  };
  // An object's or array's members, from its opening bracket; true when a key repeats (path then names it).
  const members = (object: boolean): boolean => {
    i++;
    const seen = object ? new Set<string>() : null;
    for (let index = 0; ; index++) {
      space();
      if (text.charCodeAt(i) === 125 || text.charCodeAt(i) === 93) break;
      if (seen) {
        const key = string();
        path.push(key);
        if (seen.has(key)) return true;
        seen.add(key);
        space();
        i++;
      } else path.push(index);
      if (value()) return true;
      path.pop();
      space();
      if (text.charCodeAt(i) !== 44) break;
      i++;
    }
    i++;
    return false;
  };
  return value() ? path : null;
}

/**
 * A query string or form body whose every name and value, percent-decoded, is UTF-8 without NUL (400 naming it as
 * `what`: "Query parameter", "Field"). URLSearchParams would put U+FFFD for invalid UTF-8 without a word.
 */
export function checkUrlEncoded(text: string, what: string): void {
  if (text.indexOf('%') === -1 && text.indexOf('\0') === -1) return;
  for (const pair of text.split('&')) {
    if (pair.indexOf('%') === -1 && pair.indexOf('\0') === -1) continue;
    const eq = pair.indexOf('=');
    const rawName = eq === -1 ? pair : pair.slice(0, eq);
    const name = decodeComponent(rawName);
    const shownName = name === null ? rawName.slice(0, 64) : shown(name.slice(0, 64));
    if (name === null) throw badRequest(`${what} name "${shownName}" is not valid UTF-8 once percent-decoded`, shownName);
    if (name.includes('\0')) throw badRequest(`${what} name "${shownName}" must not contain a NUL character (U+0000)`, shownName);
    if (eq === -1) continue;
    const val = decodeComponent(pair.slice(eq + 1));
    if (val === null) throw badRequest(`${what} "${shownName}" is not valid UTF-8 once percent-decoded`, shownName);
    if (val.includes('\0')) throw badRequest(`${what} "${shownName}" must not contain a NUL character (U+0000)`, shownName);
  }
}

/** One percent-encoded component as URLSearchParams reads it ('+' a space, a '%' without two hex digits kept), or null when its bytes are not UTF-8. */
function decodeComponent(s: string): string | null {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' ').replace(/%(?![0-9A-Fa-f]{2})/g, '%25'));
  } catch {
    return null;
  }
}

/** Largest amount accepted, in minor units. */
export const MAX_AMOUNT = 1_000_000_000_000;

/** The body as a plain object with only the allowed fields; a missing body reads as `{}`. */
export function bodyObject(body: unknown, allowed: readonly string[]): Record<string, unknown> {
  if (body === undefined) return {};
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw badRequest('Request body must be a JSON object');
  }
  const obj = body as Record<string, unknown>;
  for (const k of Object.keys(obj)) {
    if (!allowed.includes(k)) {
      throw badRequest(`Unknown field "${k}"; ${allowed.length ? `allowed: ${allowed.join(', ')}` : 'this request takes no body fields'}`, k);
    }
  }
  return obj;
}

/** An amount: a JSON integer in 1..10^12 (`allowZero` admits 0). */
export function amountField(obj: Record<string, unknown>, name: string, required: boolean, allowZero = false): number | undefined {
  const v = obj[name];
  if (v === undefined || v === null) {
    if (required) throw badRequest(`Field "${name}" is required`, name);
    return undefined;
  }
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) {
    throw badRequest(`Field "${name}" must be an integer of minor units, got ${describe(v)}`, name);
  }
  if (v === 0 && allowZero) return 0;
  if (v < 1 || v > MAX_AMOUNT) throw badRequest(`Field "${name}" must be between 1 and ${MAX_AMOUNT}, got ${v}`, name);
  return v;
}

export function intField(obj: Record<string, unknown>, name: string, opts: { required?: boolean; min: number; max: number }): number | undefined {
  const v = obj[name];
  if (v === undefined || v === null) {
    if (opts.required) throw badRequest(`Field "${name}" is required`, name);
    return undefined;
  }
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw badRequest(`Field "${name}" must be an integer, got ${describe(v)}`, name);
  if (v < opts.min || v > opts.max) throw badRequest(`Field "${name}" must be between ${opts.min} and ${opts.max}, got ${v}`, name);
  return v;
}

export function strField(
  obj: Record<string, unknown>,
  name: string,
  opts: { required?: boolean; max?: number; pattern?: RegExp; patternHint?: string } = {},
): string | undefined {
  const v = obj[name];
  if (v === undefined || v === null) {
    if (opts.required) throw badRequest(`Field "${name}" is required`, name);
    return undefined;
  }
  if (typeof v !== 'string') throw badRequest(`Field "${name}" must be a string, got ${describe(v)}`, name);
  if (v.length === 0) {
    if (opts.required) throw badRequest(`Field "${name}" must not be empty`, name);
    return undefined;
  }
  const max = opts.max ?? 1000;
  if (v.length > max) throw badRequest(`Field "${name}" must be at most ${max} characters, got ${v.length}`, name);
  if (opts.pattern && !opts.pattern.test(v)) {
    throw badRequest(`Field "${name}" must be ${opts.patternHint ?? `of the form ${opts.pattern}`}, got "${v.slice(0, 64)}"`, name);
  }
  return v;
}

/** A control character (U+0000–U+001F, U+007F) written raw; percent-encoded (`%0d%0a`) it is data of the URL. */
const URL_CONTROL_RE = /[\u0000-\u001F\u007F]/;

/**
 * The first control character written raw in a URL, as `U+000D`, or null. The URL parser drops CR, LF and tab
 * without a word, so `https://a.test/\r\nSet-Cookie: x=1` parses; stored as sent, it would reach a Location header.
 */
export function urlControlChar(v: string): string | null {
  const m = URL_CONTROL_RE.exec(v);
  return m ? 'U+' + m[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0') : null;
}

export function enumField<T extends string>(obj: Record<string, unknown>, name: string, values: readonly T[], def?: T): T | undefined {
  const v = obj[name];
  if (v === undefined || v === null) return def;
  if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) {
    throw badRequest(`Field "${name}" must be one of ${values.join(', ')}, got ${describe(v)}`, name);
  }
  return v as T;
}

/** The currency field: RUB only for now. */
export function currencyField(obj: Record<string, unknown>): 'RUB' {
  const v = obj.currency;
  if (v !== undefined && v !== null && v !== 'RUB') throw badRequest(`Field "currency" must be "RUB", got ${describe(v)}`, 'currency');
  return 'RUB';
}

/** A short, safe description of a value for an error message. */
export function describe(v: unknown): string {
  if (typeof v === 'string') return `"${v.slice(0, 64)}"`;
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  return String(v);
}

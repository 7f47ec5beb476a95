import type { IncomingMessage } from 'node:http';
import { ApiError } from './errors';

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

/** Parse a JSON body: valid UTF-8, bounded nesting, a JSON value; anything else is 400. */
export function parseJson(raw: Buffer): unknown {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
  } catch {
    throw new ApiError(400, 'bad_request', 'Cannot parse the request body: it is not valid UTF-8');
  }
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++;
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      if (++depth > MAX_DEPTH) {
        throw new ApiError(400, 'bad_request', `Cannot parse the request body: nesting exceeds ${MAX_DEPTH} levels`);
      }
    } else if (c === 125 || c === 93) depth--;
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    const detail = err instanceof Error ? err.message.split('\n')[0].slice(0, 120) : 'malformed';
    throw new ApiError(400, 'bad_request', `Cannot parse the request body as JSON: ${detail}`);
  }
}

/** Parse an `application/x-www-form-urlencoded` body into a flat string map (hosted page forms). */
export function parseForm(raw: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(raw.toString('utf8'))) out[k] = v;
  return out;
}

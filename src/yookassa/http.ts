import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { fixedLookup, type Resolved } from '../webhooks/url-safety';

/** Largest answer body read; a longer one is unreadable. */
const MAX_ANSWER_BYTES = 1_048_576;

/**
 * What one call gave: an answer with a JSON object body (2xx and 4xx other than 429), or unknown (and why,
 * without secrets): a timeout, a connection error, a 5xx, a 429, a body that is not a JSON object.
 */
export type Sent = { kind: 'answer'; status: number; body: Record<string, unknown> } | { kind: 'unknown'; reason: string };

/** One call to the provider. */
export interface Call {
  method: 'GET' | 'POST';
  url: string;
  agentId: string;
  secret: string;
  /** The POST's Idempotence-Key (fixed per payout). */
  idempotenceKey?: string;
  body?: Record<string, unknown>;
  timeoutMs: number;
  /** The address a check of `url` found: the connection goes there. */
  resolved?: Resolved;
}

/** Call the provider with HTTP Basic auth and read its answer within the timeout. */
export function callYookassa(c: Call): Promise<Sent> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (s: Sent): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(s);
    };
    let u: URL;
    try {
      u = new URL(c.url);
    } catch {
      resolve({ kind: 'unknown', reason: 'the provider address is not a URL' });
      return;
    }
    const payload = c.body ? Buffer.from(JSON.stringify(c.body), 'utf8') : undefined;
    const headers: Record<string, string | number> = { Accept: 'application/json', Authorization: `Basic ${Buffer.from(`${c.agentId}:${c.secret}`, 'utf8').toString('base64')}` };
    if (payload) Object.assign(headers, { 'Content-Type': 'application/json', 'Content-Length': payload.length, 'Idempotence-Key': c.idempotenceKey ?? randomUUID() });
    const send = u.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(u, { method: c.method, headers, ...(c.resolved ? { lookup: fixedLookup(c.resolved) } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (b: Buffer) => {
        size += b.length;
        if (size > MAX_ANSWER_BYTES) {
          req.destroy();
          finish({ kind: 'unknown', reason: 'the answer is too large' });
        } else chunks.push(b);
      });
      res.on('error', () => finish({ kind: 'unknown', reason: 'the connection broke while reading the answer' }));
      res.on('end', () => finish(readAnswer(res.statusCode ?? 0, Buffer.concat(chunks))));
    });
    const timer = setTimeout(() => {
      req.destroy();
      finish({ kind: 'unknown', reason: `no answer within ${c.timeoutMs} ms` });
    }, c.timeoutMs);
    req.on('error', (e: NodeJS.ErrnoException) => finish({ kind: 'unknown', reason: `connection error ${e.code ?? ''}`.trim() }));
    req.end(payload);
  });
}

/** An answer's status and body as a Sent. */
function readAnswer(status: number, raw: Buffer): Sent {
  if (status >= 500 || status === 429) return { kind: 'unknown', reason: `HTTP ${status}` };
  if (status < 200 || (status >= 300 && status < 400)) return { kind: 'unknown', reason: `HTTP ${status}` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    return { kind: 'unknown', reason: `HTTP ${status} with a body that is not JSON` };
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return { kind: 'unknown', reason: `HTTP ${status} with a body that is not an object` };
  return { kind: 'answer', status, body: parsed as Record<string, unknown> };
}

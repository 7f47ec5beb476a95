import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { TBankAnswer } from './protocol';
import { fixedLookup, type Resolved } from '../webhooks/url-safety';

/** Largest answer body read from the bank; a longer one is unreadable. */
const MAX_ANSWER_BYTES = 1_048_576;

/** What one POST to the bank gave: a readable JSON answer, or unknown (and why, without secrets). */
export type Sent = { kind: 'answer'; answer: TBankAnswer } | { kind: 'unknown'; reason: string };

/**
 * POST a signed JSON body to `url` and read the answer within `timeout_ms`. A timeout, a connection error,
 * a 5xx or a body that is not a JSON object is unknown: the bank may or may not have acted on it. `resolved`
 * is the address the check of `url` found: the connection goes there, not to what a second lookup might give.
 */
export function postJson(url: string, body: Record<string, unknown>, timeout_ms: number, resolved?: Resolved): Promise<Sent> {
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
      u = new URL(url);
    } catch {
      finish({ kind: 'unknown', reason: 'the acquirer address is not a URL' });
      return;
    }
    const payload = Buffer.from(JSON.stringify(body), 'utf8');
    const send = u.protocol === 'https:' ? httpsRequest : httpRequest;
    const headers = { 'Content-Type': 'application/json', 'Content-Length': payload.length, Accept: 'application/json' };
    const req = send(u, { method: 'POST', headers, ...(resolved ? { lookup: fixedLookup(resolved) } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_ANSWER_BYTES) {
          req.destroy();
          finish({ kind: 'unknown', reason: 'the answer is too large' });
        } else chunks.push(c);
      });
      res.on('error', () => finish({ kind: 'unknown', reason: 'the connection broke while reading the answer' }));
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        if (status >= 500) return finish({ kind: 'unknown', reason: `HTTP ${status}` });
        let parsed: unknown;
        try {
          parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          return finish({ kind: 'unknown', reason: `HTTP ${status} with a body that is not JSON` });
        }
        if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed) || typeof (parsed as TBankAnswer).Success !== 'boolean') {
          return finish({ kind: 'unknown', reason: `HTTP ${status} with an answer that has no Success` });
        }
        finish({ kind: 'answer', answer: parsed as TBankAnswer });
      });
    });
    const timer = setTimeout(() => {
      req.destroy();
      finish({ kind: 'unknown', reason: `no answer within ${timeout_ms} ms` });
    }, timeout_ms);
    req.on('error', (e: NodeJS.ErrnoException) => finish({ kind: 'unknown', reason: `connection error ${e.code ?? ''}`.trim() }));
    req.end(payload);
  });
}

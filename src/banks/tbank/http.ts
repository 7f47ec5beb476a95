import type { TBankAnswer } from './protocol';
import { fixedLookup, type Resolved } from '../../money/webhooks/url-safety';
import { callBank } from '../http-call';

/** What one POST to the bank gave: a readable JSON answer, or unknown (and why, without secrets). */
export type Sent = { kind: 'answer'; answer: TBankAnswer } | { kind: 'unknown'; reason: string };

/**
 * POST a signed JSON body to `url` and read the answer within `timeout_ms`. A timeout, a connection error,
 * a 5xx or a body that is not a JSON object is unknown: the bank may or may not have acted on it. `resolved`
 * is the address the check of `url` found: the connection goes there, not to what a second lookup might give.
 */
export async function postJson(url: string, body: Record<string, unknown>, timeout_ms: number, resolved?: Resolved): Promise<Sent> {
  const payload = Buffer.from(JSON.stringify(body), 'utf8');
  const headers = { 'Content-Type': 'application/json', 'Content-Length': payload.length, Accept: 'application/json' };
  const raw = await callBank({ method: 'POST', url, headers, payload, timeoutMs: timeout_ms, lookup: resolved ? fixedLookup(resolved) : undefined, who: 'acquirer' });
  if (raw.kind === 'unknown') return raw;
  if (raw.status >= 500) return { kind: 'unknown', reason: `HTTP ${raw.status}` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.body.toString('utf8'));
  } catch {
    return { kind: 'unknown', reason: `HTTP ${raw.status} with a body that is not JSON` };
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed) || typeof (parsed as TBankAnswer).Success !== 'boolean') {
    return { kind: 'unknown', reason: `HTTP ${raw.status} with an answer that has no Success` };
  }
  return { kind: 'answer', answer: parsed as TBankAnswer };
}

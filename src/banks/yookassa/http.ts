import { randomUUID } from 'node:crypto';
import { callBank, jsonObject, type BankCall } from '../http-call';

/** An answer with a JSON object body (2xx, 4xx but 429), or unknown: timeout, connection error, 5xx, 429, a non-object body. */
export type Sent = { kind: 'answer'; status: number; body: Record<string, unknown> } | { kind: 'unknown'; reason: string };

interface Call extends Omit<BankCall, 'headers' | 'payload' | 'who'> {
  agentId: string;
  secret: string;
  /** The POST's Idempotence-Key (fixed per payout). */
  idempotenceKey?: string;
  body?: Record<string, unknown>;
}

/** Call the provider with HTTP Basic auth. */
export async function callYookassa(c: Call): Promise<Sent> {
  const payload = c.body ? Buffer.from(JSON.stringify(c.body), 'utf8') : undefined;
  const headers: Record<string, string | number> = { Accept: 'application/json', Authorization: `Basic ${Buffer.from(`${c.agentId}:${c.secret}`, 'utf8').toString('base64')}` };
  if (payload) Object.assign(headers, { 'Content-Type': 'application/json', 'Content-Length': payload.length, 'Idempotence-Key': c.idempotenceKey ?? randomUUID() });
  const raw = await callBank({ method: c.method, url: c.url, headers, payload, timeoutMs: c.timeoutMs, resolved: c.resolved, who: 'provider' });
  if (raw.kind === 'unknown') return raw;
  const status = raw.status;
  if (status >= 500 || status === 429 || status < 200 || (status >= 300 && status < 400)) return { kind: 'unknown', reason: `HTTP ${status}` };
  const parsed = jsonObject(status, raw.body, 'a body that is not an object');
  return parsed.kind === 'unknown' ? parsed : { kind: 'answer', status, body: parsed.body };
}

/** A payout id the provider never gives (its ids start "po-"): a GET of it changes nothing anywhere. */
const NO_SUCH_PAYOUT = 'kopek-credentials-check-0000000000000000';

/** Checks credentials with a GET of a payout that cannot exist: 404 accepts them, 401 or 403 refuses, anything else is a reason. */
export async function checkYookassaCredentials(o: { apiUrl: string; agentId: string; secret: string; timeoutMs: number }): Promise<{ ok: true } | { ok: false; reason: string }> {
  const url = `${o.apiUrl.replace(/\/+$/, '')}/payouts/${NO_SUCH_PAYOUT}`;
  const sent = await callYookassa({ method: 'GET', url, agentId: o.agentId, secret: o.secret, timeoutMs: o.timeoutMs });
  if (sent.kind === 'unknown') return { ok: false, reason: `the provider did not answer: ${sent.reason}` };
  if (sent.status === 404) return { ok: true };
  if (sent.status === 401 || sent.status === 403) return { ok: false, reason: `the provider refused the credentials (HTTP ${sent.status})` };
  return { ok: false, reason: `unexpected answer HTTP ${sent.status} to a check of the credentials` };
}

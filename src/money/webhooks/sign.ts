import { hmacHex } from '../../platform/util/ids';
import type { SignatureVersion } from './store';

/**
 * The X-PSP-Signature value of one attempt.
 * v2: `t=<unix>,v1=<hex>,v2=<hex>` where both are HMAC-SHA256(secret, `<t>.<body>`), one v1/v2 pair per
 * valid secret (newest first), so Stripe-style verifiers (`t=`, `v1=`) accept it unchanged.
 * v1 (legacy): `sha256=<hex of HMAC(body)>`, one per valid secret, comma-separated.
 * Each key is the whole secret string, prefix included.
 */
export function signatureHeader(version: SignatureVersion, secrets: readonly string[], t_s: number, rawBody: string): string {
  if (secrets.length === 0) throw new Error('cannot sign a webhook: no valid secret');
  if (!Number.isSafeInteger(t_s) || t_s < 0) throw new Error(`cannot sign a webhook: bad timestamp ${t_s}`);
  if (version === 'v1') return secrets.map((s) => `sha256=${hmacHex(s, rawBody)}`).join(',');
  const signed = `${t_s}.${rawBody}`;
  const parts = [`t=${t_s}`];
  for (const s of secrets) {
    const h = hmacHex(s, signed);
    parts.push(`v1=${h}`, `v2=${h}`);
  }
  return parts.join(',');
}

/** The exact body of a webhook (made below the webhooks, as the event stream sends it too). */
export { webhookBody } from '../events/stream';

/** The User-Agent every webhook carries. */
export const USER_AGENT = 'psp-webhook/1.0';

/**
 * The headers of one webhook POST, given its signature header: a delivery and `kopek listen` send the same ones
 * (the client adds Content-Length).
 */
export function webhookHeaders(eventId: string, signature: string, t_s: number): Record<string, string> {
  return {
    'Content-Type': 'application/json',
    'User-Agent': USER_AGENT,
    'X-PSP-Event-Id': eventId,
    'X-PSP-Signature': signature,
    'X-PSP-Timestamp': String(t_s),
  };
}

import { callYookassa } from './http';

/** A payout id the provider never gives (its ids start "po-"): a GET of it changes nothing anywhere. */
const NO_SUCH_PAYOUT = 'kopek-credentials-check-0000000000000000';

/**
 * Check a payout gateway's credentials with a request that changes nothing: GET {api_url}/payouts/<an id that
 * cannot exist>. 404 means the provider took the credentials; 401 or 403 refuses them; anything else is a reason.
 */
export async function checkYookassaCredentials(o: { apiUrl: string; agentId: string; secret: string; timeoutMs: number }): Promise<{ ok: true } | { ok: false; reason: string }> {
  const url = `${o.apiUrl.replace(/\/+$/, '')}/payouts/${NO_SUCH_PAYOUT}`;
  const sent = await callYookassa({ method: 'GET', url, agentId: o.agentId, secret: o.secret, timeoutMs: o.timeoutMs });
  if (sent.kind === 'unknown') return { ok: false, reason: `the provider did not answer: ${sent.reason}` };
  if (sent.status === 404) return { ok: true };
  if (sent.status === 401 || sent.status === 403) return { ok: false, reason: `the provider refused the credentials (HTTP ${sent.status})` };
  return { ok: false, reason: `unexpected answer HTTP ${sent.status} to a check of the credentials` };
}

import type { Reader, Tx } from '../../platform/storage/store';
import type { BankRequestRow } from '../http-call';

// YooKassa's requests in bank_requests (subject_kind 'payout'): the payout's id is the subject and the Idempotence-Key
// (order_id), the provider's id its bank_payment_id. The body is kept without the card number, never written anywhere.

export type YookassaRequestRow = BankRequestRow & { operation: 'CreatePayout' | 'GetPayout' };

/** The first POST of a payout: its body is what every repeat sends again. */
export async function firstPost(q: Reader, payoutId: string): Promise<YookassaRequestRow | undefined> {
  return q.get<YookassaRequestRow>(`SELECT * FROM bank_requests WHERE subject_id = ? AND provider = 'yookassa' AND operation = 'CreatePayout' ORDER BY id LIMIT 1`, payoutId);
}

/** True when a GET of the payout waits to be sent or answered, or was answered after `since` (a flood's one check). */
export async function getOpenOrRecent(q: Reader, payoutId: string, since: number): Promise<boolean> {
  const r = await q.get<{ n: number }>(
    `SELECT count(*) AS n FROM bank_requests WHERE subject_id = ? AND provider = 'yookassa' AND operation = 'GetPayout'
       AND (state IN ('queued', 'sent') OR answered_at >= ?)`,
    payoutId, since,
  );
  return (r?.n ?? 0) > 0;
}

/** Show the provider's payout id as the payout's bank_ref (once: a set one is never replaced). */
export async function putPayoutRef(tx: Tx, payoutId: string, providerId: string): Promise<void> {
  await tx.run(`UPDATE payouts SET bank_ref = ? WHERE id = ? AND bank_ref = ''`, providerId, payoutId);
}

export async function payoutOfProviderId(q: Reader, shopId: string, providerId: string): Promise<string | undefined> {
  return (await q.get<{ id: string }>(`SELECT id FROM payouts WHERE shop_id = ? AND mode = 'live' AND bank_ref = ? LIMIT 1`, shopId, providerId))?.id;
}

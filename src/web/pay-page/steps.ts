import type { Reader, Store } from '../../platform/storage/store';
import type { Core } from '../../money/core/core';
import type { PaymentView } from '../../money/bank-port/payment';

/** A step of the page that outlives one request (table pay_page_steps). */
export interface PageStep {
  step: 'challenge' | 'confirm' | 'waiting';
  card_brand: string;
  card_mask: string;
  card_holder: string;
  /** The bank's answer once the step passes. */
  outcome: '' | 'succeeded' | 'failed' | 'pending';
  failure_code: string;
}

export async function getStep(q: Reader, paymentId: string): Promise<PageStep | undefined> {
  return q.get<PageStep>('SELECT step, card_brand, card_mask, card_holder, outcome, failure_code FROM pay_page_steps WHERE payment_id = ?', paymentId);
}

/** Record the buyer's step (replacing an earlier one), committed before the page answers. */
export async function putStep(core: Pick<Core, 'store' | 'clocks'>, p: PaymentView, s: PageStep): Promise<void> {
  const mode = p.metadata.mode === 'live' ? 'live' : 'test';
  await core.store.write(async (tx) => {
    const now = await core.clocks.now(tx, p.shop_id, mode);
    await tx.run(
      `INSERT INTO pay_page_steps (payment_id, shop_id, mode, step, card_brand, card_mask, card_holder, outcome, failure_code, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (payment_id) DO UPDATE SET step = excluded.step, card_brand = excluded.card_brand, card_mask = excluded.card_mask,
           card_holder = excluded.card_holder, outcome = excluded.outcome, failure_code = excluded.failure_code, updated_at = excluded.updated_at`,
      p.id, p.shop_id, mode, s.step, s.card_brand, s.card_mask, s.card_holder, s.outcome, s.failure_code, now,
    );
  });
}

/** Forget the buyer's step once the payment has its answer. */
export async function clearStep(store: Store, paymentId: string): Promise<void> {
  await store.write((tx) => tx.run('DELETE FROM pay_page_steps WHERE payment_id = ?', paymentId));
}

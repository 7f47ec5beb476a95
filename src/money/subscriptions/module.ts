import type { Tx } from '../../platform/storage/store';
import type { Module } from '../core/module';
import type { PaymentRow } from '../bank-port/payment';
import type { MovedFilter, PaymentMoved, PaymentsCore } from '../payments/core';
import { createRefundTx } from '../refunds/refunds';
import { getToken, recurrentPayment } from '../tokens/store';
import { activateTokenTx, chargedTx } from '../tokens/tokens';
import { getSubscription } from './store';
import { activateTx, chargeSettledTx, CHARGE_JOB, runChargeJob } from './subscriptions';

/** The audit log's actor for the service's own refunds. */
const SERVICE_ACTOR = 'kopek:verification';

/** A 1 RUB verification is refunded in full once it succeeded, as banks' verification charges are. */
async function reverseVerificationTx(core: PaymentsCore, tx: Tx, p: PaymentRow): Promise<void> {
  await createRefundTx(core, tx, p, { amount: p.amount, reason: 'Verification payment returned', keyId: SERVICE_ACTOR });
}

/** The typed hook, in the payment's transaction: a succeeded binding activates its token or subscription; an ended charge moves its subscription. */
async function onPaymentMoved(core: PaymentsCore, tx: Tx, p: PaymentRow, movedAt: number): Promise<void> {
  const rp = await recurrentPayment(tx, p.seq);
  if (!rp) return;
  const ok = p.status === 'succeeded';
  // The bank's moment of capture, so last_charged_at and the anchor equal captured_at.
  const at = p.captured_at ?? movedAt;
  switch (rp.kind) {
    case 'token_binding': {
      const t = await getToken(tx, rp.token_id);
      if (ok && t) {
        await activateTokenTx(core, tx, t, p);
        // Cards bind with a verification; sbp and tpay bind with a real first charge, which stays.
        if (t.method === 'cards') await reverseVerificationTx(core, tx, p);
      }
      return;
    }
    case 'token_charge':
      if (ok) await chargedTx(tx, rp.token_id, at);
      return;
    case 'subscription_init': {
      const s = await getSubscription(tx, rp.subscription_id ?? '');
      if (ok && s) {
        await activateTx(core, tx, s, p, at);
        // During a trial the first payment only binds the method; the first real charge comes after it.
        if (s.trial_days > 0) await reverseVerificationTx(core, tx, p);
      }
      return;
    }
    case 'subscription_charge':
      await chargeSettledTx(core, tx, rp, p, at);
      return;
  }
}

/** The moves the hook is run for: a binding's or a charge's payment that settled (expired counts as a failed charge). */
const RECURRENT_SETTLED: MovedFilter = {
  kinds: ['token_binding', 'subscription_init', 'token_charge', 'subscription_charge'],
  statuses: ['succeeded', 'failed', 'expired'],
};

/** The charge job and the payment hook, returned for the root to add to `core.paymentHooks`. Builds only. */
export function recurrentModule(core: PaymentsCore): Module & { onPaymentMoved: PaymentMoved; movedFilter: MovedFilter } {
  return {
    name: 'recurrent',
    jobs: [{ kind: CHARGE_JOB, run: (tx, job) => runChargeJob(core, tx, job) }],
    onPaymentMoved: (tx, p, _from, at) => onPaymentMoved(core, tx, p, at),
    movedFilter: RECURRENT_SETTLED,
  };
}

import type { Tx } from '../../platform/storage/store';
import type { Module } from '../core/module';
import type { PaymentRow } from '../bank-port/payment';
import type { PaymentsCore } from '../payments/core';
import type { PaymentMoved } from '../payments/hooks';
import { createRefundTx } from '../refunds/refunds';
import { getToken, recurrentPayment } from '../tokens/store';
import { activateTokenTx, chargedTx } from '../tokens/tokens';
import { getSubscription } from './store';
import { activateTx, chargeSettledTx, CHARGE_JOB, runChargeJob } from './subscriptions';

/** The audit log's actor for refunds the service makes itself. */
const SERVICE_ACTOR = 'kopek:verification';

/**
 * A 1 RUB verification (card binding, a trial's binding) is returned to the buyer once it succeeded, as
 * banks' verification charges are: a refund of the whole amount, settled like any refund.
 */
async function reverseVerificationTx(core: PaymentsCore, tx: Tx, p: PaymentRow): Promise<void> {
  await createRefundTx(core, tx, p, { amount: p.amount, reason: 'Verification payment returned', keyId: SERVICE_ACTOR });
}

/** Final payment statuses tokens and subscriptions react to (expired counts as a failed charge). */
const SETTLED = new Set(['succeeded', 'failed', 'expired']);

/**
 * React to the payments tokens and subscriptions made, inside the transaction of the payment's status change
 * (the payments' typed hook): a binding that succeeded activates its token or subscription; a charge that ended
 * moves its subscription. The payments state machine stays unaware of them.
 */
async function onPaymentMoved(core: PaymentsCore, tx: Tx, p: PaymentRow, movedAt: number): Promise<void> {
  if (!SETTLED.has(p.status)) return;
  // Payments made by hand (kind `payment`) have no token or subscription behind them.
  if (p.kind === 'payment') return;
  const rp = await recurrentPayment(tx, p.seq);
  if (!rp) return;
  const ok = p.status === 'succeeded';
  // The bank's moment of capture, so last_charged_at and the anchor equal the payment's captured_at.
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

/**
 * Tokens and subscriptions as the wiring mounts them: the subscription charge job, and the hook that ties them
 * to their payments, returned rather than added (the root adds it to `core.paymentHooks`). Builds only.
 */
export function recurrentModule(core: PaymentsCore): Module & { onPaymentMoved: PaymentMoved } {
  return {
    name: 'recurrent',
    jobs: [{ kind: CHARGE_JOB, run: (tx, job) => runChargeJob(core, tx, job) }],
    onPaymentMoved: (tx, p, _from, at) => onPaymentMoved(core, tx, p, at),
  };
}

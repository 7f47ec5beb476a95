import type { App } from '../app-types';
import type { Tx } from '../db/store';
import type { PaymentRow } from '../model/payment';
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
async function reverseVerificationTx(app: App, tx: Tx, p: PaymentRow): Promise<void> {
  await createRefundTx(app, tx, p, { amount: p.amount, reason: 'Verification payment returned', keyId: SERVICE_ACTOR });
}

/** Final payment statuses tokens and subscriptions react to (expired counts as a failed charge). */
const SETTLED = new Set(['succeeded', 'failed', 'expired']);

/**
 * React to the payments tokens and subscriptions made, inside the transaction of the payment's status change
 * (the payments' typed hook): a binding that succeeded activates its token or subscription; a charge that ended
 * moves its subscription. The payments state machine stays unaware of them.
 */
async function onPaymentMoved(app: App, tx: Tx, p: PaymentRow, movedAt: number): Promise<void> {
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
        await activateTokenTx(app, tx, t, p);
        // Cards bind with a verification; sbp and tpay bind with a real first charge, which stays.
        if (t.method === 'cards') await reverseVerificationTx(app, tx, p);
      }
      return;
    }
    case 'token_charge':
      if (ok) await chargedTx(tx, rp.token_id, at);
      return;
    case 'subscription_init': {
      const s = await getSubscription(tx, rp.subscription_id ?? '');
      if (ok && s) {
        await activateTx(app, tx, s, p, at);
        // During a trial the first payment only binds the method; the first real charge comes after it.
        if (s.trial_days > 0) await reverseVerificationTx(app, tx, p);
      }
      return;
    }
    case 'subscription_charge':
      await chargeSettledTx(app, tx, rp, p, at);
      return;
  }
}

/** Register the subscription charge job and the hook that ties tokens and subscriptions to their payments. */
export function registerRecurrent(app: App): void {
  app.scheduler.register(CHARGE_JOB, async (tx, job) => runChargeJob(app, tx, job));
  app.paymentHooks.onMoved(async (tx, p, _from, at) => onPaymentMoved(app, tx, p, at));
}

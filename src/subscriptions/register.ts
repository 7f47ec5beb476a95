import type { App } from '../app-types';
import type { Tx } from '../db/store';
import type { EventRow } from '../events/emit';
import { getPayment } from '../payments/store';
import type { PaymentRow } from '../payments/types';
import { createRefundTx } from '../refunds/refunds';
import { getToken, recurrentPayment, recurrentPaymentById } from '../tokens/store';
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
 * React to the payments tokens and subscriptions made, inside the transaction of the payment's status change:
 * a binding that succeeded activates its token or subscription; a charge that ended moves its subscription.
 * The payments state machine stays unaware of them.
 */
async function recurrentSink(app: App, tx: Tx, row: EventRow, object: unknown): Promise<void> {
  if (row.kind !== 'payment.status_changed' || row.payment_id === null) return;
  // The state machine hands over the payment as its move left it; read it only when it did not.
  const moved = object as PaymentRow | undefined;
  const given = moved !== undefined && moved.id === row.payment_id ? moved : undefined;
  if (!SETTLED.has(given ? given.status : (JSON.parse(row.payload) as { status: string }).status)) return;
  // Payments made by hand (kind `payment`) have no token or subscription behind them.
  if (given && given.kind === 'payment') return;
  const rp = given ? await recurrentPayment(tx, given.seq) : await recurrentPaymentById(tx, row.payment_id);
  if (!rp) return;
  const p = given ?? (await getPayment(tx, rp.payment_id));
  if (!p) return;
  const ok = p.status === 'succeeded';
  // The bank's moment of capture, so last_charged_at and the anchor equal the payment's captured_at.
  const at = p.captured_at ?? row.at;
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

/** Register the subscription charge job and the sink that ties tokens and subscriptions to their payments. */
export function registerRecurrent(app: App): void {
  app.scheduler.register(CHARGE_JOB, async (tx, job) => runChargeJob(app, tx, job));
  app.events.addSink(async (tx, row, object) => recurrentSink(app, tx, row, object));
}

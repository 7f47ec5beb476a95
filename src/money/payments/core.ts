import type { Core } from '../core/core';
import type { PaymentHooks } from './hooks';

/**
 * The core as the payments state machine needs it: with the typed hooks `move()` runs after a status change
 * (tokens and subscriptions react to their payments there). Whoever moves a payment takes this type.
 */
export interface PaymentsCore extends Core {
  readonly paymentHooks: PaymentHooks;
}

import type { Core } from '../core/core';
import type { PaymentHooks } from './hooks';
import type { PaymentViewCache } from './view-cache';

/**
 * The core as the payments state machine needs it: with the typed hooks `move()` runs after a status change
 * (tokens and subscriptions react to their payments there). Whoever moves a payment takes this type.
 */
export interface PaymentsCore extends Core {
  readonly paymentHooks: PaymentHooks;
}

/** The core as GET of a payment needs it: with the cache of serialised payment views (it only reads). */
export interface PaymentViewsCore extends Core {
  readonly viewCache: PaymentViewCache;
}

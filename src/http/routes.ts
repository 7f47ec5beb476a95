import { Router } from './router';
import type { RouteDef } from './types';
import * as system from '../system/handlers';
import { metricsHandler } from '../system/metrics';
import * as payments from '../payments/handlers';
import * as refunds from '../refunds/handlers';
import { simulatePayment } from '../simulator/payments';
import * as payouts from '../payouts/handlers';
import { getBalance } from '../ledger/handlers';
import { listSbpBanks } from '../banks/handlers';
import { listDeliveries } from '../webhooks/handlers';
import { streamEvents } from '../events/stream';
import { createStreamToken } from '../auth/stream-token';
import * as payPage from '../pay-page/handlers';
import * as payActions from '../pay-page/actions';
import * as tokens from '../tokens/handlers';
import * as subscriptions from '../subscriptions/handlers';

/** The route table: one line per route. Patterns are checked when added; a duplicate stops start-up. */
export function buildRouter(): Router<RouteDef> {
  const r = new Router<RouteDef>();
  // System
  r.add('GET', '/healthz', { auth: 'none', handler: system.health });
  r.add('GET', '/v1/openapi.json', { auth: 'none', handler: system.openapi });
  r.add('GET', '/metrics', { auth: 'none', handler: metricsHandler });
  // Payments and refunds
  r.add('POST', '/v1/public/payments', { auth: 'key', handler: payments.createPayment });
  r.add('GET', '/v1/public/payments', { auth: 'key', scope: 'api:reports:read', handler: payments.listPayments });
  r.add('GET', '/v1/public/payments/:id', { auth: 'key', handler: payments.getPaymentHandler });
  r.add('POST', '/v1/public/payments/:id/cancel', { auth: 'key', handler: payments.cancelPayment });
  r.add('POST', '/v1/public/payments/:id/refund', { auth: 'key', handler: refunds.createRefund });
  r.add('GET', '/v1/public/refunds', { auth: 'key', scope: 'api:reports:read', handler: refunds.listRefunds });
  r.add('POST', '/v1/test/payments/:id/simulate', { auth: 'test', handler: simulatePayment });
  // Events and webhooks
  r.add('GET', '/v1/public/events', { auth: 'key', streamToken: true, handler: streamEvents });
  r.add('POST', '/v1/public/events/token', { auth: 'key', handler: createStreamToken });
  r.add('GET', '/v1/test/webhooks/deliveries', { auth: 'test', handler: listDeliveries });
  // Balance, payouts (the create routes check the scope of the body's method), bank directory
  r.add('GET', '/v1/public/balance', { auth: 'key', scope: 'api:balance:read', handler: getBalance });
  r.add('POST', '/v1/public/payouts', { auth: 'key', handler: payouts.createPayout });
  r.add('POST', '/v1/public/payouts/batch', { auth: 'key', handler: payouts.createPayoutBatch });
  r.add('GET', '/v1/public/payouts', { auth: 'key', scope: 'api:reports:read', handler: payouts.listPayoutsHandler });
  r.add('GET', '/v1/public/payouts/:id', { auth: 'key', handler: payouts.getPayoutHandler });
  r.add('POST', '/v1/test/payouts/:id/simulate', { auth: 'test', handler: payouts.simulatePayout });
  r.add('GET', '/v1/public/banks/sbp', { auth: 'key', handler: listSbpBanks });
  // Hosted payment page (buyers, no key; forms post urlencoded)
  r.add('GET', '/pay/:id', { auth: 'none', handler: payPage.showPage });
  r.add('GET', '/pay/:id/status', { auth: 'none', handler: payPage.pageStatus });
  r.add('GET', '/pay/:id/bank', { auth: 'none', handler: payPage.showBank });
  r.add('POST', '/pay/:id/bank', { auth: 'none', body: 'form', handler: payActions.postBank });
  r.add('POST', '/pay/:id/method', { auth: 'none', body: 'form', handler: payActions.postMethod });
  r.add('POST', '/pay/:id/cancel', { auth: 'none', body: 'form', handler: payActions.postCancel });
  r.add('POST', '/pay/:id/card', { auth: 'none', body: 'form', handler: payActions.postCard });
  r.add('POST', '/pay/:id/3ds', { auth: 'none', body: 'form', handler: payActions.postThreeDs });
  // Tokens and subscriptions: api:recurrent:bind to create, read and cancel; api:recurrent:charge to charge
  r.add('POST', '/v1/public/tokens', { auth: 'key', scope: 'api:recurrent:bind', handler: tokens.createToken });
  r.add('GET', '/v1/public/tokens', { auth: 'key', scope: 'api:recurrent:bind', handler: tokens.listTokens });
  r.add('GET', '/v1/public/tokens/:id', { auth: 'key', scope: 'api:recurrent:bind', handler: tokens.getTokenHandler });
  r.add('POST', '/v1/public/tokens/:id/cancel', { auth: 'key', scope: 'api:recurrent:bind', handler: tokens.cancelToken });
  r.add('POST', '/v1/public/tokens/:id/charge', { auth: 'key', scope: 'api:recurrent:charge', handler: tokens.chargeToken });
  r.add('POST', '/v1/test/tokens/:id/outcomes', { auth: 'test', handler: tokens.setOutcomes });
  r.add('POST', '/v1/public/subscriptions', { auth: 'key', scope: 'api:recurrent:bind', handler: subscriptions.createSubscription });
  r.add('GET', '/v1/public/subscriptions', { auth: 'key', scope: 'api:recurrent:bind', handler: subscriptions.listSubscriptions });
  r.add('GET', '/v1/public/subscriptions/:id', { auth: 'key', scope: 'api:recurrent:bind', handler: subscriptions.getSubscriptionHandler });
  r.add('GET', '/v1/public/subscriptions/:id/schedule', { auth: 'key', scope: 'api:recurrent:bind', handler: subscriptions.getSchedule });
  r.add('POST', '/v1/public/subscriptions/:id/cancel', { auth: 'key', scope: 'api:recurrent:bind', handler: subscriptions.cancelSubscription });
  // Test helpers (sk_test_ keys only; a live key gets 404)
  r.add('GET', '/v1/test/clock', { auth: 'test', handler: system.getClock });
  r.add('POST', '/v1/test/clock/advance', { auth: 'test', handler: system.advanceClock });
  r.add('POST', '/v1/test/reset', { auth: 'test', handler: system.reset });
  return r;
}

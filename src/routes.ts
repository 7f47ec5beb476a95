import { Router } from './platform/http/server';
import type { RouteDef } from './platform/http/types';
import type { App } from './app-types';
import { apiDocument } from './openapi';
import * as system from './web/system/handlers';
import { metricsHandler } from './web/system/metrics';
import * as payments from './money/payments/handlers';
import * as refunds from './money/refunds/handlers';
import * as payouts from './money/payouts/handlers';
import { getBalance } from './money/ledger/ledger';
import { listSbpBanks } from './money/sbp/handlers';
import { streamEvents } from './money/events/events';
import { createStreamToken } from './platform/auth/stream-token';
import * as payPage from './web/pay-page/handlers';
import * as payActions from './web/pay-page/handlers';
import * as tokens from './money/tokens/handlers';
import * as subscriptions from './money/subscriptions/handlers';
import { bankCallbackHandler } from './banks/callbacks';
import { notifiedPaymentAnswered } from './money/payments/state';
import { notifiedRefundAnswered } from './money/refunds/bank-answers';
import { simulatePayment, simulatePayout } from './banks/simulator/test-bank';
import { setOutcomes } from './banks/simulator/token-outcomes';
import * as simPage from './web/pay-page/simulator-forms';
import * as testClock from './banks/simulator/clock';
import { listDeliveries } from './banks/simulator/deliveries';
import { triggerEvent } from './banks/simulator/trigger';
import * as cabinet from './web/cabinet/routes';

/**
 * The route table: one line per route. Every handler is given the App (`ctx.app`) and names in its type only
 * the part it uses. Patterns are checked when added; a duplicate stops start-up.
 */
export function buildRouter(): Router<RouteDef<App>> {
  const r = new Router<RouteDef<App>>();
  // System
  r.add('GET', '/', { auth: 'none', handler: system.root });
  r.add('GET', '/healthz', { auth: 'none', handler: system.health });
  r.add('GET', '/v1/openapi.json', { auth: 'none', handler: system.openapiHandler(apiDocument) });
  r.add('GET', '/metrics', { auth: 'none', handler: metricsHandler });
  // Payments and refunds
  r.add('POST', '/v1/public/payments', { auth: 'key', handler: payments.createPayment });
  r.add('GET', '/v1/public/payments', { auth: 'key', scope: 'api:reports:read', handler: payments.listPayments });
  r.add('GET', '/v1/public/payments/:id', { auth: 'key', handler: payments.getPaymentHandler });
  r.add('POST', '/v1/public/payments/:id/cancel', { auth: 'key', handler: payments.cancelPayment });
  r.add('POST', '/v1/public/payments/:id/refund', { auth: 'key', handler: refunds.createRefund });
  r.add('GET', '/v1/public/refunds', { auth: 'key', scope: 'api:reports:read', handler: refunds.listRefunds });
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
  r.add('GET', '/v1/public/banks/sbp', { auth: 'key', handler: listSbpBanks });
  // Hosted payment page (buyers, no key; forms post urlencoded)
  r.add('GET', '/pay/:id', { auth: 'none', handler: payPage.showPage });
  r.add('GET', '/pay/:id/status', { auth: 'none', handler: payPage.pageStatus });
  r.add('GET', '/pay/:id/bank', { auth: 'none', handler: payPage.showBank });
  r.add('POST', '/pay/:id/bank', { auth: 'none', body: 'form', handler: simPage.postBank });
  r.add('POST', '/pay/:id/method', { auth: 'none', body: 'form', handler: payActions.postMethod });
  r.add('POST', '/pay/:id/cancel', { auth: 'none', body: 'form', handler: payActions.postCancel });
  r.add('POST', '/pay/:id/card', { auth: 'none', body: 'form', handler: simPage.postCard });
  r.add('POST', '/pay/:id/3ds', { auth: 'none', body: 'form', handler: simPage.postThreeDs });
  // Tokens and subscriptions: api:recurrent:bind to create, read and cancel; api:recurrent:charge to charge
  r.add('POST', '/v1/public/tokens', { auth: 'key', scope: 'api:recurrent:bind', handler: tokens.createToken });
  r.add('GET', '/v1/public/tokens', { auth: 'key', scope: 'api:recurrent:bind', handler: tokens.listTokens });
  r.add('GET', '/v1/public/tokens/:id', { auth: 'key', scope: 'api:recurrent:bind', handler: tokens.getTokenHandler });
  r.add('POST', '/v1/public/tokens/:id/cancel', { auth: 'key', scope: 'api:recurrent:bind', handler: subscriptions.cancelToken });
  r.add('POST', '/v1/public/tokens/:id/charge', { auth: 'key', scope: 'api:recurrent:charge', handler: tokens.chargeToken });
  r.add('POST', '/v1/public/subscriptions', { auth: 'key', scope: 'api:recurrent:bind', handler: subscriptions.createSubscription });
  r.add('GET', '/v1/public/subscriptions', { auth: 'key', scope: 'api:recurrent:bind', handler: subscriptions.listSubscriptions });
  r.add('GET', '/v1/public/subscriptions/:id', { auth: 'key', scope: 'api:recurrent:bind', handler: subscriptions.getSubscriptionHandler });
  r.add('GET', '/v1/public/subscriptions/:id/schedule', { auth: 'key', scope: 'api:recurrent:bind', handler: subscriptions.getSchedule });
  r.add('POST', '/v1/public/subscriptions/:id/cancel', { auth: 'key', scope: 'api:recurrent:bind', handler: subscriptions.cancelSubscription });
  // Bank notifications (the provider's port checks their signature)
  r.add('POST', '/v1/callbacks/:provider/:shop_id', { auth: 'none', handler: bankCallbackHandler({ payment: notifiedPaymentAnswered, refund: notifiedRefundAnswered }) });
  // Test helpers of the simulator (sk_test_ keys only; a live key gets 404)
  r.add('POST', '/v1/test/payments/:id/simulate', { auth: 'test', handler: simulatePayment });
  r.add('POST', '/v1/test/payouts/:id/simulate', { auth: 'test', handler: simulatePayout });
  r.add('POST', '/v1/test/tokens/:id/outcomes', { auth: 'test', handler: setOutcomes });
  r.add('GET', '/v1/test/clock', { auth: 'test', handler: testClock.getClock });
  r.add('POST', '/v1/test/clock/advance', { auth: 'test', handler: testClock.advanceClock });
  r.add('POST', '/v1/test/reset', { auth: 'test', handler: testClock.reset });
  r.add('POST', '/v1/test/trigger', { auth: 'test', handler: triggerEvent });
  // Merchant cabinet (people, forms urlencoded): auth 'cabinet' is the session cookie, and on POST its CSRF token
  r.add('GET', '/cabinet', { auth: 'none', handler: cabinet.cabinetRoot });
  r.add('GET', '/cabinet/login', { auth: 'none', handler: cabinet.showLogin });
  r.add('POST', '/cabinet/login', { auth: 'none', body: 'form', handler: cabinet.postLogin });
  r.add('POST', '/cabinet/logout', { auth: 'cabinet', body: 'form', handler: cabinet.postLogout });
  r.add('POST', '/cabinet/logout-all', { auth: 'cabinet', body: 'form', handler: cabinet.postLogoutAll });
  r.add('POST', '/cabinet/prefs', { auth: 'cabinet', body: 'form', handler: cabinet.postPrefs });
  r.add('GET', '/cabinet/overview', { auth: 'cabinet', handler: cabinet.overview });
  r.add('GET', '/cabinet/payments', { auth: 'cabinet', handler: cabinet.registerPage('payments') });
  r.add('GET', '/cabinet/payments.csv', { auth: 'cabinet', handler: cabinet.registerCsv('payments') });
  r.add('GET', '/cabinet/payments/:id', { auth: 'cabinet', handler: cabinet.paymentPage });
  r.add('POST', '/cabinet/payments/:id/refund', { auth: 'cabinet', body: 'form', handler: cabinet.postRefund });
  r.add('POST', '/cabinet/payments/:id/cancel', { auth: 'cabinet', body: 'form', handler: cabinet.postCancel });
  r.add('POST', '/cabinet/events/:id/resend', { auth: 'cabinet', body: 'form', handler: cabinet.postResend });
  r.add('GET', '/cabinet/refunds', { auth: 'cabinet', handler: cabinet.registerPage('refunds') });
  r.add('GET', '/cabinet/refunds.csv', { auth: 'cabinet', handler: cabinet.registerCsv('refunds') });
  r.add('GET', '/cabinet/payouts', { auth: 'cabinet', handler: cabinet.registerPage('payouts') });
  r.add('GET', '/cabinet/payouts.csv', { auth: 'cabinet', handler: cabinet.registerCsv('payouts') });
  r.add('GET', '/cabinet/shops', { auth: 'cabinet', handler: cabinet.shopsPage });
  r.add('POST', '/cabinet/shops', { auth: 'cabinet', body: 'form', handler: cabinet.postShop });
  r.add('GET', '/cabinet/shops/:id', { auth: 'cabinet', handler: cabinet.shopPage });
  r.add('POST', '/cabinet/shops/:id/scopes', { auth: 'cabinet', body: 'form', handler: cabinet.postScopes });
  r.add('POST', '/cabinet/shops/:id/ip-allowlist', { auth: 'cabinet', body: 'form', handler: cabinet.postAllowlist });
  r.add('POST', '/cabinet/shops/:id/require-signature', { auth: 'cabinet', body: 'form', handler: cabinet.postRequireSignature });
  r.add('POST', '/cabinet/shops/:id/signing-secret', { auth: 'cabinet', body: 'form', handler: cabinet.postSigningSecret });
  r.add('POST', '/cabinet/shops/:id/acquirer', { auth: 'cabinet', body: 'form', handler: cabinet.postAcquirer });
  r.add('POST', '/cabinet/shops/:id/acquirer/remove', { auth: 'cabinet', body: 'form', handler: cabinet.postRemoveAcquirer });
  r.add('POST', '/cabinet/shops/:id/payout-provider', { auth: 'cabinet', body: 'form', handler: cabinet.postPayoutProvider });
  r.add('POST', '/cabinet/shops/:id/payout-provider/remove', { auth: 'cabinet', body: 'form', handler: cabinet.postRemovePayoutProvider });
  r.add('POST', '/cabinet/activate-live', { auth: 'cabinet', body: 'form', handler: cabinet.postActivateLive });
  r.add('GET', '/cabinet/keys', { auth: 'cabinet', handler: cabinet.keysPage });
  r.add('POST', '/cabinet/keys', { auth: 'cabinet', body: 'form', handler: cabinet.postKey });
  r.add('POST', '/cabinet/keys/:id/revoke', { auth: 'cabinet', body: 'form', handler: cabinet.postRevoke });
  r.add('GET', '/cabinet/webhooks', { auth: 'cabinet', handler: cabinet.webhooksPage });
  r.add('POST', '/cabinet/webhooks', { auth: 'cabinet', body: 'form', handler: cabinet.postEndpoint });
  r.add('POST', '/cabinet/webhooks/:id/rotate', { auth: 'cabinet', body: 'form', handler: cabinet.postRotate });
  r.add('POST', '/cabinet/webhooks/:id/delete', { auth: 'cabinet', body: 'form', handler: cabinet.postDeleteEndpoint });
  r.add('GET', '/cabinet/test', { auth: 'cabinet', handler: cabinet.testPage });
  r.add('POST', '/cabinet/test/:shop/advance', { auth: 'cabinet', body: 'form', handler: cabinet.postAdvance });
  r.add('POST', '/cabinet/test/:shop/reset', { auth: 'cabinet', body: 'form', handler: cabinet.postReset });
  r.add('GET', '/cabinet/audit', { auth: 'cabinet', handler: cabinet.auditPage });
  r.add('GET', '/cabinet/account', { auth: 'cabinet', handler: cabinet.accountPage });
  r.add('POST', '/cabinet/account/totp', { auth: 'cabinet', body: 'form', handler: cabinet.postTotpStart });
  r.add('POST', '/cabinet/account/totp/confirm', { auth: 'cabinet', body: 'form', handler: cabinet.postTotpConfirm });
  r.add('POST', '/cabinet/account/totp/disable', { auth: 'cabinet', body: 'form', handler: cabinet.postTotpDisable });
  r.add('POST', '/cabinet/account/password', { auth: 'cabinet', body: 'form', handler: cabinet.postPassword });
  return r;
}

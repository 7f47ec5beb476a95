import {
  type OpenApiFragment, bearer, createdResponses, idempotencyHeader, jsonBody, ref, registerPage, strictObject,
  uuidSchema as uuid, timeSchema as time, timeOrNullSchema as timeOrNull, amountSchema as amount,
  cancelOp, idParam, readOp,
} from '../../platform/http/openapi-types';
import { PAYMENT_STATUSES } from '../bank-port/payment';
import { TOKEN_METHODS } from '../tokens/store';
import { recurrentListQuery } from '../tokens/openapi';
import { PERIODS } from './calendar';
import { SUBSCRIPTION_STATUSES } from './store';
import { CHARGES_MAX, INTERVAL_MAX, TRIAL_DAYS_MAX, UPCOMING_COUNT } from './handlers';

const status = { enum: [...SUBSCRIPTION_STATUSES] };
const method = { enum: [...TOKEN_METHODS] };
const period = { enum: [...PERIODS] };
const intervalCount = { type: 'integer', minimum: 1, maximum: INTERVAL_MAX };
const trialDays = { type: 'integer', minimum: 0, maximum: TRIAL_DAYS_MAX };
const nextChargeAt = { ...timeOrNull, description: 'null while pending and once cancelled; a retry time while past_due' };
const rub = { const: 'RUB' };
const text = { type: 'string' };
/** The Subscription object's first fields, which the creation answer carries alone. */
const summary = {
  id: uuid, status, amount, currency: rub, method, period, interval_count: intervalCount, trial_days: trialDays,
  next_charge_at: nextChargeAt,
};

/** OpenAPI paths and schemas of subscriptions and their schedule. */
export const subscriptionsOpenApi: OpenApiFragment = {
  paths: {
    '/v1/public/subscriptions': {
      post: {
        operationId: 'createSubscription',
        summary: 'Create a subscription (scopes api:recurrent:bind and api:recurrent:charge; Idempotency-Key accepted): pending until its initial payment succeeds',
        security: bearer, parameters: [idempotencyHeader],
        requestBody: jsonBody(strictObject({
          amount,
          customer_ref: { type: 'string', maxLength: 128, pattern: '\\S', description: 'not white space alone' },
          method: { ...method, default: 'cards' }, period: { ...period, default: 'month' },
          interval_count: { ...intervalCount, default: 1 },
          trial_days: { ...trialDays, default: 0, description: 'cards and sbp only; the initial payment is then a 1 RUB binding' },
          customer_email: { type: 'string', maxLength: 254 },
          plan_name: { type: 'string', maxLength: 200 },
          return_url: { type: 'string', format: 'uri' },
          currency: rub,
        }, ['amount', 'customer_ref'])),
        responses: createdResponses(ref('SubscriptionCreated'), 'Created pending'),
      },
      get: readOp('listSubscriptions', 'Subscriptions of the shop (scope api:recurrent:bind), newest first',
        recurrentListQuery, 'A page', registerPage('Subscription')),
    },
    '/v1/public/subscriptions/{id}': {
      get: readOp('getSubscription', 'A subscription (scope api:recurrent:bind)', idParam, 'The subscription',
        ref('Subscription')),
    },
    '/v1/public/subscriptions/{id}/schedule': {
      get: readOp('getSubscriptionSchedule',
        `Charges so far (the latest ${CHARGES_MAX}) and the next ${UPCOMING_COUNT} charge times (scope api:recurrent:bind)`,
        idParam, 'The schedule', ref('SubscriptionSchedule')),
    },
    '/v1/public/subscriptions/{id}/cancel': {
      post: cancelOp('cancelSubscription',
        'Cancel a subscription in any status (scope api:recurrent:bind); cancelling again changes nothing', idParam,
        { requestBody: jsonBody(strictObject({ reason: { type: 'string', maxLength: 500 } }, []), false) }),
    },
  },
  schemas: {
    SubscriptionCharge: strictObject({
      payment_id: uuid,
      kind: { enum: ['subscription_init', 'subscription_charge'] },
      amount, status: { enum: [...PAYMENT_STATUSES] },
      failure_code: { type: 'string', description: 'unified failure code of a failed or expired payment; "" otherwise' },
      attempt: { type: 'integer', minimum: 1, maximum: 3, description: 'subscription_charge: 1, or the retry 2 or 3' },
      created_at: time,
    }),
    Subscription: strictObject({
      ...summary, customer_ref: text, customer_email: text, plan_name: text,
      trial_end: { ...timeOrNull, description: 'set on activation when trial_days > 0: the first charge' },
      token_id: uuid, initial_payment_id: uuid,
      failed_charges: { type: 'integer', minimum: 0, maximum: 3, description: 'consecutive failed charges' },
      latest_charge: { oneOf: [{ type: 'null' }, ref('SubscriptionCharge')] },
      cancel_reason: { type: 'string', description: 'the merchant\'s reason (default merchant_request), charge_failed or token_cancelled; "" unless cancelled' },
      created_at: time, activated_at: timeOrNull, cancelled_at: timeOrNull,
    }),
    SubscriptionCreated: strictObject({
      subscription: strictObject(summary),
      initial_payment: strictObject({ id: uuid, status: { enum: [...PAYMENT_STATUSES] }, amount }),
      pay_url: { type: 'string', format: 'uri' },
      idempotent: { const: true },
    }, ['subscription', 'initial_payment', 'pay_url']),
    SubscriptionSchedule: strictObject({
      subscription_id: uuid, status, amount, currency: rub, period, interval_count: intervalCount,
      next_charge_at: nextChargeAt,
      charges: { type: 'array', maxItems: CHARGES_MAX, items: ref('SubscriptionCharge') },
      upcoming: { type: 'array', maxItems: UPCOMING_COUNT, items: time, description: 'next charge times; empty unless active or past_due' },
    }),
  },
};

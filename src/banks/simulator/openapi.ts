import { type OpenApiFragment, amountSchema, bearer, errorResponses, jsonBody, jsonResponse, ref, strictObject, uuidSchema as uuid, timeSchema } from '../../platform/http/openapi-types';
import { PAYMENT_FAILURE_CODES } from '../../money/payments/failures';
import { PAYOUT_FAILURE_CODES } from '../../money/payouts/payouts';
import { tokenProps } from '../../money/tokens/openapi';
import { SIMULATE_ACTIONS, SIMULATE_METHODS } from './test-bank';
import { OUTCOMES_MAX } from './token-outcomes';
import { TRIGGER_EVENT_NAMES, TRIGGER_SET_FIELDS } from './trigger-events';

const idParam = [{ name: 'id', in: 'path', required: true, schema: uuid }];

const outcome = {
  type: 'string',
  pattern: `^(succeed|pending|fail|fail:(${PAYMENT_FAILURE_CODES.join('|')}))$`,
  description: 'succeed; fail (do_not_honor) or fail:<failure code>; pending (the bank never answers and the charge expires)',
};

/** The trigger's `set`: the schema names every field of TRIGGER_SET_FIELDS; the route refuses those the event's object does not take. */
const triggerSet = {
  type: 'object',
  additionalProperties: false,
  description: `Fields of the object the event makes, checked as its create checks them: ${Object.entries(TRIGGER_SET_FIELDS)
    .map(([kind, fields]) => `${kind} events take ${fields.join(', ')}`)
    .join('; ')}. Any other is 400 with param set.FIELD; an amount whose kopeck part plans another outcome than the event is 400 with param set.amount`,
  properties: {
    amount: { ...amountSchema, description: 'minor units, as the create takes it' },
    order_id: { type: 'string', maxLength: 128 },
    description: { type: 'string', maxLength: 1000 },
    metadata: { type: 'object', additionalProperties: { type: 'string' }, description: "keys added to the payment's metadata beside kopek_trigger" },
    phone: { type: 'string', pattern: '^\\+7[0-9]{10}$', description: "the SBP payout's recipient phone" },
    full_name: { type: 'string', maxLength: 200, description: "the SBP payout's recipient name" },
    plan_name: { type: 'string', maxLength: 200 },
    customer_ref: { type: 'string', maxLength: 128 },
    customer_email: { type: 'string', maxLength: 254 },
  },
};

/** OpenAPI paths and schemas of the test bank's helpers (test keys only; a live key gets 404). */
export const simulatorOpenApi: OpenApiFragment = {
  paths: {
    '/v1/test/payments/{id}/simulate': {
      post: {
        summary: 'Test keys only: drive a test payment as the buyer and the bank would',
        security: bearer,
        parameters: idParam,
        requestBody: jsonBody(
          strictObject(
            {
              action: { enum: [...SIMULATE_ACTIONS] },
              method: { enum: [...SIMULATE_METHODS] },
              failure_code: { enum: [...PAYMENT_FAILURE_CODES], description: 'for fail; default the planned code, else do_not_honor' },
            },
            ['action'],
          ),
        ),
        responses: { '200': jsonResponse('The payment after the action', ref('Payment')), ...errorResponses },
      },
    },
    '/v1/test/payouts/{id}/simulate': {
      post: {
        summary: 'Test mode: the test bank answers a pending payout now',
        security: bearer,
        parameters: idParam,
        requestBody: jsonBody(
          strictObject({ action: { enum: ['succeed', 'fail'] }, failure_code: { enum: PAYOUT_FAILURE_CODES, default: 'do_not_honor' } }, ['action']),
        ),
        responses: { '200': jsonResponse('The payout in its final status', ref('Payout')), ...errorResponses },
      },
    },
    '/v1/test/tokens/{id}/outcomes': {
      post: {
        summary: "Test keys only: set the queue of outcomes the token's next charges follow, before magic amounts; 409 invalid_state for a cancelled token",
        security: bearer,
        parameters: idParam,
        requestBody: jsonBody(strictObject({ outcomes: { type: 'array', maxItems: OUTCOMES_MAX, items: outcome } })),
        responses: { '200': jsonResponse('The token and its queue', ref('TokenWithOutcomes')), ...errorResponses },
      },
    },
    '/v1/test/trigger': {
      post: {
        summary:
          "Test keys only: make a webhook event happen now in the key's shop, through the same paths as a buyer's payment (the test clock does not move); 201 once it is committed, so the delivery log and the stream already have it",
        security: bearer,
        requestBody: jsonBody(strictObject({ event: { enum: TRIGGER_EVENT_NAMES }, set: triggerSet }, ['event'])),
        responses: { '201': jsonResponse('The event and the objects made for it', ref('TriggerResult')), ...errorResponses },
      },
    },
    '/v1/test/clock': {
      get: {
        summary: "The shop's test clock",
        security: bearer,
        responses: { '200': jsonResponse('Clock', ref('TestClock')), ...errorResponses },
      },
    },
    '/v1/test/clock/advance': {
      post: {
        summary: "Move the shop's test clock forward and run every job that became due",
        security: bearer,
        requestBody: jsonBody(strictObject({ seconds: { type: 'integer', minimum: 0, maximum: 315_360_000 } })),
        responses: { '200': jsonResponse('Clock after the advance', ref('TestClock')), ...errorResponses },
      },
    },
    '/v1/test/reset': {
      post: {
        summary: "Delete all test-mode data of the shop (keys and settings stay); the test clock returns to real time",
        security: bearer,
        responses: {
          '200': jsonResponse('Reset done', strictObject({ deleted: { type: 'object', additionalProperties: { type: 'integer' } }, clock: ref('TestClock') })),
          ...errorResponses,
        },
      },
    },
    '/v1/test/webhooks/deliveries': {
      get: {
        summary: "The shop's test-mode webhook delivery log: one item per attempt, oldest first",
        security: bearer,
        parameters: [
          { name: 'event_id', in: 'query', required: false, schema: { type: 'string', pattern: '^evt_[0-9A-Z]{26}$' } },
          { name: 'payment_id', in: 'query', required: false, schema: uuid },
        ],
        responses: {
          '200': jsonResponse('Delivery attempts', {
            type: 'object',
            required: ['items'],
            additionalProperties: false,
            properties: { items: { type: 'array', items: ref('WebhookAttempt') } },
          }),
          ...errorResponses,
        },
      },
    },
  },
  schemas: {
    TestClock: {
      type: 'object',
      required: ['now', 'offset_seconds'],
      additionalProperties: false,
      properties: {
        now: timeSchema,
        offset_seconds: { type: 'number' },
        jobs_run: { type: 'integer' },
      },
    },
    TriggerResult: strictObject(
      {
        event: { enum: TRIGGER_EVENT_NAMES },
        event_id: { type: 'string', pattern: '^evt_[0-9A-Z]{26}$', description: 'The id of the triggered event, as its webhook carries it' },
        webhooks: {
          type: 'array',
          description: 'Every webhook event the trigger sent, in order (the triggered one among them)',
          items: strictObject({ id: { type: 'string', pattern: '^evt_[0-9A-Z]{26}$' }, event: { type: 'string' } }),
        },
        payment: ref('Payment'),
        refund: ref('Refund'),
        payout: ref('Payout'),
        subscription: ref('Subscription'),
        token: ref('Token'),
      },
      ['event', 'event_id', 'webhooks'],
    ),
    TokenWithOutcomes: strictObject({ ...tokenProps, outcomes: { type: 'array', items: outcome } }),
  },
};

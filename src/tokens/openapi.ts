import { type OpenApiFragment, jsonResponse, ref, errorResponses, bearer } from '../http/openapi-types';
import { PAYMENT_FAILURE_CODES } from '../payments/failures';
import { PAYMENT_STATUSES } from '../payments/types';
import { OUTCOMES_MAX } from './outcomes';
import { TOKEN_METHODS, TOKEN_STATUSES } from './store';

const uuid = { type: 'string', format: 'uuid' };
const time = { type: 'string', format: 'date-time' };
const timeOrNull = { type: ['string', 'null'], format: 'date-time' };
const amount = { type: 'integer', minimum: 1, maximum: 1_000_000_000_000 };
const idempotencyHeader = { name: 'Idempotency-Key', in: 'header', schema: { type: 'string', maxLength: 64 } };
const idParam = [{ name: 'id', in: 'path', required: true, schema: uuid }];

function obj(properties: Record<string, unknown>, required = Object.keys(properties)): Record<string, unknown> {
  return { type: 'object', required, properties, additionalProperties: false };
}

function jsonBody(schema: unknown, required = true): Record<string, unknown> {
  return { required, content: { 'application/json': { schema } } };
}

/** The register query of tokens and subscriptions: the common parameters and customer_ref. */
export const recurrentListQuery = [
  { name: 'customer_ref', in: 'query', schema: { type: 'string' }, description: "only this customer's objects" },
  { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
  { name: 'cursor', in: 'query', schema: { type: 'string' }, description: 'next_cursor of the previous page' },
  { name: 'status', in: 'query', schema: { type: 'string' }, description: 'comma list of statuses' },
  { name: 'from', in: 'query', schema: { type: 'string', format: 'date' }, description: 'UTC day of created_at, inclusive' },
  { name: 'to', in: 'query', schema: { type: 'string', format: 'date' }, description: 'UTC day of created_at, inclusive' },
];

const tokenProps = {
  id: uuid,
  customer_ref: { type: 'string' },
  customer_email: { type: 'string', description: '"" when none was given' },
  method: { enum: [...TOKEN_METHODS] },
  status: { enum: [...TOKEN_STATUSES] },
  card_brand: { type: 'string', description: 'cards, once bound: mir, visa, mastercard, …; "" otherwise' },
  card_mask: { type: 'string', description: 'cards, once bound: the last 4 digits as "**** 1234"; "" otherwise' },
  last_charged_at: { ...timeOrNull, description: 'the last successful charge; null before one' },
  subscription_id: { type: ['string', 'null'], format: 'uuid', description: 'the subscription that made this token, if any' },
  binding_payment_id: { ...uuid, description: 'the payment whose hosted page binds the token' },
  created_at: time,
  activated_at: timeOrNull,
  cancelled_at: timeOrNull,
};

const outcome = {
  type: 'string',
  pattern: `^(succeed|pending|fail|fail:(${PAYMENT_FAILURE_CODES.join('|')}))$`,
  description: 'succeed; fail (do_not_honor) or fail:<failure code>; pending (the bank never answers and the charge expires)',
};

/** OpenAPI paths and schemas of saved-method tokens and their test outcome queue. */
export const tokensOpenApi: OpenApiFragment = {
  paths: {
    '/v1/public/tokens': {
      post: {
        summary: 'Save a payment method (scope api:recurrent:bind; Idempotency-Key accepted): a pending token and the hosted page that binds it',
        security: bearer,
        parameters: [idempotencyHeader],
        requestBody: jsonBody(
          obj(
            {
              customer_ref: { type: 'string', maxLength: 128 },
              method: { enum: [...TOKEN_METHODS], default: 'cards' },
              amount: { ...amount, description: 'required for sbp and tpay (the first charge binds); ignored for cards (1 RUB verification)' },
              customer_email: { type: 'string', maxLength: 254 },
              return_url: { type: 'string', format: 'uri' },
            },
            ['customer_ref'],
          ),
        ),
        responses: {
          '201': jsonResponse('Created pending', ref('TokenCreated')),
          '200': jsonResponse('Idempotent replay', ref('TokenCreated')),
          ...errorResponses,
        },
      },
      get: {
        summary: 'Tokens of the shop (scope api:recurrent:bind), newest first',
        security: bearer,
        parameters: recurrentListQuery,
        responses: {
          '200': jsonResponse('A page', obj({ items: { type: 'array', items: ref('Token') }, next_cursor: { type: ['string', 'null'] } })),
          ...errorResponses,
        },
      },
    },
    '/v1/public/tokens/{id}': {
      get: {
        summary: 'A token (scope api:recurrent:bind)',
        security: bearer,
        parameters: idParam,
        responses: { '200': jsonResponse('The token', ref('Token')), ...errorResponses },
      },
    },
    '/v1/public/tokens/{id}/cancel': {
      post: {
        summary: 'Cancel a pending or active token (scope api:recurrent:bind); a subscription using it is cancelled too',
        security: bearer,
        parameters: idParam,
        responses: { '200': jsonResponse('Cancelled', obj({ status: { const: 'cancelled' } })), ...errorResponses },
      },
    },
    '/v1/public/tokens/{id}/charge': {
      post: {
        summary: 'Charge an active token (scope api:recurrent:charge; Idempotency-Key accepted): a payment of method recurrent',
        security: bearer,
        parameters: [...idParam, idempotencyHeader],
        requestBody: jsonBody(
          obj({ amount, order_id: { type: 'string', maxLength: 128 }, description: { type: 'string', maxLength: 1000 } }, ['amount']),
        ),
        responses: {
          '201': jsonResponse('The charge payment, its bank session open', ref('TokenCharge')),
          '200': jsonResponse('Idempotent replay, with the current status', ref('TokenCharge')),
          ...errorResponses,
        },
      },
    },
    '/v1/test/tokens/{id}/outcomes': {
      post: {
        summary: "Test keys only: set the queue of outcomes the token's next charges follow, before magic amounts",
        security: bearer,
        parameters: idParam,
        requestBody: jsonBody(obj({ outcomes: { type: 'array', maxItems: OUTCOMES_MAX, items: outcome } })),
        responses: { '200': jsonResponse('The token and its queue', ref('TokenWithOutcomes')), ...errorResponses },
      },
    },
  },
  schemas: {
    Token: obj(tokenProps),
    TokenWithOutcomes: obj({ ...tokenProps, outcomes: { type: 'array', items: outcome } }),
    TokenCreated: obj(
      {
        card: obj({ id: uuid, customer_ref: { type: 'string' }, status: { enum: [...TOKEN_STATUSES] } }),
        pay_url: { type: 'string', format: 'uri', description: 'the hosted page of the binding payment' },
        binding_payment_id: uuid,
        idempotent: { const: true },
      },
      ['card', 'pay_url', 'binding_payment_id'],
    ),
    TokenCharge: obj(
      { id: { ...uuid, description: 'the payment id' }, status: { enum: [...PAYMENT_STATUSES] }, amount, idempotent: { const: true } },
      ['id', 'status', 'amount'],
    ),
  },
};

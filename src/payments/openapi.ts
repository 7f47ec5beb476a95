import { type OpenApiFragment, jsonResponse, ref, errorResponses, bearer } from '../http/openapi-types';
import { PAYMENT_METHODS, PAYMENT_STATUSES } from './types';
import { TTL_MAX_MIN } from './create';
import { PAYMENT_FAILURE_CODES } from './failures';

const uuid = { type: 'string', format: 'uuid' };
const time = { type: 'string', format: 'date-time' };
const timeOrNull = { type: ['string', 'null'], format: 'date-time', description: 'null until known' };
const money = { type: 'integer', minimum: 0, maximum: 1_000_000_000_000 };
const status = { type: 'string', enum: [...PAYMENT_STATUSES] };
const method = { type: 'string', enum: [...PAYMENT_METHODS] };
const stringMap = { type: 'object', additionalProperties: { type: 'string' } };
const refundStatus = { type: 'string', enum: ['pending', 'succeeded', 'failed'] };

function obj(properties: Record<string, unknown>, required = Object.keys(properties)): Record<string, unknown> {
  return { type: 'object', required, properties, additionalProperties: false };
}

const refundBase = {
  id: uuid,
  payment_id: uuid,
  merchant_id: uuid,
  amount: money,
  reason: { type: 'string' },
  status: refundStatus,
  failure_code: { type: 'string', description: 'Unified failure code of a failed refund; "" otherwise' },
  created_at: time,
};

const registerQuery = [
  { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
  { name: 'cursor', in: 'query', schema: { type: 'string' }, description: 'next_cursor of the previous page' },
  { name: 'status', in: 'query', schema: { type: 'string' }, description: 'comma list of statuses' },
  { name: 'from', in: 'query', schema: { type: 'string', format: 'date' }, description: 'UTC day, inclusive' },
  { name: 'to', in: 'query', schema: { type: 'string', format: 'date' }, description: 'UTC day, inclusive' },
];
const idParam = [{ name: 'id', in: 'path', required: true, schema: uuid }];

function envelope(item: string): Record<string, unknown> {
  return obj({ items: { type: 'array', items: ref(item) }, next_cursor: { type: ['string', 'null'] } });
}

function jsonBody(schema: unknown, required = true): Record<string, unknown> {
  return { required, content: { 'application/json': { schema } } };
}

/** OpenAPI paths and schemas of payments, refunds, their registers and the payment simulate helper. */
export const paymentsOpenApi: OpenApiFragment = {
  paths: {
    '/v1/public/payments': {
      post: {
        summary: 'Create a payment (Idempotency-Key accepted)',
        security: bearer,
        parameters: [{ name: 'Idempotency-Key', in: 'header', schema: { type: 'string', maxLength: 64 } }],
        requestBody: jsonBody(ref('PaymentCreateRequest')),
        responses: {
          '201': jsonResponse('Created', ref('PaymentCreated')),
          '200': jsonResponse('Idempotent replay of the first answer', ref('PaymentCreated')),
          ...errorResponses,
        },
      },
      get: {
        summary: 'Payment register (scope api:reports:read), newest first',
        security: bearer,
        parameters: [...registerQuery, { name: 'include_test', in: 'query', schema: { enum: ['0', '1'] }, description: 'live keys: 1 adds test payments' }],
        responses: { '200': jsonResponse('A page', envelope('PaymentRegisterItem')), ...errorResponses },
      },
    },
    '/v1/public/payments/{id}': {
      get: {
        summary: 'A payment with its refunds',
        security: bearer,
        parameters: idParam,
        responses: { '200': jsonResponse('The payment', ref('Payment')), ...errorResponses },
      },
    },
    '/v1/public/payments/{id}/cancel': {
      post: {
        summary: 'Cancel a pending payment (409 invalid_state otherwise)',
        security: bearer,
        parameters: idParam,
        responses: { '200': jsonResponse('Cancelled', obj({ status: { const: 'cancelled' } })), ...errorResponses },
      },
    },
    '/v1/public/payments/{id}/refund': {
      post: {
        summary: 'Refund a succeeded payment in full or in part (Idempotency-Key accepted)',
        security: bearer,
        parameters: [...idParam, { name: 'Idempotency-Key', in: 'header', schema: { type: 'string', maxLength: 64 } }],
        requestBody: jsonBody(
          obj({ amount: { type: 'integer', minimum: 0, maximum: 1_000_000_000_000, description: 'omitted or 0: the whole remainder' }, reason: { type: 'string', maxLength: 500 } }, []),
          false,
        ),
        responses: {
          '201': jsonResponse('Created pending', ref('RefundCreated')),
          '200': jsonResponse('Idempotent replay', ref('RefundCreated')),
          ...errorResponses,
        },
      },
    },
    '/v1/public/refunds': {
      get: {
        summary: 'Refund register (scope api:reports:read), newest first',
        security: bearer,
        parameters: registerQuery,
        responses: { '200': jsonResponse('A page', envelope('RefundRegisterItem')), ...errorResponses },
      },
    },
    '/v1/test/payments/{id}/simulate': {
      post: {
        summary: 'Test keys only: drive a test payment as the buyer and the bank would',
        security: bearer,
        parameters: idParam,
        requestBody: jsonBody(
          obj(
            {
              action: { enum: ['choose_method', 'open_session', 'succeed', 'fail', 'expire'] },
              method: { enum: ['sbp', 'cards', 'tpay', 'bankpay', 'recurrent'] },
              failure_code: { enum: [...PAYMENT_FAILURE_CODES], description: 'for fail; default the planned code, else do_not_honor' },
            },
            ['action'],
          ),
        ),
        responses: { '200': jsonResponse('The payment after the action', ref('Payment')), ...errorResponses },
      },
    },
  },
  schemas: {
    PaymentCreateRequest: obj(
      {
        amount: { type: 'integer', minimum: 1, maximum: 1_000_000_000_000 },
        currency: { const: 'RUB' },
        method,
        order_id: { type: 'string', maxLength: 128, description: 'default ord_<ms timestamp>' },
        customer_id: { type: 'string', maxLength: 128 },
        return_url: { type: 'string', format: 'uri', description: 'https://; test keys may use http://localhost, 127.0.0.1, [::1]' },
        description: { type: 'string', maxLength: 1000, description: 'stored and returned; never sent to the bank' },
        webhook_url: { type: 'string', format: 'uri', description: 'receiver of this payment\'s webhooks; live keys need https://' },
        ttl_minutes: { type: 'integer', minimum: 1, maximum: TTL_MAX_MIN, default: 60 },
        metadata: stringMap,
      },
      ['amount'],
    ),
    PaymentCreated: {
      type: 'object',
      required: ['payment', 'payment_url', 'mode'],
      additionalProperties: false,
      properties: {
        payment: obj({
          id: uuid,
          public_id: { type: 'string', pattern: '^P-[0-9]+$' },
          merchant_id: uuid,
          shop_id: uuid,
          order_id: { type: 'string' },
          amount: money,
          currency: { type: 'string' },
          method,
          status,
          expires_at: time,
          created_at: time,
          metadata: stringMap,
        }),
        payment_url: { type: 'string', format: 'uri' },
        mode: { enum: ['test', 'live'] },
        simulator: obj({
          outcome: { enum: ['succeeded', 'failed', 'requires_action', 'pending'] },
          failure_code: { type: 'string' },
          actions: obj({ pay_page: { type: 'string', format: 'uri' }, simulate: { type: 'string', format: 'uri' }, clock_advance: { type: 'string', format: 'uri' } }),
        }),
        idempotent: { const: true },
        failure_code: { type: 'string' },
        failure_message: { type: 'string' },
      },
    },
    Payment: obj({
      id: uuid,
      public_id: { type: 'string', pattern: '^P-[0-9]+$' },
      merchant_id: uuid,
      shop_id: uuid,
      shop_name: { type: 'string' },
      order_id: { type: 'string' },
      status,
      amount: money,
      amount_refunded: money,
      currency: { type: 'string' },
      method,
      rrn: { type: 'string', description: '"" until the bank confirms' },
      bank_name: { type: 'string', description: '"" until the bank answers' },
      return_url: { type: 'string', description: '"" when none was given' },
      description: { type: 'string', description: 'the merchant\'s text; "" when none' },
      purpose: { type: 'string', description: 'the fixed bank purpose text containing public_id' },
      created_at: time,
      captured_at: timeOrNull,
      finalized_at: timeOrNull,
      expires_at: time,
      processing_until: { type: ['string', 'null'], format: 'date-time', description: 'null until a bank session opens' },
      metadata: stringMap,
      customer_card_brand: { type: 'string' },
      customer_card_mask: { type: 'string' },
      customer_card_holder: { type: 'string' },
      customer_phone_mask: { type: 'string' },
      customer_payer_bank: { type: 'string' },
      refunds: { type: 'array', items: ref('Refund') },
    }),
    Refund: obj({ ...refundBase, completed_at: timeOrNull }),
    RefundCreated: {
      type: 'object',
      required: Object.keys(refundBase),
      additionalProperties: false,
      properties: { ...refundBase, idempotent: { const: true } },
    },
    PaymentRegisterItem: obj({
      id: uuid,
      order_id: { type: 'string' },
      amount: money,
      currency: { type: 'string' },
      method,
      status,
      created_at: time,
      mode: { enum: ['test', 'live'] },
    }),
    RefundRegisterItem: obj({
      id: uuid,
      payment_id: uuid,
      amount: money,
      reason: { type: 'string' },
      status: refundStatus,
      failure_code: refundBase.failure_code,
      created_at: time,
      completed_at: timeOrNull,
    }),
  },
};

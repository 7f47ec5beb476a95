import { type OpenApiFragment, bearer, createdResponses, errorResponses, idempotencyHeader, jsonBody, jsonResponse, ref, registerPage, registerQuery, strictObject, uuidSchema as uuid, timeSchema as time, moneySchema as money, amountSchema, timeOrNullSchema, cancelOp, idParam, readOp } from '../../platform/http/openapi-types';
import { refusal } from '../../platform/http/openapi-shape';
import { PAYMENT_METHODS, PAYMENT_STATUSES } from '../bank-port/payment';
import { TTL_MAX_MIN } from './create';

const timeOrNull = { ...timeOrNullSchema, description: 'null until known' };
const status = { type: 'string', enum: [...PAYMENT_STATUSES] };
const method = { type: 'string', enum: [...PAYMENT_METHODS] };
const stringMap = { type: 'object', additionalProperties: { type: 'string' } };

const mode = { enum: ['test', 'live'] };
/** The payment fields the create answer, the Payment object and the register item all carry. */
const paymentSummary = {
  id: uuid,
  order_id: { type: 'string' },
  amount: money,
  currency: { type: 'string' },
  method,
  status,
  created_at: time,
};
const paymentOwners = {
  public_id: { type: 'string', pattern: '^P-[0-9]+$' },
  merchant_id: uuid,
  shop_id: uuid,
};

const refundBase = {
  id: uuid,
  payment_id: uuid,
  merchant_id: uuid,
  amount: money,
  reason: { type: 'string' },
  status: { type: 'string', enum: ['pending', 'succeeded', 'failed'] },
  failure_code: { type: 'string', description: 'Unified failure code of a failed refund; "" otherwise' },
  created_at: time,
};
/** A refund as the register lists it: no merchant_id. */
const { merchant_id: _merchant, ...refundItem } = refundBase;

/** OpenAPI paths and schemas of payments, refunds, their registers and the payment simulate helper. */
export const paymentsOpenApi: OpenApiFragment = {
  paths: {
    '/v1/public/payments': {
      post: {
        operationId: 'createPayment',
        summary: 'Create a payment (Idempotency-Key accepted)',
        security: bearer,
        parameters: [idempotencyHeader],
        requestBody: jsonBody(ref('PaymentCreateRequest')),
        responses: createdResponses(ref('PaymentCreated'), 'Created'),
      },
      get: readOp('listPayments', 'Payment register (scope api:reports:read), newest first',
        [...registerQuery, { name: 'include_test', in: 'query', schema: { enum: ['0', '1'] }, description: 'live keys: 1 adds test payments' }],
        'A page', registerPage('PaymentRegisterItem')),
    },
    '/v1/public/payments/{id}': {
      get: readOp('getPayment', 'A payment with its refunds', idParam, 'The payment', ref('Payment')),
    },
    '/v1/public/payments/{id}/cancel': {
      post: cancelOp('cancelPayment', 'Cancel a pending payment (409 invalid_state otherwise)', idParam),
    },
    '/v1/public/payments/{id}/refund': {
      post: {
        operationId: 'refundPayment',
        summary: 'Refund a succeeded payment in full or in part (Idempotency-Key accepted)',
        security: bearer,
        parameters: [...idParam, idempotencyHeader],
        requestBody: jsonBody(
          strictObject({ amount: { ...money, description: 'omitted or 0: the whole remainder' }, reason: { type: 'string', maxLength: 500 } }, []),
          false,
        ),
        responses: { ...createdResponses(ref('RefundCreated'), 'Created pending'), '422': refusal('amount_exceeds_refundable: more than the payment has left to refund; insufficient_funds: more than the balance has available') },
      },
    },
    '/v1/public/refunds': {
      get: readOp('listRefunds', 'Refund register (scope api:reports:read), newest first', registerQuery, 'A page', registerPage('RefundRegisterItem')),
    },
  },
  schemas: {
    PaymentCreateRequest: strictObject(
      {
        amount: amountSchema,
        currency: { const: 'RUB' },
        method,
        order_id: { type: 'string', maxLength: 128, description: 'default ord_<ms timestamp>' },
        customer_id: { type: 'string', maxLength: 128 },
        return_url: { type: 'string', format: 'uri', description: 'https://; test keys may use http://localhost, 127.0.0.1, [::1]' },
        description: { type: 'string', maxLength: 1000, description: 'stored and returned; never sent to the bank' },
        webhook_url: { type: 'string', format: 'uri', description: 'receiver of this payment\'s webhooks; live keys need https://; an IP address must be public (test keys: loopback too) unless the operator allows its range' },
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
        payment: strictObject({ ...paymentSummary, ...paymentOwners, expires_at: time, metadata: stringMap }),
        payment_url: { type: 'string', format: 'uri' },
        mode,
        simulator: strictObject({
          outcome: { enum: ['succeeded', 'failed', 'requires_action', 'pending'] },
          failure_code: { type: 'string' },
          actions: strictObject({ pay_page: { type: 'string', format: 'uri' }, simulate: { type: 'string', format: 'uri' }, clock_advance: { type: 'string', format: 'uri' } }),
        }),
        idempotent: { const: true },
        failure_code: { type: 'string' },
        failure_message: { type: 'string' },
      },
    },
    Payment: strictObject({
      ...paymentSummary,
      ...paymentOwners,
      shop_name: { type: 'string' },
      amount_refunded: money,
      rrn: { type: 'string', description: '"" until the bank confirms' },
      bank_name: { type: 'string', description: '"" until the bank answers' },
      return_url: { type: 'string', description: '"" when none was given' },
      description: { type: 'string', description: 'the merchant\'s text; "" when none' },
      purpose: { type: 'string', description: 'the fixed bank purpose text containing public_id' },
      captured_at: timeOrNull,
      finalized_at: timeOrNull,
      expires_at: time,
      processing_until: { ...timeOrNullSchema, description: 'null until a bank session opens' },
      metadata: stringMap,
      customer_card_brand: { type: 'string' },
      customer_card_mask: { type: 'string' },
      customer_card_holder: { type: 'string' },
      customer_phone_mask: { type: 'string' },
      customer_payer_bank: { type: 'string' },
      refunds: { type: 'array', items: ref('Refund') },
    }),
    Refund: strictObject({ ...refundBase, completed_at: timeOrNull }),
    RefundCreated: {
      type: 'object',
      required: Object.keys(refundBase),
      additionalProperties: false,
      properties: { ...refundBase, idempotent: { const: true } },
    },
    PaymentRegisterItem: strictObject({ ...paymentSummary, mode }),
    RefundRegisterItem: strictObject({ ...refundItem, completed_at: timeOrNull }),
  },
};

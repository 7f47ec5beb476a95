import { type OpenApiFragment, bearer, createdResponses, idempotencyHeader, jsonBody, ref, registerQuery, strictObject, amountSchema as amount, uuidSchema as uuid, timeSchema as time, timeOrNullSchema as timeOrNull, idParam, readOp } from '../../platform/http/openapi-types';
import { refusal } from '../../platform/http/openapi-shape';
import { PAYOUT_METHODS } from './fields';
import { BATCH_MAX_ITEMS } from './batch';

const fullName = { type: 'string', minLength: 1, maxLength: 200 };
const sbpFields = { phone: { type: 'string', pattern: '^\\+7[0-9]{10}$' }, bank_id: { type: 'string', pattern: '^[0-9]{12}$' }, full_name: fullName };
const cardFields = { card_pan: { type: 'string', pattern: '^[0-9]{16,18}$', description: 'Never stored or logged; only the last 4 digits are kept' }, full_name: fullName };
const accountFields = {
  account_number: { type: 'string', pattern: '^[0-9]{20}$' },
  bik: { type: 'string', pattern: '^[0-9]{9}$' },
  inn: { type: 'string', pattern: '^([0-9]{10}|[0-9]{12})$' },
  full_name: fullName,
};

function payoutBody(method: string, fields: Record<string, unknown>, required: string[], withMethod: boolean): Record<string, unknown> {
  const properties = { ...(withMethod ? { method: { const: method } } : {}), amount, currency: { const: 'RUB' }, ...fields };
  return strictObject(properties, [...(withMethod ? ['method'] : []), 'amount', ...required]);
}

const bodies = (withMethod: boolean) => [
  payoutBody('payouts_sbp', sbpFields, ['phone', 'bank_id', 'full_name'], withMethod),
  payoutBody('payouts_card', cardFields, ['card_pan'], withMethod),
  payoutBody('payouts_account', accountFields, ['account_number', 'bik', 'full_name'], withMethod),
];

const registerParams = [
  ...registerQuery.map((q) => (q.name === 'status' ? { ...q, description: 'comma list of pending, succeeded, failed' } : q)),
  { name: 'method', in: 'query', schema: { enum: PAYOUT_METHODS } },
];

const status = { enum: ['pending', 'succeeded', 'failed'] };
const rub = { const: 'RUB' };
const mode = { enum: ['test', 'live'] };
const method = { enum: PAYOUT_METHODS };

/** The Payout object of GET /v1/public/payouts/{id} and payout webhooks. */
const payout = {
  id: uuid, merchant_id: uuid, shop_id: uuid, amount, currency: rub, method, status,
  recipient: {
    type: 'object',
    description: 'sbp: phone, bank_id, full_name; account: account_number, bik, inn (when given), full_name; card: empty',
    additionalProperties: false,
    properties: { ...sbpFields, ...accountFields },
  },
  recipient_card_mask: { type: 'string', pattern: '^[0-9]{4}$', description: 'Card payouts only: the last 4 digits' },
  bank_ref: { type: 'string', description: 'Reference at the provider' },
  fail_reason: { type: 'string', description: 'Unified failure code when failed; empty otherwise' },
  created_at: time, completed_at: timeOrNull,
  mode: { ...mode, description: 'The mode of the key that created it (beyond the specification: webhook receivers get both modes)' },
};

/** OpenAPI of payouts: create, batch, read, register, and the test helper. */
export const payoutsOpenApi: OpenApiFragment = {
  paths: {
    '/v1/public/payouts': {
      post: {
        operationId: 'createPayout',
        summary: 'Create a payout (scope of the method: api:payouts:sbp, api:payouts:card or api:payouts:account)',
        description:
          'A bank_id that is not 12 digits is 400 before any other check. Live mode: the payout goes to the shop\'s payout provider (YooKassa Payouts; the response\'s bank names it, bank_ref is the provider\'s payout id once known); 403 payouts_not_configured (nothing created) while the shop has none (T-Bank acquiring has no payout connector); 403 payout_method_not_supported for payouts_account (no live provider sends it). The amount must not exceed the shop\'s available (422 insufficient_funds). ' +
          'Test mode: amount ending in 01 fails do_not_honor, 02 recipient_not_in_sbp, 03 is 502 router_error (nothing created); ' +
          'an SBP bank_id absent from the directory fails bank_unknown at once; others succeed after --sim-delay on the shop clock.',
        security: bearer, parameters: [idempotencyHeader],
        requestBody: jsonBody({ oneOf: bodies(true) }),
        responses: { ...createdResponses(ref('PayoutCreated'), 'Payout created'), '422': refusal('insufficient_funds: the amount exceeds the available balance') },
      },
      get: readOp('listPayouts', 'The payout register, newest first (scope api:reports:read)', registerParams, 'One page', ref('PayoutRegisterPage')),
    },
    '/v1/public/payouts/batch': {
      post: {
        operationId: 'createPayoutBatch',
        summary: `Create up to ${BATCH_MAX_ITEMS} payouts of one method; each item is created, failed or duplicate on its own`,
        description: 'Live mode: each item goes to the shop\'s payout provider; 403 payouts_not_configured for the whole batch (nothing created) while the shop has none, 403 payout_method_not_supported for a payouts_account batch.',
        security: bearer, parameters: [idempotencyHeader],
        requestBody: jsonBody(
          strictObject({ method: { enum: PAYOUT_METHODS }, items: { type: 'array', minItems: 1, maxItems: BATCH_MAX_ITEMS, items: { oneOf: bodies(false) } } }),
        ),
        responses: createdResponses(ref('PayoutBatch'), 'Batch processed'),
      },
    },
    '/v1/public/payouts/{id}': {
      get: readOp('getPayout', 'One payout (any payout scope, or api:reports:read)', idParam, 'Payout', ref('Payout')),
    },
  },
  schemas: {
    // Every field is there but recipient_card_mask, which card payouts alone carry.
    Payout: strictObject(payout, Object.keys(payout).filter((k) => k !== 'recipient_card_mask')),
    PayoutCreated: strictObject({
      payout: ref('Payout'), mode,
      bank: { type: 'string', description: 'Recipient bank name from the SBP directory, when known' },
      bank_ref: { type: 'string' },
      failure_reason: { type: 'string', description: 'On refusal: the unified failure code' },
      idempotent: { const: true },
      simulator: strictObject({
        outcome: { enum: ['succeeded', 'failed'] },
        failure_code: { type: 'string', description: 'Planned failure code; empty when the payout is planned to succeed.' },
        actions: strictObject({ simulate: { type: 'string', format: 'uri' }, status: { type: 'string', format: 'uri' } }),
      }),
    }, ['payout', 'mode', 'bank_ref']),
    PayoutBatch: strictObject({
      mode,
      created: { type: 'integer', minimum: 0 },
      failed: { type: 'integer', minimum: 0, description: 'Failed and duplicate items; created + failed = total' },
      total: { type: 'integer', minimum: 1 }, idempotent: { const: true },
      results: { type: 'array', items: strictObject({
        index: { type: 'integer', minimum: 0 },
        status: { enum: ['created', 'failed', 'duplicate'] },
        payout_id: uuid, method,
        amount: { type: ['integer', 'null'], description: 'null when the item has no integer amount' },
        code: { type: 'string', description: 'bad_request, insufficient_funds, router_error or duplicate' },
        error: { type: 'string' },
      }, ['index', 'status', 'method', 'amount']) },
    }, ['mode', 'created', 'failed', 'total', 'results']),
    PayoutRegisterPage: strictObject({
      items: {
        type: 'array',
        items: strictObject({
          id: uuid, shop_id: uuid, amount, currency: rub, method, status, bank_ref: { type: 'string' },
          created_at: time,
        }),
      },
      next_cursor: { type: ['string', 'null'] },
    }),
  },
};

import { type OpenApiFragment, jsonResponse, ref, errorResponses, bearer, strictObject, uuidSchema } from '../../platform/http/openapi-types';

/** OpenAPI of the balance. */
export const ledgerOpenApi: OpenApiFragment = {
  paths: {
    '/v1/public/balance': {
      get: {
        operationId: 'getBalance',
        summary: "The merchant's balance in the key's mode (test and live are separate books)",
        description:
          'Needs scope api:balance:read. balance = settled money; available = balance minus reserves for pending payouts and refunds. ' +
          "A payout draws on the paying shop's own available, shown per shop.",
        security: bearer,
        responses: { '200': jsonResponse('Balance', ref('Balance')), ...errorResponses },
      },
    },
  },
  schemas: {
    Balance: strictObject({
      balance: { type: 'integer', description: 'Settled money over all shops, minor units' },
      available: { type: 'integer', description: 'balance minus reserves, over all shops' },
      currency: { const: 'RUB' },
      shops: {
        type: 'array',
        items: strictObject({
          shop_id: uuidSchema, shop_name: { type: 'string' }, balance: { type: 'integer' },
          available: { type: 'integer' },
        }),
      },
    }),
  },
};

import { type OpenApiFragment, jsonResponse, ref, errorResponses, bearer } from '../../platform/http/openapi-types';

/** OpenAPI of the bank directory. */
export const banksOpenApi: OpenApiFragment = {
  paths: {
    '/v1/public/banks/sbp': {
      get: {
        operationId: 'listSbpBanks',
        summary: 'Participants of the Faster Payments System (SBP), sorted by name in Russian collation',
        description: 'For user interfaces, not an allow-list: a payout accepts any 12-digit member id. Any valid key; no scope.',
        security: bearer,
        responses: {
          '200': jsonResponse('The directory', {
            type: 'object',
            required: ['items'],
            additionalProperties: false,
            properties: { items: { type: 'array', items: ref('SbpBank') } },
          }),
          ...errorResponses,
        },
      },
    },
  },
  schemas: {
    SbpBank: {
      type: 'object',
      required: ['member_id', 'name', 'name_en'],
      additionalProperties: false,
      properties: {
        member_id: { type: 'string', pattern: '^[0-9]{12}$' },
        name: { type: 'string' },
        name_en: { type: 'string' },
      },
    },
  },
};

import { type OpenApiFragment, jsonResponse, ref, errorResponses, bearer, strictObject } from '../../platform/http/openapi-types';

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
          '200': jsonResponse('The directory', strictObject({ items: { type: 'array', items: ref('SbpBank') } })),
          ...errorResponses,
        },
      },
    },
  },
  schemas: {
    SbpBank: strictObject({ member_id: { type: 'string', pattern: '^[0-9]{12}$' }, name: { type: 'string' }, name_en: { type: 'string' } }),
  },
};

import { type OpenApiFragment, errorResponses, uuidSchema as uuid } from '../platform/http/openapi-types';

/** OpenAPI path of bank notifications (called by acquirers, not by merchants). */
export const bankPortOpenApi: OpenApiFragment = {
  paths: {
    '/v1/callbacks/{provider}/{shop_id}': {
      post: {
        summary:
          "A live acquirer's notification about the shop's operations (its NotificationURL). The provider checks the notification's signature: a forged one is answered 403 and changes nothing",
        parameters: [
          { name: 'provider', in: 'path', required: true, schema: { type: 'string' }, description: 'the acquirer, as the shop\'s acquirer names it (tbank)' },
          { name: 'shop_id', in: 'path', required: true, schema: uuid },
        ],
        requestBody: { required: true, content: { 'application/json': { schema: { type: 'object' } } } },
        responses: {
          '200': { description: 'Taken: the body the acquirer expects back (T-Bank: OK)', content: { 'text/plain': { schema: { type: 'string' } } } },
          ...errorResponses,
        },
      },
    },
  },
};

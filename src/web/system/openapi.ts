import { type OpenApiFragment, jsonResponse, errorResponses } from '../../platform/http/openapi-types';

/** OpenAPI paths of the system routes: health, the document itself and metrics. */
export const systemOpenApi: OpenApiFragment = {
  paths: {
    '/': {
      get: {
        operationId: 'getRoot',
        summary: 'Where things are: a browser (Accept: text/html) is sent to the cabinet sign-in; any other client gets the addresses of the API and this document',
        security: [],
        responses: {
          '200': jsonResponse('The addresses of the API, this document and the cabinet', {
            type: 'object',
            required: ['service', 'version', 'api', 'openapi', 'cabinet'],
            properties: {
              service: { const: 'kopek' },
              version: { type: 'string' },
              api: { type: 'string', format: 'uri', description: 'Base address of the public API' },
              openapi: { type: 'string', format: 'uri', description: 'This OpenAPI document' },
              cabinet: { type: 'string', format: 'uri', description: "The merchant cabinet's sign-in page" },
            },
            additionalProperties: false,
          }),
          '303': { description: 'A browser: on to the cabinet sign-in (Location: /cabinet/login)' },
          ...errorResponses,
        },
      },
    },
    '/healthz': {
      get: {
        operationId: 'getHealth',
        summary: "Liveness and version; 503 while the storage refuses writes (disk full, I/O error), until a probe write succeeds",
        security: [],
        responses: {
          '200': jsonResponse('Healthy', { type: 'object', required: ['status', 'version'], properties: { status: { const: 'ok' }, version: { type: 'string' } }, additionalProperties: false }),
          ...errorResponses,
        },
      },
    },
    '/v1/openapi.json': {
      get: { operationId: 'getOpenApiDocument', summary: 'This document', security: [], responses: { '200': jsonResponse('OpenAPI 3.1 document', { type: 'object' }) } },
    },
    '/metrics': {
      get: {
        operationId: 'getMetrics',
        summary: 'Prometheus metrics: requests by route and status, latency histogram, jobs by kind, webhook deliveries by result, SSE clients',
        security: [],
        responses: { '200': { description: 'Prometheus text exposition format 0.0.4', content: { 'text/plain': { schema: { type: 'string' } } } }, ...errorResponses },
      },
    },
  },
  schemas: {
    Error: {
      type: 'object',
      required: ['error'],
      additionalProperties: false,
      properties: {
        error: { type: 'object', required: ['code', 'message'], additionalProperties: false, properties: { code: { type: 'string', pattern: '^[a-z_]+$' }, message: { type: 'string' }, param: { type: 'string' } } },
      },
    },
  },
};

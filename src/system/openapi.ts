import { type OpenApiFragment, jsonResponse, ref, errorResponses, bearer, timeSchema } from '../http/openapi-types';

/** OpenAPI paths of the system routes: health, the document itself, the test clock and reset. */
export const systemOpenApi: OpenApiFragment = {
  paths: {
    '/healthz': {
      get: {
        operationId: 'getHealth',
        summary: 'Liveness and version',
        security: [],
        responses: {
          '200': jsonResponse('Healthy', {
            type: 'object',
            required: ['status', 'version'],
            properties: { status: { const: 'ok' }, version: { type: 'string' } },
            additionalProperties: false,
          }),
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
        responses: {
          '200': { description: 'Prometheus text exposition format 0.0.4', content: { 'text/plain': { schema: { type: 'string' } } } },
          ...errorResponses,
        },
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
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['seconds'],
                properties: { seconds: { type: 'integer', minimum: 0, maximum: 315_360_000 } },
                additionalProperties: false,
              },
            },
          },
        },
        responses: { '200': jsonResponse('Clock after the advance', ref('TestClock')), ...errorResponses },
      },
    },
    '/v1/test/reset': {
      post: {
        summary: "Delete all test-mode data of the shop (keys and settings stay); the test clock returns to real time",
        security: bearer,
        responses: {
          '200': jsonResponse('Reset done', {
            type: 'object',
            required: ['deleted', 'clock'],
            properties: { deleted: { type: 'object', additionalProperties: { type: 'integer' } }, clock: ref('TestClock') },
            additionalProperties: false,
          }),
          ...errorResponses,
        },
      },
    },
  },
  schemas: {
    Error: {
      type: 'object',
      required: ['error'],
      additionalProperties: false,
      properties: {
        error: {
          type: 'object',
          required: ['code', 'message'],
          additionalProperties: false,
          properties: { code: { type: 'string', pattern: '^[a-z_]+$' }, message: { type: 'string' }, param: { type: 'string' } },
        },
      },
    },
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
  },
};

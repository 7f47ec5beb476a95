import { type OpenApiFragment, errorResponses, bearer, timeOrNullSchema as timeOrNull } from '../http/openapi-types';

/** OpenAPI path of the event stream, and the schema of a webhook attempt (the test delivery log shows them). */
export const webhooksOpenApi: OpenApiFragment = {
  paths: {
    '/v1/public/events': {
      get: {
        summary: 'Server-Sent Events stream of the key\'s shop and mode; resumes after Last-Event-ID',
        security: bearer,
        parameters: [{ name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string', pattern: '^\\d+$' } }],
        responses: {
          '200': {
            description:
              'text/event-stream: `: connected`, then per event `id: <seq>`, `event: <kind>`, `data: {"kind","payload","at"}`; `: ping` comments keep it alive',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
          ...errorResponses,
        },
      },
    },
  },
  schemas: {
    WebhookAttempt: {
      type: 'object',
      additionalProperties: false,
      required: ['event_id', 'event', 'url', 'attempt', 'status', 'response_code', 'error', 'latency_ms', 'attempted_at', 'next_attempt_at'],
      properties: {
        event_id: { type: 'string', pattern: '^evt_[0-9A-Z]{26}$' },
        event: { type: 'string' },
        url: { type: 'string', format: 'uri' },
        attempt: { type: 'integer', minimum: 1, description: '1-based, per receiver' },
        status: { enum: ['succeeded', 'failed', 'pending'], description: '`pending`: the attempt this delivery waits for' },
        response_code: { type: ['integer', 'null'], description: 'null when no answer' },
        error: { type: ['string', 'null'] },
        latency_ms: { type: ['integer', 'null'] },
        attempted_at: { ...timeOrNull, description: "On the shop's test clock; null for the pending item" },
        next_attempt_at: { ...timeOrNull, description: 'The retry this attempt scheduled (or, when pending, when it is due); null when final' },
      },
    },
  },
};

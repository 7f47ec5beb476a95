import { STREAM_TOKEN_TTL_S } from '../../platform/auth/stream-token';
import { type OpenApiFragment, jsonResponse, errorResponses, bearer, timeOrNullSchema as timeOrNull } from '../../platform/http/openapi-types';

/** OpenAPI path of the event stream, and the schema of a webhook attempt (the test delivery log shows them). */
export const webhooksOpenApi: OpenApiFragment = {
  paths: {
    '/v1/public/events/token': {
      post: {
        operationId: 'createStreamToken',
        summary: `A short-lived stream token of this key: opens GET /v1/public/events?token=… for ${STREAM_TOKEN_TTL_S / 60} minutes, and nothing else`,
        security: bearer,
        responses: {
          '201': jsonResponse(
            'The token, when it stops opening the stream, and the stream URL holding it',
            {
              type: 'object',
              required: ['token', 'expires_at', 'stream_url'],
              additionalProperties: false,
              properties: { token: { type: 'string', pattern: '^est_' }, expires_at: { type: 'string', format: 'date-time' }, stream_url: { type: 'string', format: 'uri' } },
            },
          ),
          ...errorResponses,
        },
      },
    },
    '/v1/public/events': {
      get: {
        operationId: 'streamEvents',
        summary: 'Server-Sent Events stream of the key\'s shop and mode; resumes after Last-Event-ID',
        security: [...bearer, { streamToken: [] }],
        parameters: [
          {
            name: 'token',
            in: 'query',
            required: false,
            schema: { type: 'string', pattern: '^est_' },
            description: 'A stream token instead of the key, for a browser EventSource (which cannot send headers); answers then carry Access-Control-Allow-Origin: *',
          },
          {
            name: 'Last-Event-ID',
            in: 'header',
            required: false,
            schema: { type: 'string', pattern: '^\\d+$' },
            description: 'The `id:` of the last event received: the stream first replays every later event; 0 replays all. EventSource sends it on reconnect.',
          },
          {
            name: 'format',
            in: 'query',
            required: false,
            schema: { enum: ['events', 'webhook'], default: 'events' },
            description:
              '`events`: every event as `{"kind","payload","at"}`. `webhook`: only the events that send a webhook, each with `event: <webhook event>` and as `data` the exact body a delivery POSTs (`{"id","event","created_at","data"}`), byte for byte, for a tool that forwards them (`kopek listen`)',
          },
        ],
        responses: {
          '200': {
            description:
              'text/event-stream: `: connected`, then per event `id: <seq>`, `event: <kind>` (or the webhook event), `data: …` (see `format`); `: ping` comments keep it alive',
            headers: {
              'X-Kopek-Database-Id': {
                description:
                  'The database this server runs on (random, made with it). A client resuming with Last-Event-ID that finds another id is talking to another database (a restarted `--ephemeral` server counts ids from 1 again): the ids it holds mean nothing there',
                schema: { type: 'string', pattern: '^[0-9a-f]{32}$' },
              },
              'X-Kopek-Database-Created': { description: 'When that database was made', schema: { type: 'string', format: 'date-time' } },
              'X-Kopek-Stream-After': {
                description: 'The sequence number this stream starts after: Last-Event-ID as resumed, else the last event issued when it opened',
                schema: { type: 'string', pattern: '^\\d+$' },
              },
            },
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

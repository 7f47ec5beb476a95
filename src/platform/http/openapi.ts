import type { OpenApiFragment } from './openapi-types';
import { shapeOperations } from './openapi-shape';

/** The OpenAPI 3.1 document merged from `fragments` (each domain's paths and schemas). */
export function openApiDocument(fragments: readonly OpenApiFragment[], version: string, serverUrl: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const schemas: Record<string, unknown> = {};
  for (const f of fragments) {
    for (const [p, ops] of Object.entries(f.paths)) paths[p] = { ...paths[p], ...ops };
    for (const [name, schema] of Object.entries(f.schemas ?? {})) {
      if (name in schemas) throw new Error(`cannot build OpenAPI document: schema "${name}" defined twice`);
      schemas[name] = schema;
    }
  }
  const security = [{ bearerKey: [] }];
  shapeOperations(paths, schemas, security);
  return {
    openapi: '3.1.0',
    info: {
      title: 'kopek payment API',
      version,
      description:
        'Payments with a hosted payment page, refunds, subscriptions, saved-method tokens, payouts, balance, registers, ' +
        'bank directory, signed webhooks and a Server-Sent Events stream. sk_test_ keys drive the built-in bank simulator.',
    },
    servers: [{ url: serverUrl }],
    security,
    paths,
    components: {
      securitySchemes: {
        bearerKey: {
          type: 'http',
          scheme: 'bearer',
          description:
            'sk_test_… or sk_live_… API key. A live key answers 403 live_mode_not_activated until the merchant\'s live mode is on, and 403 acquirer_not_configured while its shop has neither an acquirer nor a payout provider (a shop with only a payout provider gets it for payments, refunds, tokens and subscriptions)',
        },
        cabinetSession: { type: 'apiKey', in: 'cookie', name: 'kopek_cabinet', description: 'A merchant cabinet session (docs/cabinet.md); its POSTs also need the CSRF token' },
        streamToken: { type: 'apiKey', in: 'query', name: 'token', description: 'est_… stream token from POST /v1/public/events/token (GET /v1/public/events only)' },
      },
      schemas,
    },
  };
}

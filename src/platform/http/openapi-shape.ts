import { jsonResponse, ref } from './openapi-types';
import { BODY_METHODS } from './body';

/**
 * Rules every operation of the OpenAPI document follows so that generated clients work on the first try:
 * - every operation has an operationId (its own, or one made from its method and path);
 * - the 4xx answers it can give are declared, each with the Error body, so a client's error type is exact;
 * - request bodies are inline, so a property with a `default` stays optional (openapi-typescript makes a
 *   defaulted property of a component schema required).
 */

/** What each 4xx status means, as the Error body's `code` says it. */
const MEANING: Record<string, string> = {
  '400': 'bad_request: a field, parameter, header or the body was refused; `param` names it',
  '401': 'unauthorized (no key, an unknown or revoked key), signature_required or invalid_signature',
  '403': 'scope_required, ip_not_allowed or live_mode_not_activated',
  '404': 'not_found: no such object for this key (another shop\'s objects are not found either)',
  '409': 'invalid_state: the object\'s status refuses the action; idempotent_conflict: the Idempotency-Key was used with another body',
  '413': 'payload_too_large: the body exceeds the server\'s limit',
  '415': 'unsupported_media_type: the body is not application/json in UTF-8',
  '429': 'rate_limited: too many requests for this key; Retry-After says when to retry',
};

/** A refusal an operation declares itself (what the shape rules cannot know): the Error body under `description`. */
export function refusal(description: string): Record<string, unknown> {
  return jsonResponse(description, ref('Error'));
}

type Operation = Record<string, unknown> & {
  operationId?: string;
  parameters?: Array<{ name: string; in: string }>;
  requestBody?: { content?: Record<string, { schema?: unknown }> };
  responses?: Record<string, unknown>;
  security?: unknown[];
};

/** The 4xx statuses an operation can answer, from its method, path, parameters and security. */
export function clientErrorStatuses(method: string, path: string, op: Operation, rootSecurity: unknown[]): string[] {
  const out = new Set<string>();
  const secured = (op.security ?? rootSecurity).length > 0;
  if (BODY_METHODS.has(method.toUpperCase())) ['400', '413', '415'].forEach((s) => out.add(s));
  // Any request: a query or path parameter that is not well-formed text, or a body on a method that takes none.
  out.add('400');
  if (secured) ['401', '403', '429'].forEach((s) => out.add(s));
  // A path id may name nothing the key can see; test helpers are not found for a live key.
  if (path.includes('{') || path.startsWith('/v1/test/')) out.add('404');
  if (op.parameters?.some((p) => p.name === 'Idempotency-Key')) out.add('409');
  // An action on one object (POST below /{id}/) can find it in a status that refuses the action.
  if (method === 'post' && /\{[^}]+\}\/[^/]+$/.test(path) && secured) out.add('409');
  return [...out].sort();
}

/** `GET /v1/public/payments/{id}/refund` → `getPaymentsIdRefund`; test helpers keep their `test` prefix. */
export function derivedOperationId(method: string, path: string): string {
  const words = path
    .replace(/^\/v1\/public\//, '/')
    .replace(/^\/v1\//, '/')
    .split(/[/._-]+/)
    .map((w) => w.replace(/[{}]/g, ''))
    .filter(Boolean);
  return method + words.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('');
}

/** Apply the rules above to every operation of `paths` (in place); throws when two operations share an id. */
export function shapeOperations(paths: Record<string, Record<string, unknown>>, schemas: Record<string, unknown>, rootSecurity: unknown[]): void {
  const seen = new Map<string, string>();
  for (const [path, ops] of Object.entries(paths)) {
    for (const [method, raw] of Object.entries(ops)) {
      const op = { ...(raw as Operation) };
      op.operationId ??= derivedOperationId(method, path);
      const where = `${method.toUpperCase()} ${path}`;
      const other = seen.get(op.operationId);
      if (other) throw new Error(`cannot build OpenAPI document: operationId "${op.operationId}" of ${where} is also ${other}'s`);
      seen.set(op.operationId, where);
      const responses: Record<string, unknown> = { ...(op.responses ?? {}) };
      for (const status of clientErrorStatuses(method, path, op, rootSecurity)) {
        responses[status] ??= jsonResponse(MEANING[status], ref('Error'));
      }
      // Answers in status order, `default` last, as readers expect.
      op.responses = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => (a === 'default' ? 1 : b === 'default' ? -1 : a.localeCompare(b))));
      if (op.requestBody) op.requestBody = inlineBody(op.requestBody, schemas);
      ops[method] = op;
    }
  }
}

/** A request body whose JSON schema is a `$ref` to a component, with the component's schema written in. */
function inlineBody(body: NonNullable<Operation['requestBody']>, schemas: Record<string, unknown>): Operation['requestBody'] {
  const json = body.content?.['application/json'];
  const target = (json?.schema as { $ref?: string } | undefined)?.$ref;
  const name = target?.startsWith('#/components/schemas/') ? target.slice('#/components/schemas/'.length) : undefined;
  if (!json || !name || !(name in schemas)) return body;
  return { ...body, content: { ...body.content, 'application/json': { ...json, schema: schemas[name] } } };
}

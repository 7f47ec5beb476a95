import { MAX_AMOUNT } from './body';

/** A part of the OpenAPI document that one domain contributes: its paths and its component schemas. */
export interface OpenApiFragment {
  paths: Record<string, Record<string, unknown>>;
  schemas?: Record<string, unknown>;
}

/** A JSON response of a schema (by `$ref` name or inline), for fragments to use. */
export function jsonResponse(description: string, schema: unknown): Record<string, unknown> {
  return { description, content: { 'application/json': { schema } } };
}

export function ref(name: string): { $ref: string } {
  return { $ref: `#/components/schemas/${name}` };
}

/** An id of the API (UUIDv4). */
export const uuidSchema = { type: 'string', format: 'uuid' };
/** A time of the API (RFC 3339, UTC, milliseconds). */
export const timeSchema = { type: 'string', format: 'date-time' };
/** A time not known yet. */
export const timeOrNullSchema = { type: ['string', 'null'], format: 'date-time' };
/** An amount to pay or pay out, in minor units. */
export const amountSchema = { type: 'integer', minimum: 1, maximum: MAX_AMOUNT };
/** A sum of money that may be zero (a balance, what was refunded), in minor units. */
export const moneySchema = { type: 'integer', minimum: 0, maximum: MAX_AMOUNT };

/** The error response every operation may answer. */
export const errorResponses = { default: jsonResponse('Error', ref('Error')) };

export const bearer = [{ bearerKey: [] }];

/** An object schema that refuses unknown properties, as every request and response body of the API does. */
export function strictObject(properties: Record<string, unknown>, required = Object.keys(properties)): Record<string, unknown> {
  return { type: 'object', required, properties, additionalProperties: false };
}

export function jsonBody(schema: unknown, required = true): Record<string, unknown> {
  return { required, content: { 'application/json': { schema } } };
}

/** The Idempotency-Key header every create accepts. */
export const idempotencyHeader = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  schema: { type: 'string', maxLength: 64 },
  description: 'Replays answer 200 with the first body and "idempotent": true; the same key with another body is 409.',
};

/** The answers of an idempotent create: 201 with the new object, 200 with a replay of it, or an error. */
export function createdResponses(schema: unknown, created: string, replay = 'Idempotent replay'): Record<string, unknown> {
  return { '201': jsonResponse(created, schema), '200': jsonResponse(replay, schema), ...errorResponses };
}

/** The query parameters every register shares (src/money/registers/query.ts); registers add their own after them. */
export const registerQuery = [
  { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
  { name: 'cursor', in: 'query', schema: { type: 'string' }, description: 'next_cursor of the previous page' },
  { name: 'status', in: 'query', schema: { type: 'string' }, description: 'comma list of statuses' },
  { name: 'from', in: 'query', schema: { type: 'string', format: 'date' }, description: 'UTC day of created_at, inclusive' },
  { name: 'to', in: 'query', schema: { type: 'string', format: 'date' }, description: 'UTC day of created_at, inclusive' },
];

/** The register envelope: a page of `item` (a component schema name) and the cursor of the next one. */
export function registerPage(item: string): Record<string, unknown> {
  return strictObject({ items: { type: 'array', items: ref(item) }, next_cursor: { type: ['string', 'null'] } });
}

/** The path parameter of an object read by its id. */
export const idParam = [{ name: 'id', in: 'path', required: true, schema: uuidSchema }];

/** A GET of one object or of a register: its 200 answer (`answer` describes it), or an Error. */
export function readOp(operationId: string, summary: string, parameters: unknown[], answer: string, body: unknown) {
  const responses = { '200': jsonResponse(answer, body), ...errorResponses };
  return { operationId, summary, security: bearer, parameters, responses };
}

/** A POST …/cancel of a payment, token or subscription, `body` its requestBody if any; 200 and the new status. */
export function cancelOp(operationId: string, summary: string, parameters: unknown[], body = {}) {
  const cancelled = jsonResponse('Cancelled', strictObject({ status: { const: 'cancelled' } }));
  const responses = { '200': cancelled, ...errorResponses };
  return { operationId, summary, security: bearer, parameters, ...body, responses };
}

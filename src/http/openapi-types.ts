/** A part of the OpenAPI document that one domain contributes: its paths and its component schemas. */
export interface OpenApiFragment {
  paths: Record<string, Record<string, unknown>>;
  schemas?: Record<string, unknown>;
}

/** A JSON response of a schema (by `$ref` name or inline), for fragments to use. */
export function jsonResponse(description: string, schema: unknown): Record<string, unknown> {
  return { description, content: { 'application/json': { schema } } };
}

/** `$ref` to a component schema. */
export function ref(name: string): { $ref: string } {
  return { $ref: `#/components/schemas/${name}` };
}

/** The error response every operation may answer. */
export const errorResponses = { default: jsonResponse('Error', ref('Error')) };

/** Bearer key security requirement. */
export const bearer = [{ bearerKey: [] }];

import Ajv2020 from 'ajv/dist/2020';
import { apiDocument } from '../../src/openapi';

type Doc = { paths: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, { schema: unknown }> }> }>>; components: { schemas: Record<string, unknown> } };

let compiled: { doc: Doc; ajv: Ajv2020; matchers: Array<{ template: string; re: RegExp }> } | null = null;

function load() {
  if (compiled) return compiled;
  const doc = apiDocument('test', 'http://localhost') as unknown as Doc;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addFormat('date-time', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
  ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
  ajv.addFormat('uri', (s: string) => {
    try {
      new URL(s);
      return true;
    } catch {
      return false;
    }
  });
  ajv.addSchema({ $id: 'kopek', components: doc.components }, 'kopek');
  const matchers = Object.keys(doc.paths).map((template) => ({
    template,
    re: new RegExp('^' + template.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+') + '$'),
  }));
  // Static templates win over templated ones, as in the router.
  matchers.sort((a, b) => Number(a.template.includes('{')) - Number(b.template.includes('{')));
  compiled = { doc, ajv, matchers };
  return compiled;
}

function rewriteRefs(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(rewriteRefs);
  if (schema && typeof schema === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(schema)) {
      out[k] = k === '$ref' && typeof v === 'string' && v.startsWith('#/components/') ? 'kopek' + v : rewriteRefs(v);
    }
    return out;
  }
  return schema;
}

const validators = new Map<string, ReturnType<Ajv2020['compile']>>();

/**
 * Check a JSON response against the OpenAPI document: the route must be documented, and the body must
 * match the schema of its status (or `default`). Throws with the schema errors otherwise.
 */
export function checkResponse(method: string, path: string, status: number, body: unknown): void {
  const { doc, ajv, matchers } = load();
  const m = matchers.find((x) => x.re.test(path));
  const op = m ? doc.paths[m.template][method.toLowerCase()] : undefined;
  if (!m || !op) {
    // Unknown routes and wrong methods answer the common error body.
    if (status === 404 || status === 405) return checkSchema(`error ${status}`, { $ref: '#/components/schemas/Error' }, body);
    if (!m) throw new Error(`OpenAPI: no path documents ${method} ${path}`);
    throw new Error(`OpenAPI: ${m.template} documents no ${method}`);
  }
  // A refusal (4xx) must be declared by its own status, so a generated client's error type holds it.
  const resp = op.responses?.[String(status)] ?? (status >= 400 && status < 500 ? undefined : op.responses?.default);
  if (!resp) throw new Error(`OpenAPI: ${method} ${m.template} documents no response ${status}`);
  const schema = resp.content?.['application/json']?.schema;
  if (!schema) throw new Error(`OpenAPI: ${method} ${m.template} ${status} has no JSON schema`);
  checkSchema(`${method} ${m.template} ${status}`, schema, body);
}

function checkSchema(key: string, schema: unknown, body: unknown): void {
  const { ajv } = load();
  let validate = validators.get(key);
  if (!validate) {
    validate = ajv.compile(rewriteRefs(schema) as object);
    validators.set(key, validate);
  }
  if (!validate(body)) {
    throw new Error(`OpenAPI: ${key} body does not match: ${ajv.errorsText(validate.errors)}\nbody: ${JSON.stringify(body).slice(0, 2000)}`);
  }
}

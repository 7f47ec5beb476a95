import fc from 'fast-check';
import { request as httpRequest } from 'node:http';
import { checkResponse } from '../../test/helpers/openapi-check';

/** One documented operation, as the fuzzer drives it. */
export interface Operation {
  method: string;
  /** OpenAPI template, e.g. /v1/public/payments/{id}. */
  template: string;
  query: string[];
  bodySchema: unknown;
}

/** A generated request. */
export interface FuzzRequest {
  method: string;
  /** The operation's OpenAPI template, for counting. */
  template?: string;
  path: string;
  /** Raw body text (sent as is) or undefined. */
  body?: string;
  headers: Record<string, string>;
}

/** What went wrong with one answer, or null when it is as documented. */
export type Verdict = string | null;

type Doc = { paths: Record<string, Record<string, any>>; components: { schemas: Record<string, any> } };

/** Every operation of the OpenAPI document the server serves, minus the event stream (it never ends by design). */
export function operationsOf(doc: Doc): Operation[] {
  const ops: Operation[] = [];
  for (const [template, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (template === '/v1/public/events') continue;
      const query = ((op.parameters ?? []) as Array<{ in: string; name: string }>).filter((p) => p.in === 'query').map((p) => p.name);
      const content = op.requestBody?.content ?? {};
      const schema = content['application/json']?.schema ?? content['application/x-www-form-urlencoded']?.schema;
      ops.push({ method: method.toUpperCase(), template, query, bodySchema: resolve(doc, schema) });
    }
  }
  return ops;
}

function resolve(doc: Doc, schema: any, depth = 0): any {
  if (!schema || depth > 8) return schema;
  if (schema.$ref) return resolve(doc, doc.components.schemas[schema.$ref.split('/').pop()], depth + 1);
  if (schema.properties) {
    const props: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(schema.properties)) props[k] = resolve(doc, v, depth + 1);
    return { ...schema, properties: props };
  }
  if (schema.items) return { ...schema, items: resolve(doc, schema.items, depth + 1) };
  return schema;
}

/** A number literal written verbatim into the JSON text: beyond 2^53, exponents, negative zero. */
class RawNumber {
  constructor(readonly text: string) {}
}

const rawNumbers = fc.constantFrom(
  '9007199254740993', '-9007199254740993', '1e400', '-0', '1E3', '0.1e1', '123456789012345678901234567890', '1000000000001', '1.0000000000000002',
).map((t) => new RawNumber(t));

// Printable ASCII only in headers: anything else the client library refuses to send, which tests nothing.
const headerText = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 90 });

const hostileString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('', ' ', '\u0000', '\ud800', '💳', 'RUB', 'rub', 'USD', 'sbp', 'any', 'payouts_sbp', '+79001234567', '100000000004', 'x'.repeat(5000), '<script>', "'; DROP TABLE payments; --", '../../etc/passwd', 'https://example.com/r', 'http://localhost/r'),
);

const leaf: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer({ min: -3, max: 1_000_000_000_001 }),
  fc.constantFrom(0, -1, 1, 100, 10_000, 10_001, 10_003, 1e12, 1e12 + 1, 2 ** 53 - 1, 1.5, Number.MAX_VALUE, Number.MIN_VALUE),
  rawNumbers,
  hostileString,
  fc.boolean(),
  fc.constant(null),
);

const anyValue: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, fc.array(tie('v'), { maxLength: 4 }), fc.dictionary(fc.string({ maxLength: 8 }), tie('v'), { maxKeys: 4 })),
})).v;

/** A value the field's schema allows (as far as a schema says), or anything when it says nothing usable. */
function fitting(schema: any): fc.Arbitrary<unknown> {
  if (schema?.enum) return fc.constantFrom(...(schema.enum as unknown[]));
  if (schema?.const !== undefined) return fc.constant(schema.const);
  if (schema?.type === 'integer') return fc.integer({ min: schema.minimum ?? 0, max: Math.min(schema.maximum ?? 1e12, 1e12) });
  if (schema?.type === 'string' && schema.format === 'uri') return fc.constantFrom('https://example.com/return', 'http://localhost/return');
  if (schema?.type === 'string') return fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 30, 30) });
  if (schema?.type === 'array' && schema.items) return fc.array(validBody(schema.items), { maxLength: 3 });
  if (schema?.type === 'object' && schema.properties) return validBody(schema);
  if (schema?.type === 'object') return fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.string({ maxLength: 20 }), { maxKeys: 3 });
  return anyValue;
}

/** A body the schema allows: its required fields and some optional ones. */
function validBody(schema: any): fc.Arbitrary<Record<string, unknown>> {
  const props: Record<string, any> = schema?.properties ?? {};
  const names = Object.keys(props);
  if (names.length === 0) return fc.constant({});
  const required = names.filter((n) => (schema?.required ?? []).includes(n));
  return fc.record(Object.fromEntries(names.map((n) => [n, fitting(props[n])])), { requiredKeys: required }) as fc.Arbitrary<Record<string, unknown>>;
}

/**
 * Bodies near the schema: valid ones (the rules behind the first check get reached, objects get created),
 * valid ones with one field given a hostile value, missing required fields, or an unknown field added.
 */
function bodyFromSchema(schema: any): fc.Arbitrary<unknown> {
  const names = Object.keys(schema?.properties ?? {});
  const valid = validBody(schema);
  const oneBad = names.length === 0 ? valid : fc.tuple(valid, fc.constantFrom(...names), anyValue).map(([b, n, v]) => ({ ...b, [n]: v }));
  const unknown = fc.tuple(valid, fc.string({ minLength: 1, maxLength: 12 }), anyValue).map(([b, n, v]) => ({ ...b, [n]: v }));
  const missing = names.length === 0 ? valid : fc.tuple(valid, fc.constantFrom(...names)).map(([b, n]) => {
    const { [n]: _gone, ...rest } = b;
    return rest;
  });
  return fc.oneof({ weight: 3, arbitrary: valid }, { weight: 3, arbitrary: oneBad }, { weight: 1, arbitrary: unknown }, { weight: 1, arbitrary: missing });
}

/** Percent-encode the UTF-8 bytes of a string (lone surrogates become U+FFFD, which encodeURIComponent refuses). */
function pct(v: string): string {
  let out = '';
  for (const b of Buffer.from(v, 'utf8')) out += /[A-Za-z0-9_.~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : '%' + b.toString(16).toUpperCase().padStart(2, '0');
  return out;
}

/** JSON text of a value, writing raw number literals verbatim. */
export function toJsonText(v: unknown): string {
  if (v instanceof RawNumber) return v.text;
  if (Array.isArray(v)) return '[' + v.map(toJsonText).join(',') + ']';
  if (v && typeof v === 'object') return '{' + Object.entries(v).map(([k, x]) => JSON.stringify(k) + ':' + toJsonText(x)).join(',') + '}';
  return JSON.stringify(v) ?? 'null';
}

/** Requests over every operation: path ids real or not, documented query names with hostile values, bodies near the schema or not. */
export function requestArb(ops: Operation[], ids: string[], key: string): fc.Arbitrary<FuzzRequest> {
  const idArb = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...ids) },
    { weight: 1, arbitrary: fc.uuid() },
    { weight: 1, arbitrary: hostileString.map((x) => pct(x).slice(0, 3000) || '%20') },
    { weight: 1, arbitrary: fc.constantFrom('%ZZ', '%C3%28', '%00', '..%2F..%2Fetc', '%FF%FE', '.', '..') },
  );
  return fc.constantFrom(...ops).chain((op) => {
    const params = op.template.match(/\{[^}]+\}/g) ?? [];
    const pathArb = fc.tuple(...params.map(() => idArb)).map((vals) => {
      let p = op.template;
      for (const v of vals as string[]) p = p.replace(/\{[^}]+\}/, v);
      return p;
    });
    const queryArb = fc.array(fc.tuple(op.query.length > 0 ? fc.oneof(fc.constantFrom(...op.query), fc.string({ maxLength: 6 })) : fc.string({ maxLength: 6 }), hostileString), { maxLength: 4 });
    const bodyArb = fc.oneof(
      { weight: 4, arbitrary: bodyFromSchema(op.bodySchema).map(toJsonText) },
      { weight: 1, arbitrary: anyValue.map(toJsonText) },
      { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }) },
    );
    const headersArb = fc.record(
      {
        auth: fc.oneof({ weight: 8, arbitrary: fc.constant(`Bearer ${key}`) }, { weight: 1, arbitrary: headerText }, { weight: 1, arbitrary: fc.constant('') }),
        idem: fc.option(headerText, { freq: 3 }),
        type: fc.oneof({ weight: 8, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: fc.constantFrom('text/plain', 'application/json; charset=latin1', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x') }),
        rid: fc.option(headerText, { freq: 4 }),
      },
      { requiredKeys: ['auth', 'type'] },
    );
    const hasBody = op.method !== 'GET' && op.method !== 'HEAD';
    return fc.record({ path: pathArb, query: queryArb, body: hasBody ? fc.option(bodyArb, { freq: 8 }) : fc.constant(null), h: headersArb }).map(({ path, query, body, h }) => {
      const qs = query.map(([k, v]) => `${pct(k)}=${pct(v)}`).join('&');
      const headers: Record<string, string> = { 'content-type': h.type };
      if (h.auth) headers.authorization = h.auth;
      if (h.idem !== undefined && h.idem !== null) headers['idempotency-key'] = h.idem;
      if (h.rid !== undefined && h.rid !== null) headers['x-request-id'] = h.rid;
      return { method: op.method, template: op.template, path: qs ? `${path}?${qs}` : path, body: body ?? undefined, headers };
    });
  });
}

/** Send one request; resolves with status, headers and text (never rejects on an HTTP answer). */
export function send(base: string, r: FuzzRequest, timeout_ms = 10_000): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  return new Promise((resolve, reject) => {
    const body = r.body === undefined ? undefined : Buffer.from(r.body, 'utf8');
    const headers = { ...r.headers, ...(body ? { 'content-length': String(body.length) } : {}) };
    const req = httpRequest(new URL(r.path, base), { method: r.method, headers, agent: false, timeout: timeout_ms }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeout_ms} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** Judge one answer: no 5xx (save the documented 502 router_error of payouts), a request id, and a body the OpenAPI document allows. */
export function judge(r: FuzzRequest, res: { status: number; headers: Record<string, unknown>; text: string }): Verdict {
  const path = new URL(r.path, 'http://x').pathname;
  let body: any;
  if (String(res.headers['content-type'] ?? '').startsWith('application/json') && res.text) {
    try {
      body = JSON.parse(res.text);
    } catch {
      return `answer is not JSON although it says so: ${res.text.slice(0, 120)}`;
    }
  }
  if (res.status >= 500 && !(res.status === 502 && body?.error?.code === 'router_error' && path.startsWith('/v1/public/payouts'))) {
    return `answered ${res.status}: ${res.text.slice(0, 200)}`;
  }
  if (!res.headers['x-request-id']) return `answered ${res.status} without X-Request-Id`;
  // The hosted page and the cabinet are for people: their refusals are HTML pages, as the document says.
  if (res.status >= 400 && !path.startsWith('/pay/') && !path.startsWith('/cabinet') && r.method !== 'HEAD') {
    if (!body?.error || typeof body.error.code !== 'string' || typeof body.error.message !== 'string') return `error ${res.status} without the error body: ${res.text.slice(0, 200)}`;
  }
  if (body !== undefined) {
    try {
      checkResponse(r.method, path, res.status, body);
    } catch (err) {
      return `answer breaks the OpenAPI document: ${(err as Error).message.slice(0, 300)}`;
    }
  }
  return null;
}

/** A short printable description of a request for failure reports. */
export function describe(r: FuzzRequest): string {
  return `${r.method} ${r.path.slice(0, 200)} headers=${JSON.stringify(r.headers)} body=${JSON.stringify((r.body ?? '').slice(0, 300))}`;
}

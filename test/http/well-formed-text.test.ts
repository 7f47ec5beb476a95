import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { TEST_PG } from '../helpers/pg';

// A NUL (U+0000) or a lone UTF-16 surrogate in any text the API takes in is 400 bad_request naming the field,
// on either engine, before anything is written: PostgreSQL cannot store a NUL (it answered 500), SQLite stored
// it; one driver turned a lone surrogate into U+FFFD, another kept it. Run this file on both engines
// (scripts/with-postgres.sh for PostgreSQL).

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

const NUL = 'a\u0000b';
const SURROGATE = 'a\ud800b';

/** Rows in every table of the database: equal before and after means nothing was written. */
async function rowCounts(): Promise<Record<string, number>> {
  const tables = TEST_PG
    ? await s.store.all<{ name: string }>('SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename')
    : await s.store.all<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name");
  const out: Record<string, number> = {};
  // The key's last use is noted per request (an update, and one row per key), so counts stay put.
  for (const { name } of tables) out[name] = Number((await s.store.get<{ n: number }>(`SELECT COUNT(*) AS n FROM "${name}"`))!.n);
  return out;
}

type Schema = Record<string, any>;
type Doc = { paths: Record<string, Record<string, any>>; components: Record<string, Record<string, any>> };

function deref(doc: Doc, x: Schema | undefined): Schema | undefined {
  let out = x;
  while (out && typeof out.$ref === 'string') {
    const [, , kind, name] = out.$ref.split('/');
    out = doc.components[kind][name];
  }
  return out;
}

/** Every string property of a schema, as the API names it in `param` (`order_id`, `metadata.k`, `items[0].phone`). */
function stringFields(doc: Doc, schema: Schema | undefined, path: Array<string | number>, out: Array<Array<string | number>>): void {
  const s = deref(doc, schema);
  if (!s) return;
  for (const alt of [...(s.allOf ?? []), ...(s.oneOf ?? []), ...(s.anyOf ?? [])]) stringFields(doc, alt, path, out);
  const types = ([] as string[]).concat(s.type ?? []);
  if (types.includes('string') && path.length > 0 && !out.some((p) => p.join('\u0001') === path.join('\u0001'))) out.push(path);
  for (const [k, v] of Object.entries<Schema>(s.properties ?? {})) stringFields(doc, v, [...path, k], out);
  if (s.additionalProperties && typeof s.additionalProperties === 'object') stringFields(doc, s.additionalProperties, [...path, 'k'], out);
  if (s.items) stringFields(doc, s.items, [...path, 0], out);
}

function pathName(path: Array<string | number>): string {
  return path.map((seg, i) => (typeof seg === 'number' ? `[${seg}]` : i === 0 ? seg : `.${seg}`)).join('');
}

/** A body holding `value` at `path` and nothing else. */
function bodyWith(path: Array<string | number>, value: string): unknown {
  const root: any = typeof path[0] === 'number' ? [] : {};
  let at = root;
  path.forEach((seg, i) => {
    if (i === path.length - 1) at[seg] = value;
    else at = at[seg] = typeof path[i + 1] === 'number' ? [] : {};
  });
  return root;
}

/** A concrete path for a documented template: any id will do, the check comes before the handler looks. */
function concrete(template: string): string {
  return template.replace(/\{[^}]+\}/g, 'x0');
}

async function servedDocument(): Promise<Doc> {
  const r = await s.request('GET', '/v1/openapi.json', { key: null });
  assert.equal(r.status, 200);
  return r.body as Doc;
}

test('every string field of every JSON body in the OpenAPI document refuses a NUL and a lone surrogate with 400 naming it, and nothing is written', async () => {
  const doc = await servedDocument();
  const before = await rowCounts();
  const seen = new Set<string>();
  for (const [template, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries<any>(ops)) {
      const schema = op.requestBody?.content?.['application/json']?.schema;
      if (!schema) continue;
      const fields: Array<Array<string | number>> = [];
      stringFields(doc, schema, [], fields);
      for (const field of fields) {
        for (const [what, bad] of [['a NUL', NUL], ['a lone surrogate', SURROGATE]]) {
          const r = await s.request(method.toUpperCase(), concrete(template), { body: bodyWith(field, bad) });
          const where = `${method.toUpperCase()} ${template} ${pathName(field)} with ${what}`;
          assert.equal(r.status, 400, `${where}: ${r.text.slice(0, 300)}`);
          assert.equal(r.body.error.code, 'bad_request', where);
          assert.equal(r.body.error.param, pathName(field), where);
          seen.add(`${method.toUpperCase()} ${template} ${pathName(field)}`);
        }
      }
    }
  }
  // The walk of the document reaches the fields the issue named, nested ones included.
  for (const must of [
    'POST /v1/public/payments order_id',
    'POST /v1/public/payments description',
    'POST /v1/public/payments metadata.k',
    'POST /v1/public/tokens customer_ref',
    'POST /v1/public/subscriptions customer_ref',
    'POST /v1/public/tokens/{id}/charge order_id',
    'POST /v1/public/payouts/batch items[0].full_name',
  ]) {
    assert.ok(seen.has(must), `${must} was not found in the document; found: ${[...seen].join(', ')}`);
  }
  assert.deepEqual(await rowCounts(), before, 'nothing was written');
});

test('every query parameter of every operation in the OpenAPI document refuses a NUL and invalid UTF-8 with 400 naming it', async () => {
  const doc = await servedDocument();
  const before = await rowCounts();
  let checked = 0;
  for (const [template, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries<any>(ops)) {
      const query = (op.parameters ?? []).map((p: Schema) => deref(doc, p)!).filter((p: Schema) => p.in === 'query');
      for (const p of query) {
        // %ed%a0%80 is U+D800 in UTF-8's shape: no UTF-8 text holds it, so it is what a lone surrogate becomes in a URL.
        for (const bad of ['a%00b', '%ff', '%ed%a0%80']) {
          const r = await s.request(method.toUpperCase(), `${concrete(template)}?${p.name}=${bad}`, { key: template.startsWith('/cabinet') ? null : undefined });
          const where = `${method.toUpperCase()} ${template}?${p.name}=${bad}`;
          assert.equal(r.status, 400, `${where}: ${r.text.slice(0, 300)}`);
          if (r.body) assert.equal(r.body.error.param, p.name, where);
          else assert.match(r.text, new RegExp(`query parameter &quot;${p.name}&quot;`), where);
          checked++;
        }
      }
    }
  }
  assert.ok(checked >= 60, `only ${checked} parameters were found in the document`);
  assert.deepEqual(await rowCounts(), before, 'nothing was written');
});

test('a NUL in order_id answered 500 on PostgreSQL and was stored on SQLite', async () => {
  const r = await s.request('POST', '/v1/public/payments', { body: { amount: 100, order_id: NUL } });
  assert.equal(r.status, 400);
  assert.equal(r.body.error.param, 'order_id');
  assert.match(r.body.error.message, /^Cannot POST \/v1\/public\/payments: field "order_id" must not contain a NUL character \(U\+0000\)/);
  assert.equal(s.logs.filter((l) => l.includes('invalid byte sequence')).length, 0, 'no database error in the log');
  const list = await s.request('GET', '/v1/public/payments?limit=200');
  assert.ok(!JSON.stringify(list.body).includes('\\u0000'), 'no payment holds it');
});

test('a lone surrogate in order_id became U+FFFD while metadata kept it', async () => {
  for (const body of [{ amount: 100, order_id: SURROGATE }, { amount: 100, metadata: { k: SURROGATE } }, { amount: 100, description: '\udc00' }]) {
    const r = await s.request('POST', '/v1/public/payments', { body });
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.match(r.body.error.message, /lone UTF-16 surrogate \(U\+D[8C]00\)/);
  }
  // A surrogate pair (an emoji) is well-formed text and stays as sent.
  const ok = await s.request('POST', '/v1/public/payments', { body: { amount: 100, order_id: 'ok-\ud83d\ude00' } });
  assert.equal(ok.status, 201);
  assert.equal(ok.body.payment.order_id, 'ok-😀');
});

test('a NUL in the customer_ref query of GET /v1/public/tokens answered 500 on PostgreSQL', async () => {
  const r = await s.request('GET', '/v1/public/tokens?customer_ref=a%00b');
  assert.equal(r.status, 400);
  assert.equal(r.body.error.param, 'customer_ref');
  assert.match(r.body.error.message, /^Cannot GET \/v1\/public\/tokens: query parameter "customer_ref" must not contain a NUL character/);
  const bad = await s.request('GET', '/v1/public/tokens?customer_ref=%c3');
  assert.equal(bad.status, 400, 'percent-decoding to invalid UTF-8 was read as U+FFFD');
  assert.match(bad.body.error.message, /query parameter "customer_ref" is not valid UTF-8 once percent-decoded/);
  // A '%' not followed by two hex digits is a plain character, as URLSearchParams reads it; valid escapes are data.
  assert.equal((await s.request('GET', '/v1/public/tokens?customer_ref=100%25')).status, 200);
  assert.equal((await s.request('GET', '/v1/public/tokens?customer_ref=%D0%B0%zz')).status, 200);
});

test('a NUL or a lone surrogate in a key is refused naming the key, at any depth', async () => {
  const nested = await s.request('POST', '/v1/public/payments', { body: '{"amount":100,"metadata":{"a\\u0000":"x"}}' });
  assert.equal(nested.status, 400);
  assert.equal(nested.body.error.param, 'metadata.a\\u0000');
  const top = await s.request('POST', '/v1/public/payments', { body: '{"amount":100,"\\ud800":"x"}' });
  assert.equal(top.status, 400);
  assert.equal(top.body.error.param, '\\ud800');
  const deep = await s.request('POST', '/v1/public/payouts/batch', {
    body: { items: [{ method: 'sbp', amount: 100 }, { method: 'sbp', amount: 100 }, { method: 'sbp', amount: 100, full_name: 'x\u0000' }] },
  });
  assert.equal(deep.status, 400);
  assert.equal(deep.body.error.param, 'items[2].full_name');
});

test('a body that is not UTF-8 is 400, never read as U+FFFD', async () => {
  for (const bytes of [Buffer.from([0x7b, 0x22, 0x61, 0x6d, 0x6f, 0x75, 0x6e, 0x74, 0x22, 0x3a, 0x31, 0x2c, 0x22, 0x6f, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]), Buffer.from('{"amount":1,"order_id":"\xed\xa0\x80"}', 'latin1')]) {
    const r = await s.request('POST', '/v1/public/payments', { body: bytes });
    assert.equal(r.status, 400);
    assert.match(r.body.error.message, /not valid UTF-8/);
  }
});

test('a form body with a NUL or invalid UTF-8 is refused as well (the cabinet sign-in)', async () => {
  for (const email of ['a%00b@x.example', '%ff@x.example']) {
    const r = await s.request('POST', '/cabinet/login', { key: null, body: `email=${email}&password=x`, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    assert.equal(r.status, 400, email);
    assert.match(r.text, /field &quot;email&quot;/, email);
  }
  const raw = await s.request('POST', '/cabinet/login', { key: null, body: Buffer.from('email=\xff', 'latin1'), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  assert.equal(raw.status, 400);
});

test('a NUL in a path parameter is 400 naming it, not a database error', async () => {
  const r = await s.request('GET', '/v1/public/payments/pay_%00x');
  assert.equal(r.status, 400);
  assert.equal(r.body.error.param, 'id');
});

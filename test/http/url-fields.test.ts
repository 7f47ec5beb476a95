import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { makeUser, signIn, cabPost } from '../helpers/cabinet';

// The URL parser drops CR, LF and tab without a word, so `https://a.test/\r\nSet-Cookie: x=1` parsed and was
// stored as sent, ready for a Location header. Every URL field refuses a control character written raw
// (U+0000–U+001F, U+007F); written as %0d%0a it is data of the URL and stays.

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

/** A body each operation with a URL field accepts; a URL field of a new operation needs one here. */
const VALID_BODIES: Record<string, Record<string, unknown>> = {
  'POST /v1/public/payments': { amount: 100 },
  'POST /v1/public/tokens': { customer_ref: 'url-check' },
  'POST /v1/public/subscriptions': { amount: 100, customer_ref: 'url-check' },
};

const RAW_CONTROLS = ['https://a.test/\r\nSet-Cookie: x=1', 'https://a.test/a\tb', 'https://a.test/\u007f', '\u0001https://a.test/', 'https://a.test/x\u001f', 'https://a.test/\n'];

/** Every URL field of the JSON request bodies of the served OpenAPI document: format uri, or a name ending in _url. */
async function urlFields(): Promise<Array<{ op: string; field: string }>> {
  const doc = (await s.request('GET', '/v1/openapi.json', { key: null })).body;
  const out: Array<{ op: string; field: string }> = [];
  for (const [path, ops] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(ops)) {
      const props = op.requestBody?.content?.['application/json']?.schema?.properties ?? {};
      for (const [field, schema] of Object.entries<any>(props)) {
        if (schema.format === 'uri' || field.endsWith('_url')) out.push({ op: `${method.toUpperCase()} ${path}`, field });
      }
    }
  }
  return out;
}

test('a return_url or webhook_url with CR LF was accepted and stored', async () => {
  const fields = await urlFields();
  assert.deepEqual(
    fields.map((f) => `${f.op} ${f.field}`).sort(),
    ['POST /v1/public/payments return_url', 'POST /v1/public/payments webhook_url', 'POST /v1/public/subscriptions return_url', 'POST /v1/public/tokens return_url'],
  );
  const before = Number((await s.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM payments'))!.n);
  for (const { op, field } of fields) {
    const base = VALID_BODIES[op];
    assert.ok(base, `${op} has a URL field "${field}": give it a valid body in VALID_BODIES`);
    const [method, path] = op.split(' ');
    for (const url of RAW_CONTROLS) {
      const r = await s.request(method, path, { body: { ...base, [field]: url } });
      assert.equal(r.status, 400, `${op} ${field}=${JSON.stringify(url)}: ${r.text.slice(0, 200)}`);
      assert.equal(r.body.error.param, field);
      assert.match(r.body.error.message, /must not contain control characters written raw \(U\+00[0-9A-F]{2}\); percent-encode them/);
    }
  }
  assert.equal(Number((await s.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM payments'))!.n), before, 'nothing was created');
});

test('percent-encoded control characters in a URL field are data: accepted and kept as sent', async () => {
  const encoded = 'https://a.test/back%0d%0aSet-Cookie:%20x=1?q=%09';
  for (const { op, field } of await urlFields()) {
    const [method, path] = op.split(' ');
    const r = await s.request(method, path, { body: { ...VALID_BODIES[op], [field]: encoded } });
    assert.equal(r.status, 201, `${op} ${field}: ${r.text.slice(0, 200)}`);
    if (path === '/v1/public/payments') {
      const got = await s.request('GET', `/v1/public/payments/${r.body.payment.id}`);
      if (field === 'return_url') assert.equal(got.body.return_url, encoded);
      else assert.equal(got.body.metadata.webhook_url, encoded);
    }
  }
});

test('a webhook endpoint URL with a raw CR LF is refused by the cabinet, and nothing is stored', async () => {
  await makeUser(s, s.demo.merchantId, 'urls@shop.example');
  const session = await signIn(s, 'urls@shop.example');
  const r = await cabPost(s, session, '/cabinet/webhooks', { shop: s.demo.shopId, url: 'https://a.test/hook\r\nSet-Cookie: x=1', signature: 'v2' });
  assert.equal(r.status, 400);
  assert.match(r.text, /control character written raw \(U\+000D\)/);
  const stored = await s.store.all<{ url: string }>('SELECT url FROM webhook_endpoints WHERE shop_id = ?', s.demo.shopId);
  assert.ok(!stored.some((e) => e.url.includes('a.test/hook')), JSON.stringify(stored));
});

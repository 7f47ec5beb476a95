import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';

// JSON.parse keeps the last of two equal keys; a proxy or a log reader may keep the first. A body that names a
// key twice in one object is refused (400 naming it), so every reader of the bytes sees one value.

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

async function paymentCount(): Promise<number> {
  return Number((await s.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM payments'))!.n);
}

test('duplicate JSON keys were accepted, the last one winning', async () => {
  const before = await paymentCount();
  const r = await s.request('POST', '/v1/public/payments', { body: '{"amount":100,"amount":100000000}' });
  assert.equal(r.status, 400);
  assert.equal(r.body.error.code, 'bad_request');
  assert.equal(r.body.error.param, 'amount');
  assert.match(r.body.error.message, /^Cannot POST \/v1\/public\/payments: field "amount" is given more than once/);
  assert.equal(await paymentCount(), before, 'no payment was made');
});

test('a repeated key is found at any depth, in objects inside arrays, and named by its path', async () => {
  const cases: Array<[string, string, string]> = [
    ['POST', '{"amount":100,"metadata":{"k":"a","other":"b","k":"c"}}', 'metadata.k'],
    ['POST', '{"metadata":{"k":"a"},"amount":100,"description":"x","amount":5}', 'amount'],
    ['BATCH', '{"items":[{"method":"sbp","amount":1},{"method":"sbp","amount":1,"phone":"+79990000000","phone":"+79990000001"}]}', 'items[1].phone'],
    ['BATCH', '{"items":[[],{"a":{"b":[{"c":1,"c":2}]}}]}', 'items[1].a.b[0].c'],
  ];
  for (const [where, body, param] of cases) {
    const path = where === 'BATCH' ? '/v1/public/payouts/batch' : '/v1/public/payments';
    const r = await s.request('POST', path, { body });
    assert.equal(r.status, 400, body);
    assert.equal(r.body.error.param, param, body);
  }
});

test('keys compare as JSON reads them: "amount" and "\\u0061mount" are one key', async () => {
  const r = await s.request('POST', '/v1/public/payments', { body: '{"amount":100,"\\u0061mount":100000000}' });
  assert.equal(r.status, 400);
  assert.equal(r.body.error.param, 'amount');
  const proto = await s.request('POST', '/v1/public/payments', { body: '{"amount":100,"__proto__":1,"__proto__":2}' });
  assert.equal(proto.status, 400);
  assert.equal(proto.body.error.param, '__proto__');
});

test('the same key in different objects, a colon or a quoted key inside a string, and white space everywhere are fine', async () => {
  const body = ' {\n "amount" : 100 ,\t"description":"a \\"amount\\": 1, b: {\\"x\\":2}",\r\n "metadata" : { "amount" : "1", "k\\"":"v" } } ';
  const r = await s.request('POST', '/v1/public/payments', { body });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.payment.amount, 100);
  assert.equal(r.body.payment.metadata.amount, '1');
});

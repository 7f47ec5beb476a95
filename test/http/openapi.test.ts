import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { buildRouter } from '../../src/routes';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

test('GET /v1/openapi.json serves an OpenAPI 3.1 document naming this server', async () => {
  const r = await s.request('GET', '/v1/openapi.json', { key: null });
  assert.equal(r.status, 200);
  assert.equal(r.body.openapi, '3.1.0');
  assert.equal(r.body.info.version, s.running.app.version);
  assert.deepEqual(r.body.servers, [{ url: s.url }]);
  assert.ok(r.body.components.schemas.Error);
});

test('every route in the router is documented (method and path), and nothing else is', async () => {
  const r = await s.request('GET', '/v1/openapi.json', { key: null });
  const paths = r.body.paths as Record<string, Record<string, unknown>>;
  const routes = buildRouter()
    .list()
    .map(([method, pattern]) => `${method} ${pattern.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`);
  const documented = Object.entries(paths).flatMap(([p, ops]) =>
    Object.keys(ops)
      .filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m))
      .map((m) => `${m.toUpperCase()} ${p}`),
  );
  const missing = routes.filter((x) => !documented.includes(x));
  const stale = documented.filter((x) => !routes.includes(x));
  assert.deepEqual(missing, [], `routes missing from the OpenAPI document:\n  ${missing.join('\n  ')}`);
  assert.deepEqual(stale, [], `documented operations with no route:\n  ${stale.join('\n  ')}`);
});

test('every documented operation has responses, and every JSON response a schema', async () => {
  const r = await s.request('GET', '/v1/openapi.json', { key: null });
  const problems: string[] = [];
  for (const [p, ops] of Object.entries(r.body.paths as Record<string, Record<string, any>>)) {
    for (const [m, op] of Object.entries(ops)) {
      if (!op.responses || Object.keys(op.responses).length === 0) problems.push(`${m.toUpperCase()} ${p}: no responses`);
      for (const [status, resp] of Object.entries(op.responses ?? {}) as Array<[string, any]>) {
        const json = resp.content?.['application/json'];
        if (json && !json.schema) problems.push(`${m.toUpperCase()} ${p} ${status}: JSON without a schema`);
      }
    }
  }
  assert.deepEqual(problems, []);
});

test('the response check itself rejects a body that breaks the schema', async () => {
  const { checkResponse } = await import('../helpers/openapi-check');
  assert.throws(() => checkResponse('GET', '/healthz', 200, { status: 'ok', version: '1', extra: true }), /does not match/);
  assert.throws(() => checkResponse('GET', '/v1/never-documented', 200, {}), /no path documents/);
  assert.doesNotThrow(() => checkResponse('GET', '/healthz', 200, { status: 'ok', version: '1' }));
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Router } from '../../src/platform/http/server';
import { buildRouter } from '../../src/routes';

test('a duplicate route (same method and shape, any param names) throws when added', () => {
  const r = new Router<number>();
  r.add('GET', '/v1/things/:id', 1);
  assert.throws(() => r.add('GET', '/v1/things/:thing_id', 2), /duplicates "GET \/v1\/things\/:id"/);
  assert.doesNotThrow(() => r.add('POST', '/v1/things/:id', 3));
});

test('malformed patterns throw when added', () => {
  const r = new Router<number>();
  assert.throws(() => r.add('get', '/x', 1), /bad method/);
  assert.throws(() => r.add('GET', 'x', 1), /must start with \//);
  assert.throws(() => r.add('GET', '/a/:id/b/:id', 1), /param "id" repeats/);
  assert.throws(() => r.add('GET', '/a b', 1), /bad segment "a b"/);
  assert.throws(() => r.add('GET', '/a//b', 1), /bad segment ""/);
});

test('the real route table builds without a duplicate', () => {
  assert.ok(buildRouter().list().length > 0);
});

test('params are decoded; a static route wins over a param route; dots are literal', () => {
  const r = new Router<string>();
  r.add('GET', '/v1/p/:id', 'param');
  r.add('GET', '/v1/p/export', 'static');
  r.add('GET', '/v1/openapi.json', 'doc');
  const hit = r.match('GET', '/v1/p/a%20b');
  assert.deepEqual(hit, { kind: 'found', value: 'param', params: { id: 'a b' }, pattern: '/v1/p/:id' });
  assert.equal((r.match('GET', '/v1/p/export') as { value: string }).value, 'static');
  assert.equal(r.match('GET', '/v1/openapiXjson').kind, 'not_found');
  assert.equal((r.match('GET', '/v1/p/%E0%A4%A') as { params: Record<string, string> }).params.id, '%E0%A4%A');
  assert.equal(r.match('GET', '/v1/p/x/y').kind, 'not_found');
  assert.equal(r.match('GET', '/v1/p/').kind, 'not_found');
});

test('a known path with another method is method_not_allowed listing the methods (HEAD with GET)', () => {
  const r = new Router<number>();
  r.add('GET', '/v1/x/:id', 1);
  r.add('POST', '/v1/x/:id', 2);
  assert.deepEqual(r.match('DELETE', '/v1/x/7'), { kind: 'method_not_allowed', allow: ['GET', 'HEAD', 'POST'] });
  assert.equal((r.match('HEAD', '/v1/x/7') as { value: number }).value, 1);
});

test('a path a static route names is 405 for another method, never the id of a param route', () => {
  const r = new Router<string>();
  r.add('GET', '/v1/p/:id', 'param');
  r.add('POST', '/v1/p/batch', 'static');
  assert.deepEqual(r.match('GET', '/v1/p/batch'), { kind: 'method_not_allowed', allow: ['POST'] });
  assert.deepEqual(r.match('HEAD', '/v1/p/batch'), { kind: 'method_not_allowed', allow: ['POST'] });
  assert.equal((r.match('GET', '/v1/p/other') as { value: string }).value, 'param');
});

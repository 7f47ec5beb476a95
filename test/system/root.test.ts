import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { VERSION } from '../../src/platform/version';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

test('GET / answered a JSON 404: a browser goes to the cabinet sign-in, an API client learns where the API and its document are', async () => {
  const browser = await s.request('GET', '/', { key: null, headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' } });
  assert.equal(browser.status, 303);
  assert.equal(browser.headers.location, '/cabinet/login');
  const signIn = await s.request('GET', String(browser.headers.location), { key: null, headers: { accept: 'text/html' } });
  assert.equal(signIn.status, 200);
  for (const accept of [undefined, 'application/json', '*/*']) {
    const api = await s.request('GET', '/', { key: null, headers: accept ? { accept } : {} });
    assert.equal(api.status, 200, String(accept));
    assert.deepEqual(api.body, {
      service: 'kopek',
      version: VERSION,
      api: `${s.url}/v1/public`,
      openapi: `${s.url}/v1/openapi.json`,
      cabinet: `${s.url}/cabinet/login`,
    });
    assert.match(String(api.headers.vary), /Accept/);
  }
  assert.equal((await s.request('GET', new URL((await s.request('GET', '/', { key: null })).body.openapi).pathname, { key: null })).status, 200);
});

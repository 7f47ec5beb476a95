import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { checkYookassaCredentials } from '../../src/banks/yookassa/http';
import { FakeYookassa } from '../helpers/yookassa';

// Setting the provider checks its credentials with a GET that changes nothing: 404 works, 401 refuses.

let fake: FakeYookassa;
before(async () => void (fake = await new FakeYookassa('606060', 'test_secret-key').start()));
after(async () => fake.close());

test('working credentials: ok, and nothing is created at the provider', async () => {
  assert.deepEqual(await checkYookassaCredentials({ apiUrl: fake.apiUrl, agentId: '606060', secret: 'test_secret-key', timeoutMs: 2000 }), { ok: true });
  assert.equal(fake.payouts.size, 0);
  assert.equal(fake.received.at(-1)!.method, 'GET');
});

test('refused credentials, a 5xx and an unreachable address each give a reason without the secret', async () => {
  const bad = await checkYookassaCredentials({ apiUrl: `${fake.apiUrl}/`, agentId: '606060', secret: 'wrong-secret', timeoutMs: 2000 });
  assert.equal(bad.ok, false);
  assert.match((bad as { reason: string }).reason, /refused the credentials \(HTTP 401\)/);
  fake.next('GET', '500');
  const down = await checkYookassaCredentials({ apiUrl: fake.apiUrl, agentId: '606060', secret: 'test_secret-key', timeoutMs: 2000 });
  assert.equal(down.ok, false);
  const gone = await checkYookassaCredentials({ apiUrl: 'http://127.0.0.1:1/v3', agentId: '606060', secret: 'test_secret-key', timeoutMs: 2000 });
  assert.equal(gone.ok, false);
  for (const r of [bad, down, gone]) assert.ok(!JSON.stringify(r).includes('secret-key'));
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';

let s: TestServer;
before(async () => {
  s = await startTestServer({ simDelaySeconds: 60 });
});
after(() => s.close());

async function paid(amount: number): Promise<string> {
  const c = await s.request('POST', '/v1/public/payments', { body: { amount, method: 'sbp' } });
  assert.equal(c.status, 201);
  const id = c.body.payment.id as string;
  for (const action of ['open_session', 'succeed']) {
    const r = await s.request('POST', `/v1/test/payments/${id}/simulate`, { body: { action } });
    assert.equal(r.status, 200, r.text);
  }
  return id;
}

test('a refund larger than the available balance is 422 insufficient_funds and reserves nothing', async () => {
  const id = await paid(10_000);
  const payout = await s.request('POST', '/v1/public/payouts', {
    body: { method: 'payouts_sbp', amount: 9_000, phone: '+79991234567', bank_id: '100000000004', full_name: 'Ivan Petrov' },
  });
  assert.equal(payout.status, 201, payout.text);
  const before = await s.request('GET', '/v1/public/balance');
  assert.equal(before.body.available, 1_000);
  const r = await s.request('POST', `/v1/public/payments/${id}/refund`, { body: { amount: 5_000 } });
  assert.equal(r.status, 422);
  assert.equal(r.body.error.code, 'insufficient_funds');
  const after = await s.request('GET', '/v1/public/balance');
  assert.equal(after.body.available, 1_000);
  const p = await s.request('GET', `/v1/public/payments/${id}`);
  assert.equal(p.body.refunds.length, 0);
  const ok = await s.request('POST', `/v1/public/payments/${id}/refund`, { body: { amount: 1_000 } });
  assert.equal(ok.status, 201);
});

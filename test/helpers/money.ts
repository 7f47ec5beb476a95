import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import type { TestServer } from './server';
import { openSessionTx, paymentAnswered } from '../../src/money/payments/state';
import { getPayment } from '../../src/money/payments/store';

/** A succeeded test payment of `amount` (kopeck part 00) on the key's shop: money in through the real API. */
export async function paidPayment(s: TestServer, key: string, amount: number): Promise<string> {
  assert.equal(amount % 100, 0, 'a funding amount must end in 00, the simulator succeeds those');
  const p = await s.request('POST', '/v1/public/payments', { key, body: { amount, method: 'sbp' } });
  assert.equal(p.status, 201, p.text);
  const id = p.body.payment.id as string;
  const open = await s.request('POST', `/v1/test/payments/${id}/simulate`, { key, body: { action: 'open_session' } });
  assert.equal(open.status, 200, open.text);
  // With --sim-delay 0 the test bank answers at once on its own; running what is due settles that race.
  await s.request('POST', '/v1/test/clock/advance', { key, body: { seconds: 0 } });
  const now = await s.request('GET', `/v1/public/payments/${id}`, { key });
  if (now.body.status === 'processing') {
    const done = await s.request('POST', `/v1/test/payments/${id}/simulate`, { key, body: { action: 'succeed' } });
    assert.equal(done.status, 200, done.text);
  }
  const final = await s.request('GET', `/v1/public/payments/${id}`, { key });
  assert.equal(final.body.status, 'succeeded', final.text);
  return id;
}

/** The key's balance body (the key needs api:balance:read). */
export async function balanceOf(s: TestServer, key: string): Promise<{ balance: number; available: number; shops: Array<{ shop_id: string; balance: number; available: number }> }> {
  const r = await s.request('GET', '/v1/public/balance', { key });
  assert.equal(r.status, 200, r.text);
  return r.body;
}

/** `kopek ledger check` run as a process on a database file: its exit code and output. */
export function ledgerCheck(dbPath: string): Promise<{ code: number; stdout: string; stderr: string; json: any }> {
  const main = join(__dirname, '..', '..', 'src', 'main.ts');
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', main, 'ledger', 'check', '--db', dbPath, '--json'], (err, stdout, stderr) => {
      const code = err ? ((err as { code?: number }).code ?? 1) : 0;
      let json: unknown = null;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = null;
      }
      resolve({ code: typeof code === 'number' ? code : 1, stdout, stderr, json });
    });
  });
}

/**
 * A succeeded live payment: created through the API, its session opened and the bank's success applied
 * through the payments domain's entry point, as any acquirer's answer is.
 */
export async function paidLivePayment(s: TestServer, shop: { key: string; merchantId: string; shopId: string }, amount: number): Promise<string> {
  const p = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount, method: 'sbp' } });
  assert.equal(p.status, 201, p.text);
  const id = p.body.payment.id as string;
  const app = s.running.app;
  // The session opens (the shop's acquirer gets its Init) and the bank's success enters where every bank's does.
  await app.store.write(async (tx) => {
    await openSessionTx(app, tx, (await getPayment(tx, id))!);
    assert.equal(await paymentAnswered(app, tx, id, { outcome: 'succeeded', rrn: '000000000001', bankName: 'live test' }), 'applied');
  });
  return id;
}

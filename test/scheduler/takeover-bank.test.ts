import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import type { TestServer, TestShop } from '../helpers/server';
import type { FakeTBank } from '../tbank/fake-tbank';
import { tbankSuite } from '../helpers/tbank';
import { getPayment } from '../../src/money/payments/store';
import { openSessionTx } from '../../src/money/payments/state';

// A bank request is sent by an async job that marks it sent before the bytes leave. A process that claimed
// such a job and died after marking it loses the claim when the lease passes; the process that takes the job
// over finds the request already sent: it does not send it again, it records the outcome as unknown, and a
// status check settles the payment.

const TERMINAL = '1700000000LAPSE';
const PASSWORD = 'lapse-terminal-pass-7c1e';
const SYNC_AFTER_S = 60;
const LEASE_S = 30;
const suite = tbankSuite({ terminalKey: TERMINAL, password: PASSWORD }, { acquirerSyncAfterSeconds: SYNC_AFTER_S, jobLeaseSeconds: LEASE_S });
const { time } = suite;
let s: TestServer;
let fake: FakeTBank;
let shop: TestShop;
before(async () => void ({ s, fake, shop } = await suite.ready));

async function requests(id: string): Promise<string[]> {
  return (await s.store.all<{ operation: string; state: string }>('SELECT operation, state FROM bank_requests WHERE subject_id = ? ORDER BY id', id)).map((r) => `${r.operation}:${r.state}`);
}

test('a request job taken over after its claim lapsed is never sent twice: the request found sent becomes a status check', async () => {
  const c = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 41_000, method: 'cards' } });
  assert.equal(c.status, 201, c.text);
  const id = c.body.payment.id as string;
  const app = s.running.app;
  // The buyer chose the method through another process, which claimed the Init's job, marked the request sent,
  // and died before the bank's answer was recorded (all as one commit here, so that this server's passes
  // cannot take the job first).
  await s.store.tx(async (tx) => {
    await openSessionTx(app, tx, (await getPayment(tx, id))!, { by: 'buyer' });
    await tx.run(`UPDATE bank_requests SET state = 'sent', sent_at = ? WHERE subject_id = ? AND operation = 'Init'`, time.now(), id);
    const r = await tx.run(
      `UPDATE jobs SET claimed_by = 'dead-process', claim_token = 'dead-token', claim_until = ? WHERE kind = 'tbank.request' AND state = 'pending'`,
      time.now() + LEASE_S * 1000,
    );
    assert.equal(r.changes, 1);
  });
  assert.equal(await app.scheduler.runDue(), 0, 'the claim holds');
  assert.deepEqual(await requests(id), ['Init:sent']);

  await suite.pass(LEASE_S);
  assert.equal(fake.calls('Init').length, 0, 'the request found sent was not sent again');
  assert.deepEqual(await requests(id), ['Init:unknown']);
  assert.equal((await suite.get(`/v1/public/payments/${id}`)).status, 'processing', 'an unknown outcome fails nothing');
  const job = await s.store.get<{ state: string; attempt: number }>(`SELECT state, attempt FROM jobs WHERE kind = 'tbank.request' ORDER BY id LIMIT 1`);
  assert.deepEqual({ ...job }, { state: 'done', attempt: 0 });

  // The status check comes at --acquirer-sync-after: the bank never got the Init, so it asks about the order.
  await suite.pass(SYNC_AFTER_S);
  const after = await requests(id);
  assert.deepEqual(after.slice(0, 2), ['Init:unknown', 'CheckOrder:answered']);
});

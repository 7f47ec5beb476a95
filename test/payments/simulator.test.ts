import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { advance, createPayment, getPayment, simulate } from '../helpers/payments';
import { openSessionTx } from '../../src/money/payments/state';
import { getPayment as paymentRow } from '../../src/money/payments/store';

let s: TestServer;
before(async () => {
  s = await startTestServer({ simDelaySeconds: 2 });
});
after(() => s.close());

const MAGIC: Array<[number, string, string, string]> = [
  // amount, planned outcome, planned failure code, status 3 s after the session opens
  [10000, 'succeeded', '', 'succeeded'],
  [10001, 'failed', 'do_not_honor', 'failed'],
  [10002, 'failed', 'insufficient_funds', 'failed'],
  [10003, 'requires_action', '', 'processing'],
  [10004, 'pending', '', 'processing'],
  [10057, 'succeeded', '', 'succeeded'],
];

for (const [amount, outcome, code, after3s] of MAGIC) {
  test(`magic amount ${amount}: plan ${outcome}; still processing after 1 s, ${after3s} after 3 s`, async () => {
    const shop = await s.newShop();
    const c = await createPayment(s, { amount, method: 'sbp' }, shop.key);
    assert.equal(c.simulator.outcome, outcome);
    assert.equal(c.simulator.failure_code, code);
    assert.equal(c.payment.metadata.simulator_outcome, outcome);
    assert.equal(c.payment.metadata.simulator_failure_code, code);
    assert.equal((await simulate(s, c.payment.id, { action: 'open_session' }, shop.key)).status, 200);
    await advance(s, 1, shop.key);
    assert.equal((await getPayment(s, c.payment.id, shop.key)).status, 'processing');
    await advance(s, 2, shop.key);
    const p = await getPayment(s, c.payment.id, shop.key);
    assert.equal(p.status, after3s);
    if (after3s === 'failed') {
      assert.equal(p.metadata.failure_code, code);
      assert.ok(p.metadata.bank_failure_code);
    }
    if (after3s === 'succeeded') {
      assert.equal(p.bank_name, 'kopek test bank');
      assert.match(p.rrn, /^\d{12}$/);
    }
  });
}

test('requires_action waits for the buyer, then expires with the session', async () => {
  const shop = await s.newShop();
  const c = await createPayment(s, { amount: 20003, method: 'tpay' }, shop.key);
  await simulate(s, c.payment.id, { action: 'open_session' }, shop.key);
  await advance(s, 19 * 60, shop.key);
  assert.equal((await getPayment(s, c.payment.id, shop.key)).status, 'processing');
  await advance(s, 60, shop.key);
  const p = await getPayment(s, c.payment.id, shop.key);
  assert.equal(p.status, 'expired');
  assert.equal(p.metadata.failure_code, 'session_expired');
});

test('nothing resolves before the session opens, however long the clock runs within the link lifetime', async () => {
  const shop = await s.newShop();
  const c = await createPayment(s, { amount: 10000, method: 'sbp' }, shop.key);
  await advance(s, 59 * 60, shop.key);
  assert.equal((await getPayment(s, c.payment.id, shop.key)).status, 'pending');
});

test('live keys never touch the simulator: no plan, no simulator block, no automatic resolution', async () => {
  const live = await s.newShop({ mode: 'live' });
  await s.store.write(async (tx) => tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', live.merchantId));
  const c = await createPayment(s, { amount: 10001, method: 'sbp' }, live.key);
  assert.equal(c.mode, 'live');
  assert.equal(c.simulator, undefined);
  assert.deepEqual(c.payment.metadata, { mode: 'live' });
  // No buyer page in this test: open the live bank session the way the page would.
  await s.running.app.store.write(async (tx) => openSessionTx(s.running.app, tx, (await paymentRow(tx, c.payment.id))!));
  await s.running.app.scheduler.runDue();
  const jobs = await s.store.all<{ kind: string }>(`SELECT kind FROM jobs WHERE subject_id = ? AND state = 'pending' ORDER BY kind`, c.payment.id);
  const sweeps = await s.store.all<{ kind: string }>(`SELECT kind FROM jobs WHERE subject_id = ? AND state = 'pending'`, `${live.shopId}/live`);
  // The shop's acquirer (T-Bank, at the tests' fake) answered Init with NEW: a status check is planned; no simulator job.
  assert.deepEqual(jobs.map((j) => j.kind), ['bank.check_payment']);
  // The session's end is the shop's session sweep's to find, not a job of the payment's own.
  assert.deepEqual(sweeps.map((j) => j.kind).sort(), ['payment.link_sweep', 'payment.session_sweep']);
  const p = await getPayment(s, c.payment.id, live.key);
  assert.equal(p.status, 'processing');
  assert.equal(p.metadata.simulator_outcome, undefined);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { advance, createPayment, eventsOf, getPayment, simulate, succeededPayment } from '../helpers/payments';
import { post } from '../../src/money/ledger/ledger';

let s: TestServer;
before(async () => {
  s = await startTestServer({ simDelaySeconds: 2 });
});
after(() => s.close());

function refund(id: string, body?: unknown, headers?: Record<string, string>, key?: string) {
  return s.request('POST', `/v1/public/payments/${id}/refund`, { body, headers, key });
}

test('a partial refund is created pending, settles after the sim delay, and sends payment.refunded', async () => {
  const p = await succeededPayment(s, 10000);
  const r = await refund(p.id, { amount: 3000, reason: 'broken item' });
  assert.equal(r.status, 201);
  assert.equal(r.body.status, 'pending');
  assert.equal(r.body.amount, 3000);
  assert.equal(r.body.reason, 'broken item');
  assert.equal('completed_at' in r.body, false);
  await advance(s, 1);
  let g = await getPayment(s, p.id);
  assert.equal(g.refunds[0].status, 'pending');
  assert.equal(g.amount_refunded, 0);
  await advance(s, 2);
  g = await getPayment(s, p.id);
  assert.equal(g.refunds[0].status, 'succeeded');
  assert.ok(g.refunds[0].completed_at);
  assert.equal(g.amount_refunded, 3000);
  assert.equal(g.status, 'succeeded', 'a partially refunded payment stays succeeded');
  const ev = (await eventsOf(s, p.id)).filter((e) => e.kind.startsWith('refund.'));
  assert.deepEqual(ev.map((e) => [e.kind, e.webhook_event]), [
    ['refund.created', null],
    ['refund.status_changed', 'payment.refunded'],
  ]);
  assert.deepEqual(ev[0].payload, { id: r.body.id, payment_id: p.id, amount: 3000, status: 'pending' });
  assert.deepEqual(ev[1].payload, { id: r.body.id, payment_id: p.id, amount: 3000, status: 'succeeded' });
  assert.equal(ev[1].webhook_data.amount_refunded, 3000);
  const audit = await s.store.get('SELECT key_id, amount, reason FROM refund_audit WHERE refund_id = ?', r.body.id);
  assert.deepEqual(audit, { key_id: s.demo.keyId, amount: 3000, reason: 'broken item' });
});

test('omitted or 0 amount refunds the remainder; reaching the amount makes the payment refunded', async () => {
  const p = await succeededPayment(s, 5000);
  await refund(p.id, { amount: 2000 });
  const rest = await refund(p.id, { amount: 0 });
  assert.equal(rest.body.amount, 3000);
  await advance(s, 3);
  const g = await getPayment(s, p.id);
  assert.equal(g.status, 'refunded');
  assert.equal(g.amount_refunded, 5000);
  const kinds = (await eventsOf(s, p.id)).map((e) => e.webhook_event).filter(Boolean);
  assert.deepEqual(kinds, ['payment.succeeded', 'payment.refunded', 'payment.refunded']);
  const again = await refund(p.id);
  assert.equal(again.status, 409);
  assert.match(again.body.error.message, /refunded/);
});

test('over the remainder (pending refunds included) is 422 amount_exceeds_refundable', async () => {
  const p = await succeededPayment(s, 1000);
  assert.equal((await refund(p.id, { amount: 600 })).status, 201);
  const over = await refund(p.id, { amount: 401 });
  assert.equal(over.status, 422);
  assert.equal(over.body.error.code, 'amount_exceeds_refundable');
  assert.equal(over.body.error.param, 'amount');
  assert.match(over.body.error.message, /401 exceeds refundable 400/);
  assert.deepEqual((await getPayment(s, p.id)).refunds.map((x: { amount: number }) => x.amount), [600], 'the refused refund wrote nothing');
});

test('refunds of payments that did not succeed are 409 invalid_state', async () => {
  const pending = await createPayment(s, { amount: 1000 });
  const r = await refund(pending.payment.id, { amount: 100 });
  assert.equal(r.status, 409);
  assert.equal(r.body.error.code, 'invalid_state');
  assert.match(r.body.error.message, /pending/);
  assert.deepEqual((await getPayment(s, pending.payment.id)).refunds, []);
  const failed = await createPayment(s, { amount: 1001, method: 'sbp' });
  await simulate(s, failed.payment.id, { action: 'open_session' });
  await simulate(s, failed.payment.id, { action: 'fail' });
  const f = await refund(failed.payment.id);
  assert.equal(f.status, 409);
  assert.equal(f.body.error.code, 'invalid_state');
  assert.match(f.body.error.message, /failed/);
  assert.deepEqual((await getPayment(s, failed.payment.id)).refunds, []);
});

test('refund validation: bad amount and unknown fields are 400 naming them', async () => {
  const p = await succeededPayment(s, 1000);
  for (const [body, param] of [
    [{ amount: -1 }, 'amount'],
    [{ amount: 1.5 }, 'amount'],
    [{ amount: '5' }, 'amount'],
    [{ amount: null }, 'amount'],
    [{ reason: 7 }, 'reason'],
    [{ amount: 5, note: 'x' }, 'note'],
  ] as const) {
    const r = await refund(p.id, body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.body.error.code, 'bad_request');
    assert.equal(r.body.error.param, param);
  }
  assert.deepEqual((await getPayment(s, p.id)).refunds, [], 'no refund written');
  assert.deepEqual((await eventsOf(s, p.id)).filter((e) => e.kind.startsWith('refund.')), []);
});

test('a test refund whose amount ends in 01 fails do_not_honor and frees its amount', async () => {
  const p = await succeededPayment(s, 10000);
  const r = await refund(p.id, { amount: 501 });
  await advance(s, 3);
  const g = await getPayment(s, p.id);
  assert.equal(g.refunds[0].status, 'failed');
  assert.equal(g.refunds[0].failure_code, 'do_not_honor');
  assert.equal(g.amount_refunded, 0);
  const ev = (await eventsOf(s, p.id)).at(-1)!;
  assert.deepEqual(ev.payload, { id: r.body.id, payment_id: p.id, amount: 501, status: 'failed' });
  assert.equal(ev.webhook_event, null);
  assert.equal((await refund(p.id)).body.amount, 10000);
});

test('refund Idempotency-Key replays the refund without a second one', async () => {
  const p = await succeededPayment(s, 10000);
  const headers = { 'Idempotency-Key': `refund-${p.id}` };
  const a = await refund(p.id, { amount: 100 }, headers);
  const b = await refund(p.id, { amount: 100 }, headers);
  assert.equal(a.status, 201);
  assert.equal(b.status, 200);
  assert.equal(b.body.idempotent, true);
  assert.equal(b.body.id, a.body.id);
  assert.equal((await getPayment(s, p.id)).refunds.length, 1);
});

test('50 concurrent partial refunds never exceed the amount', async () => {
  const p = await succeededPayment(s, 3000);
  const results = await Promise.all(Array.from({ length: 50 }, () => refund(p.id, { amount: 100 })));
  const created = results.filter((r) => r.status === 201).length;
  const refused = results.filter((r) => r.status === 422).length;
  assert.equal(created, 30);
  assert.equal(refused, 20);
  await advance(s, 3);
  const g = await getPayment(s, p.id);
  assert.equal(g.amount_refunded, 3000);
  assert.equal(g.status, 'refunded');
  assert.equal(g.refunds.length, 30);
});

test('live refunds never reach the simulator: the shop\'s acquirer answers them', async () => {
  const live = await s.newShop({ mode: 'live' });
  await s.store.write(async (tx) => tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', live.merchantId));
  const c = await createPayment(s, { amount: 1000, method: 'sbp' }, live.key);
  // Mark it succeeded and credit the live book by hand, without the acquirer ever taking the payment.
  await s.store.write(async (tx) => {
    await tx.run(`UPDATE payments SET status = 'succeeded' WHERE id = ?`, c.payment.id);
    await post(tx, { merchantId: live.merchantId, shopId: live.shopId, mode: 'live' }, 'payment_succeeded', c.payment.id, 1000, Date.now());
  });
  const r = await refund(c.payment.id, { amount: 100 }, undefined, live.key);
  assert.equal(r.status, 201);
  await s.running.app.scheduler.runDue();
  const jobs = await s.store.all<{ kind: string }>(`SELECT kind FROM jobs WHERE subject_id = ?`, r.body.id);
  assert.deepEqual(jobs, [], 'no simulator job for it');
  const sent = await s.store.all<{ operation: string }>(`SELECT operation FROM bank_requests WHERE subject_id = ?`, r.body.id);
  assert.deepEqual(sent.map((x) => x.operation), ['Cancel'], 'the acquirer was asked');
  // The bank never took this payment, so it refuses the refund.
  assert.equal((await getPayment(s, c.payment.id, live.key)).refunds[0].status, 'failed');
});

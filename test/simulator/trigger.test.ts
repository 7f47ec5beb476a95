import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer, type TestShop } from '../helpers/server';
import { receiverPool, type Receiver } from '../helpers/webhooks';
import { openSse } from '../helpers/sse-client';
import { addEndpoint } from '../../src/money/webhooks/store';
import { checkLedger } from '../../src/money/ledger/check';
import { TRIGGER_EVENT_NAMES, type TriggerEvent } from '../../src/banks/simulator/trigger-events';

// POST /v1/test/trigger over real HTTP against a real server and database. The server's test bank answers only
// after 600 s: every trigger must finish without it (and without moving the shop's test clock).

let s: TestServer;
let shop: TestShop;
let rcv: Receiver;
const pool = receiverPool();
/** The shop's test clock is moved once before the triggers: they must leave it exactly there. */
const OFFSET_S = 3600;

before(async () => {
  s = await startTestServer({ simDelaySeconds: 600 });
  shop = await s.newShop();
  rcv = await pool.receiver();
  await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url + '/hook' }, Date.now());
  const r = await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: OFFSET_S } });
  assert.equal(r.status, 200, r.text);
});
after(async () => {
  await pool.closeAll();
  await s.close();
});

async function trigger(event: unknown, key = shop.key) {
  return s.request('POST', '/v1/test/trigger', { key, body: { event } });
}

async function clockOffset(key = shop.key): Promise<number> {
  const r = await s.request('GET', '/v1/test/clock', { key });
  assert.equal(r.status, 200, r.text);
  return r.body.offset_seconds;
}

async function countRows(table: string, shopId: string): Promise<number> {
  return (await s.store.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table} WHERE shop_id = ?`, shopId))!.n;
}

/** What each event leaves behind, checked on the answer's objects (all final: nothing waits for the test bank). */
const EXPECT: Record<TriggerEvent, (b: any) => void> = {
  'payment.succeeded': (b) => assert.equal(b.payment.status, 'succeeded'),
  'payment.failed': (b) => {
    assert.equal(b.payment.status, 'failed');
    assert.equal(b.payment.metadata.failure_code, 'do_not_honor');
  },
  'payment.cancelled': (b) => assert.equal(b.payment.status, 'cancelled'),
  'payment.expired': (b) => {
    assert.equal(b.payment.status, 'expired');
    assert.equal(b.payment.metadata.failure_code, 'link_expired');
  },
  'payment.refunded': (b) => {
    assert.equal(b.payment.status, 'refunded');
    assert.equal(b.refund.status, 'succeeded');
    assert.equal(b.refund.amount, b.payment.amount);
  },
  'payout.succeeded': (b) => assert.equal(b.payout.status, 'succeeded'),
  'payout.failed': (b) => {
    assert.equal(b.payout.status, 'failed');
    assert.equal(b.payout.fail_reason, 'do_not_honor');
  },
  'subscription.activated': (b) => {
    assert.equal(b.subscription.status, 'active');
    assert.equal(b.token.status, 'active');
    assert.equal(b.token.card_mask, '0004');
  },
  'subscription.charge_succeeded': (b) => {
    assert.equal(b.subscription.status, 'active');
    assert.equal(b.subscription.latest_charge.kind, 'subscription_charge');
    assert.equal(b.payment.status, 'succeeded');
  },
  'subscription.charge_failed': (b) => {
    assert.equal(b.subscription.status, 'past_due');
    assert.equal(b.payment.status, 'failed');
    assert.equal(b.payment.metadata.failure_code, 'insufficient_funds');
  },
  'subscription.past_due': (b) => {
    assert.equal(b.subscription.status, 'past_due');
    assert.equal(b.subscription.failed_charges, 1);
  },
  'subscription.cancelled': (b) => {
    assert.equal(b.subscription.status, 'cancelled');
    assert.equal(b.subscription.cancel_reason, 'merchant_request');
  },
  'token.activated': (b) => {
    assert.equal(b.token.status, 'active');
    // The 1 RUB verification was returned, and its refund settled, before the answer.
    assert.equal(b.payment.status, 'refunded');
  },
  'token.cancelled': (b) => assert.equal(b.token.status, 'cancelled'),
};

test('every listed event is triggered through the route: its webhook is in the delivery log at once, and the test clock stays', async () => {
  const ids: string[] = [];
  for (const event of TRIGGER_EVENT_NAMES) {
    const r = await trigger(event);
    assert.equal(r.status, 201, `${event}: ${r.text}`);
    assert.equal(r.body.event, event);
    assert.ok(r.body.webhooks.some((w: any) => w.id === r.body.event_id && w.event === event), `${event}: ${r.text}`);
    EXPECT[event](r.body);
    // The answer comes after the commit: the delivery of the event is already logged (pending or attempted).
    const log = await s.request('GET', `/v1/test/webhooks/deliveries?event_id=${r.body.event_id}`, { key: shop.key });
    assert.equal(log.status, 200, log.text);
    assert.ok(log.body.items.length > 0 && log.body.items.every((i: any) => i.event === event), `${event}: ${log.text}`);
    assert.equal(await clockOffset(), OFFSET_S, `${event} moved the test clock`);
    ids.push(r.body.event_id);
  }
  // And each is delivered to the shop's endpoint as any other webhook.
  const deadline = Date.now() + 10_000;
  const delivered = () => new Set(rcv.received.map((x) => JSON.parse(x.body).id as string));
  while (ids.some((id) => !delivered().has(id)) && Date.now() < deadline) await new Promise((res) => setTimeout(res, 20));
  assert.deepEqual(ids.filter((id) => !delivered().has(id)), []);
  const ledger = await checkLedger(s.store);
  assert.ok(ledger.ok, ledger.problems.join('\n'));
});

test('a payout trigger funds the payout with a payment only when the available balance falls short', async () => {
  const fresh = await s.newShop();
  const first = await trigger('payout.succeeded', fresh.key);
  assert.equal(first.status, 201, first.text);
  assert.equal(first.body.payment.status, 'succeeded');
  assert.deepEqual(first.body.webhooks.map((w: any) => w.event), ['payment.succeeded', 'payout.succeeded']);
  // The failed payout gave its reserve back, so a second trigger finds the money there.
  const failed = await trigger('payout.failed', fresh.key);
  assert.equal(failed.status, 201, failed.text);
  const again = await trigger('payout.succeeded', fresh.key);
  assert.equal(again.status, 201, again.text);
  assert.equal(again.body.payment, undefined, again.text);
  assert.deepEqual(again.body.webhooks.map((w: any) => w.event), ['payout.succeeded']);
});

test('the stream of the key carries the events of a trigger', async () => {
  const sse = await openSse(s.url, shop.key);
  try {
    const r = await trigger('payment.succeeded');
    assert.equal(r.status, 201, r.text);
    const frames = await sse.waitEvents(3, 5000);
    const kinds = frames.map((f) => f.event);
    assert.ok(kinds.includes('payment.status_changed'), JSON.stringify(frames));
    assert.ok(frames.some((f) => f.data?.includes(r.body.payment.id)), JSON.stringify(frames));
  } finally {
    sse.close();
  }
});

test('bad input is refused in the documented shape and changes nothing', async () => {
  const fresh = await s.newShop();
  const cases: Array<[unknown, number, string, RegExp]> = [
    [{ event: 'payment.teleported' }, 400, 'event', /^Cannot trigger event "payment\.teleported": it is not one kopek sends; the events are payment\.succeeded, /],
    [{}, 400, 'event', /field "event" is required: one of payment\.succeeded, /],
    [{ event: 42 }, 400, 'event', /^Cannot trigger event 42/],
    [{ event: 'payment.succeeded', amount: 5 }, 400, 'amount', /unknown field "amount"; allowed: event, set$/],
  ];
  for (const [body, status, param, message] of cases) {
    const r = await s.request('POST', '/v1/test/trigger', { key: fresh.key, body });
    assert.equal(r.status, status, r.text);
    assert.equal(r.body.error.code, 'bad_request');
    assert.equal(r.body.error.param, param);
    assert.match(r.body.error.message, message);
  }
  assert.equal(await countRows('payments', fresh.shopId), 0);
  assert.equal(await countRows('events', fresh.shopId), 0);
});

test('a live key gets 404, as on every test helper, and nothing happens in either mode', async () => {
  const live = await s.newShop({ mode: 'live' });
  await s.store.write(async (tx) => tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', live.merchantId));
  const r = await trigger('payment.succeeded', live.key);
  assert.equal(r.status, 404, r.text);
  assert.equal(r.body.error.code, 'not_found');
  assert.equal(await countRows('payments', live.shopId), 0);
  assert.equal(await countRows('events', live.shopId), 0);
});

test('a key without the scope of the objects is refused with 403 and nothing is written', async () => {
  const narrow = await s.newShop({ keyScopes: 'api:reports:read' });
  for (const [event, scope] of [
    ['payout.succeeded', 'api:payouts:sbp'],
    ['subscription.activated', 'api:recurrent:bind'],
    ['token.cancelled', 'api:recurrent:bind'],
  ]) {
    const r = await trigger(event, narrow.key);
    assert.equal(r.status, 403, r.text);
    assert.equal(r.body.error.code, 'scope_required');
    assert.equal(r.body.error.message, `Cannot trigger ${event}: the key needs scope "${scope}"`);
  }
  assert.equal(await countRows('payments', narrow.shopId), 0);
  // Payments need no scope, as POST /v1/public/payments needs none.
  assert.equal((await trigger('payment.cancelled', narrow.key)).status, 201);
});

test("a trigger acts in the key's shop only: another shop sees none of it", async () => {
  const a = await s.newShop();
  const b = await s.newShop();
  const r = await trigger('payment.refunded', a.key);
  assert.equal(r.status, 201, r.text);
  const logB = await s.request('GET', '/v1/test/webhooks/deliveries', { key: b.key });
  assert.deepEqual(logB.body.items, []);
  assert.equal((await s.request('GET', `/v1/public/payments/${r.body.payment.id}`, { key: b.key })).status, 404);
  assert.equal(r.body.payment.shop_id, a.shopId);
});

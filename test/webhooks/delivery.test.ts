import { getShop } from '../../src/money/shops/store';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { startTestServer, type TestServer } from '../helpers/server';
import { appendWebhookEvent, receiverPool, waitForLog } from '../helpers/webhooks';
import { addEndpoint, listEndpoints, rotateSecret } from '../../src/money/webhooks/store';
import { runCli } from '../helpers/cli';

let s: TestServer;
const { receiver, closeAll } = receiverPool();
before(async () => {
  s = await startTestServer();
});
after(async () => {
  await closeAll();
  await s.close();
});

/** A Stripe-style verifier written from the header format alone: `t=`, any `v1=` matching, 300 s tolerance. */
function stripeStyleVerify(header: string, body: string, secret: string, now_s: number): boolean {
  const parts = header.split(',').map((p) => p.split('='));
  const t = parts.find(([k]) => k === 't')?.[1];
  if (!t || Math.abs(now_s - Number(t)) > 300) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest();
  return parts.some(([k, v]) => k === 'v1' && v.length === 64 && timingSafeEqual(Buffer.from(v, 'hex'), expected));
}

test('a v2 endpoint gets the spec body and headers, verifiable with node:crypto and a Stripe-style verifier', async () => {
  const shop = await s.newShop();
  const rcv = await receiver();
  const { secret } = await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url + '/hook' }, Date.now());
  const ev = await appendWebhookEvent(s, shop, { data: { id: 'p1', status: 'succeeded', metadata: { note: 'ünïcode' } } });
  const got = await rcv.waitFor(1);
  assert.equal(got.method, 'POST');
  assert.equal(got.path, '/hook');
  assert.equal(got.headers['content-type'], 'application/json');
  assert.equal(got.headers['user-agent'], 'psp-webhook/1.0');
  assert.equal(got.headers['x-psp-event-id'], ev.id);
  const body = JSON.parse(got.body);
  assert.deepEqual(Object.keys(body), ['id', 'event', 'created_at', 'data']);
  assert.equal(body.id, ev.id);
  assert.match(body.id, /^evt_[0-9A-Z]{26}$/);
  assert.equal(body.event, 'payment.succeeded');
  assert.equal(body.created_at, new Date(ev.at).toISOString());
  assert.deepEqual(body.data, { id: 'p1', status: 'succeeded', metadata: { note: 'ünïcode' } });
  const ts = String(got.headers['x-psp-timestamp']);
  assert.ok(Math.abs(Number(ts) - Date.now() / 1000) < 5, 'timestamp is real time of the attempt');
  const sig = String(got.headers['x-psp-signature']);
  const hex = createHmac('sha256', secret).update(`${ts}.${got.body}`).digest('hex');
  assert.equal(sig, `t=${ts},v1=${hex},v2=${hex}`);
  assert.ok(stripeStyleVerify(sig, got.body, secret, Math.floor(Date.now() / 1000)));
  assert.ok(!stripeStyleVerify(sig, got.body.replace('p1', 'p2'), secret, Math.floor(Date.now() / 1000)), 'a changed body fails');
  assert.ok(!stripeStyleVerify(sig, got.body, secret, Math.floor(Date.now() / 1000) + 301), 'a stale timestamp fails');
  const items = await waitForLog(s, `event_id=${ev.id}`, (it) => it.length === 1 && it[0].status === 'succeeded', { key: shop.key });
  assert.equal(items[0].attempt, 1);
  assert.equal(items[0].response_code, 200);
  assert.equal(items[0].url, rcv.url + '/hook');
  assert.equal(items[0].next_attempt_at, null);
});

test('a test clock moved forward changes created_at but never the signature timestamp', async () => {
  const shop = await s.newShop();
  const rcv = await receiver();
  await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url }, Date.now());
  await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: 86_400 } });
  const ev = await appendWebhookEvent(s, shop);
  const got = await rcv.waitFor(1);
  assert.ok(Date.parse(JSON.parse(got.body).created_at) - Date.now() > 86_000_000, 'created_at is on the shop clock');
  assert.equal(JSON.parse(got.body).created_at, new Date(ev.at).toISOString());
  assert.ok(Math.abs(Number(got.headers['x-psp-timestamp']) - Date.now() / 1000) < 5, 't is real time');
});

test('a legacy v1 endpoint gets sha256=<hex of HMAC(body)>', async () => {
  const shop = await s.newShop();
  const rcv = await receiver();
  const { secret } = await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url, signature: 'v1' }, Date.now());
  await appendWebhookEvent(s, shop);
  const got = await rcv.waitFor(1);
  assert.equal(got.headers['x-psp-signature'], `sha256=${createHmac('sha256', secret).update(got.body).digest('hex')}`);
});

test("events of one shop never reach another shop's endpoint; filters pick events", async () => {
  const a = await s.newShop();
  const b = await s.newShop();
  const ra = await receiver();
  const rb = await receiver();
  const rFiltered = await receiver();
  await addEndpoint(s.store, { shopId: a.shopId, url: ra.url }, Date.now());
  await addEndpoint(s.store, { shopId: b.shopId, url: rb.url }, Date.now());
  await addEndpoint(s.store, { shopId: a.shopId, url: rFiltered.url, events: 'payout.failed' }, Date.now());
  const evA = await appendWebhookEvent(s, a);
  const evB = await appendWebhookEvent(s, b);
  const evPayout = await appendWebhookEvent(s, a, { event: 'payout.failed', kind: 'payout.status_changed' });
  await ra.waitFor(2);
  await rb.waitFor(1);
  await rFiltered.waitFor(1);
  const idsA = ra.received.map((r) => r.headers['x-psp-event-id']).sort();
  assert.deepEqual(idsA, [evA.id, evPayout.id].sort());
  assert.deepEqual(rb.received.map((r) => r.headers['x-psp-event-id']), [evB.id]);
  assert.deepEqual(rFiltered.received.map((r) => r.headers['x-psp-event-id']), [evPayout.id]);
  const logB = await s.request('GET', `/v1/test/webhooks/deliveries?event_id=${evA.id}`, { key: b.key });
  assert.deepEqual(logB.body.items, [], "another shop's log does not show the event");
});

test("a payment's own webhook_url replaces the endpoints and is signed with the oldest endpoint's secret, else the shop's fallback", async () => {
  const shop = await s.newShop();
  const own = await receiver();
  const fallback = (await getShop(s.store, shop.shopId))!;
  const paymentId = crypto.randomUUID();
  await appendWebhookEvent(s, shop, { url: own.url + '/own', paymentId });
  const first = await own.waitFor(1);
  const t1 = first.headers['x-psp-timestamp'];
  assert.equal(first.headers['x-psp-signature'], `t=${t1},v1=${hmac(fallback.webhook_secret, `${t1}.${first.body}`)},v2=${hmac(fallback.webhook_secret, `${t1}.${first.body}`)}`);

  const endpointRcv = await receiver();
  const older = await addEndpoint(s.store, { shopId: shop.shopId, url: endpointRcv.url, signature: 'v1' }, Date.now() - 1000);
  await addEndpoint(s.store, { shopId: shop.shopId, url: endpointRcv.url }, Date.now());
  await appendWebhookEvent(s, shop, { url: own.url + '/own', paymentId });
  const second = await own.waitFor(2);
  assert.equal(second.headers['x-psp-signature'], `sha256=${hmac(older.secret, second.body)}`);
  assert.equal(endpointRcv.received.length, 0, 'the shop endpoints do not get events of a payment with its own URL');
  const items = await waitForLog(s, `payment_id=${paymentId}`, (it) => it.length === 2 && it.every((i: any) => i.status === 'succeeded'), { key: shop.key });
  assert.ok(items.every((i: any) => i.url === own.url + '/own'));
});

test('rotation: without overlap the old secret stops at once; with overlap the header carries a pair per valid secret', async () => {
  const shop = await s.newShop();
  const rcv = await receiver();
  const { endpoint, secret: s1 } = await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url }, Date.now());
  const s2 = await rotateSecret(s.store, endpoint.id, 0, Date.now());
  await appendWebhookEvent(s, shop);
  let got = await rcv.waitFor(1);
  let t = got.headers['x-psp-timestamp'];
  assert.equal(got.headers['x-psp-signature'], `t=${t},v1=${hmac(s2, `${t}.${got.body}`)},v2=${hmac(s2, `${t}.${got.body}`)}`);
  assert.ok(!String(got.headers['x-psp-signature']).includes(hmac(s1, `${t}.${got.body}`)));

  const s3 = await rotateSecret(s.store, endpoint.id, 2, Date.now());
  await appendWebhookEvent(s, shop);
  got = await rcv.waitFor(2);
  t = got.headers['x-psp-timestamp'];
  const h3 = hmac(s3, `${t}.${got.body}`);
  const h2 = hmac(s2, `${t}.${got.body}`);
  assert.equal(got.headers['x-psp-signature'], `t=${t},v1=${h3},v2=${h3},v1=${h2},v2=${h2}`);
  assert.ok(stripeStyleVerify(String(got.headers['x-psp-signature']), got.body, s2, Math.floor(Date.now() / 1000)), 'a receiver still on the old secret accepts');
});

test('a 410 answer disables the endpoint (listed with the reason) and stops retries', async () => {
  const shop = await s.newShop();
  const rcv = await receiver(() => ({ status: 410 }));
  const { endpoint } = await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url }, Date.now());
  const ev = await appendWebhookEvent(s, shop);
  const items = await waitForLog(s, `event_id=${ev.id}`, (it) => it.length === 1 && it[0].status === 'failed', { key: shop.key });
  assert.equal(items[0].response_code, 410);
  assert.equal(items[0].next_attempt_at, null);
  const listed = (await listEndpoints(s.store, shop.shopId)).find((e) => e.id === endpoint.id)!;
  assert.ok(listed.disabled_at);
  assert.match(String(listed.disabled_reason), /410/);
  assert.ok(s.logs.some((l) => l.includes('webhook endpoint disabled') && l.includes(endpoint.id)));
  const ev2 = await appendWebhookEvent(s, shop);
  const log2 = await s.request('GET', `/v1/test/webhooks/deliveries?event_id=${ev2.id}`, { key: shop.key });
  assert.deepEqual(log2.body.items, [], 'a disabled endpoint gets no new deliveries');
});

test('after a 410, delete + add + resend (the recovery doctor advises) delivers the missed event to the new endpoint', async () => {
  const shop = await s.newShop();
  let gone = true;
  const rcv = await receiver(() => ({ status: gone ? 410 : 200 }));
  const first = await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url }, Date.now());
  const ev = await appendWebhookEvent(s, shop);
  await waitForLog(s, `event_id=${ev.id}`, (it) => it.length === 1 && it[0].status === 'failed', { key: shop.key });
  gone = false;
  assert.equal((await runCli(['webhook', 'delete', first.endpoint.id, '--db', s.dbPath])).code, 0);
  const again = await runCli(['webhook', 'add', '--shop', shop.shopId, '--url', rcv.url, '--db', s.dbPath, '--json']);
  assert.equal(again.code, 0, again.err);
  const resent = await runCli(['webhook', 'resend', ev.id, '--db', s.dbPath, '--json']);
  assert.equal(resent.code, 0, resent.err);
  assert.equal(resent.json.requeued, 1);
  const got = await rcv.waitFor(2);
  assert.equal(got.headers['x-psp-event-id'], ev.id);
  const t = String(got.headers['x-psp-timestamp']);
  assert.match(String(got.headers['x-psp-signature']), new RegExp(`v2=${hmac(again.json.secret, `${t}.${got.body}`)}`), 'signed with the new endpoint secret');
  const items = await waitForLog(s, `event_id=${ev.id}`, (it) => it.some((i: any) => i.status === 'succeeded'), { key: shop.key });
  assert.deepEqual(items.map((i: any) => [i.attempt, i.status, i.response_code]), [[1, 'failed', 410], [1, 'succeeded', 200]]);
  // An event no enabled endpoint takes cannot be resent: saying so beats queuing a delivery that is dropped.
  assert.equal((await runCli(['webhook', 'delete', again.json.id, '--db', s.dbPath])).code, 0);
  const none = await runCli(['webhook', 'resend', ev.id, '--db', s.dbPath]);
  assert.equal(none.code, 1);
  assert.match(none.err, /cannot resend event "evt_\w+": no enabled webhook endpoint of shop ".*" takes payment\.succeeded/);
});

test('redirects are not followed: a 302 is a failed attempt and the target is never called', async () => {
  const shop = await s.newShop();
  const target = await receiver();
  const rcv = await receiver(() => ({ status: 302 }));
  await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url }, Date.now());
  const ev = await appendWebhookEvent(s, shop);
  const items = await waitForLog(s, `event_id=${ev.id}`, (it) => it.some((i: any) => i.status === 'failed'), { key: shop.key });
  assert.equal(items[0].response_code, 302);
  assert.ok(items[0].next_attempt_at, 'a retry is scheduled');
  assert.equal(target.received.length, 0);
});

test('the delivery log rejects malformed filters and live keys', async () => {
  const bad = await s.request('GET', '/v1/test/webhooks/deliveries?event_id=nope');
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.param, 'event_id');
  const unknown = await s.request('GET', '/v1/test/webhooks/deliveries?status=failed');
  assert.equal(unknown.status, 400);
  const live = await s.newShop({ mode: 'live' });
  await s.store.write(async (tx) => {
    await tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', live.merchantId);
  });
  const r = await s.request('GET', '/v1/test/webhooks/deliveries', { key: live.key });
  assert.equal(r.status, 404);
});

function hmac(secret: string, text: string): string {
  return createHmac('sha256', secret).update(text).digest('hex');
}

test('POST /v1/test/reset deletes test deliveries and attempts but keeps endpoints', async () => {
  const shop = await s.newShop();
  const rcv = await receiver();
  await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url }, Date.now());
  const ev = await appendWebhookEvent(s, shop);
  await waitForLog(s, `event_id=${ev.id}`, (it) => it[0]?.status === 'succeeded', { key: shop.key });
  const r = await s.request('POST', '/v1/test/reset', { key: shop.key });
  assert.equal(r.status, 200);
  assert.equal(r.body.deleted.webhook_deliveries, 1);
  assert.equal(r.body.deleted.webhook_attempts, 1);
  assert.equal((await listEndpoints(s.store, shop.shopId)).length, 1);
  await appendWebhookEvent(s, shop);
  await rcv.waitFor(2);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTestServer, type TestServer, type TestResponse } from '../helpers/server';
import { cabPost, makeUser, signIn, type CabinetSession } from '../helpers/cabinet';
import { addEndpoint } from '../../src/money/webhooks/store';
import { createKey } from '../../src/money/shops/store';

// Regression: a 404 for another merchant's key, webhook endpoint or event named that merchant's shop ("Cannot
// find shop <id>") while an unknown id said "Cannot find key …". Both now answer the same, revealing nothing:
// in the cabinet, and in the API for another shop's objects.

let s: TestServer;
let session: CabinetSession;
const other = { shopId: '', keyId: '', endpointId: '', eventId: '', paymentId: '', payoutId: '', tokenId: '', subscriptionId: '', key: '' };
before(async () => {
  s = await startTestServer();
  // The victim: the demo merchant's shop, with a key, an endpoint, a payment and its event.
  other.shopId = s.demo.shopId;
  other.keyId = (await createKey(s.store, s.demo.shopId, 'test', undefined, Date.now())).key.id;
  other.endpointId = (await addEndpoint(s.store, { shopId: s.demo.shopId, url: 'http://127.0.0.1:9/hook' }, Date.now())).endpoint.id;
  const p = await s.request('POST', '/v1/public/payments', { body: { amount: 10_000 } });
  other.paymentId = p.body.payment.id;
  other.eventId = (await s.store.get<{ id: string }>('SELECT id FROM events WHERE payment_id = ? ORDER BY seq LIMIT 1', other.paymentId))!.id;
  // A payout, a token and a subscription of that shop, made through the trigger helper.
  const made = async (event: string, object: string): Promise<string> => {
    const r = await s.request('POST', '/v1/test/trigger', { body: { event } });
    assert.equal(r.status, 201, r.text);
    return r.body[object].id as string;
  };
  other.payoutId = await made('payout.succeeded', 'payout');
  other.tokenId = await made('token.activated', 'token');
  other.subscriptionId = await made('subscription.activated', 'subscription');
  // The one who probes: another merchant with a cabinet user and an API key.
  const mine = await s.newShop();
  other.key = mine.key;
  await makeUser(s, mine.merchantId, 'prober@shop.example');
  session = await signIn(s, 'prober@shop.example');
});
after(() => s.close());

/** The answer with the id asked for replaced, so an unknown id's answer and another's can be compared whole. */
function shape(r: TestResponse, id: string): string {
  // A page's nonce and the request id differ on every answer.
  return `${r.status} ${r.text.split(id).join('<id>').replace(/nonce="[^"]+"/g, '').replace(/"request_id":"[^"]+"/g, '')}`;
}

async function sameAsUnknown(what: string, path: (id: string) => string, theirs: string, unknown: string): Promise<void> {
  const a = await cabPost(s, session, path(theirs), {});
  const b = await cabPost(s, session, path(unknown), {});
  assert.equal(a.status, 404, `${what}: ${a.text.slice(0, 200)}`);
  assert.equal(shape(a, theirs), shape(b, unknown), `${what}: another merchant's answers as an unknown one`);
  if (theirs !== other.shopId) assert.ok(!a.text.includes(other.shopId), `${what}: the owner's shop is not named`);
}

test("a 404 for another merchant's key, endpoint or event named that merchant's shop: now the same as an unknown id", async () => {
  await sameAsUnknown('key revoke', (id) => `/cabinet/keys/${id}/revoke`, other.keyId, randomUUID());
  await sameAsUnknown('endpoint rotate', (id) => `/cabinet/webhooks/${id}/rotate`, other.endpointId, randomUUID());
  await sameAsUnknown('endpoint delete', (id) => `/cabinet/webhooks/${id}/delete`, other.endpointId, randomUUID());
  await sameAsUnknown('event resend', (id) => `/cabinet/events/${id}/resend`, other.eventId, 'evt_01JD3Q9W2K8X5N7B4M6R0T2Y8V');
  await sameAsUnknown('payment refund', (id) => `/cabinet/payments/${id}/refund`, other.paymentId, randomUUID());
  await sameAsUnknown('shop scopes', (id) => `/cabinet/shops/${id}/scopes`, other.shopId, randomUUID());
  // Nothing changed for the owner.
  assert.equal((await s.store.get<{ revoked_at: number | null }>('SELECT revoked_at FROM api_keys WHERE id = ?', other.keyId))?.revoked_at, null);
  assert.ok(await s.store.get('SELECT 1 FROM webhook_endpoints WHERE id = ?', other.endpointId));
});

test("the API answers another shop's objects as unknown ones", async () => {
  for (const [what, path] of [
    ['payment', (id: string) => `/v1/public/payments/${id}`],
    ['payout', (id: string) => `/v1/public/payouts/${id}`],
    ['token', (id: string) => `/v1/public/tokens/${id}`],
    ['subscription', (id: string) => `/v1/public/subscriptions/${id}`],
  ] as const) {
    const theirs = { payment: other.paymentId, payout: other.payoutId, token: other.tokenId, subscription: other.subscriptionId }[what];
    // The owner's key reads it: the object exists, so a 404 for the prober is its shop's boundary.
    assert.equal((await s.request('GET', path(theirs))).status, 200, `${what} exists`);
    const unknown = randomUUID();
    const a = await s.request('GET', path(theirs), { key: other.key });
    const b = await s.request('GET', path(unknown), { key: other.key });
    assert.equal(a.status, 404, `${what}: ${a.text}`);
    assert.equal(shape(a, theirs), shape(b, unknown), what);
  }
  const cancel = await s.request('POST', `/v1/public/payments/${other.paymentId}/cancel`, { key: other.key });
  assert.equal(cancel.status, 404);
  assert.ok(!cancel.text.includes(other.shopId));
  const deliveries = await s.request('GET', `/v1/test/webhooks/deliveries?payment_id=${other.paymentId}`, { key: other.key });
  assert.deepEqual(deliveries.body.items, [], "another shop's deliveries are not listed");
});

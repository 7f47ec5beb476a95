import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Stripe from 'stripe';
import { startTestServer, type TestServer } from '../helpers/server';
import { receiverPool } from '../helpers/webhooks';
import { succeededPayment } from '../helpers/payments';
import { addEndpoint, rotateSecret } from '../../src/money/webhooks/store';

// Merchants who already verify Stripe webhooks keep their code: the official SDK's constructEvent accepts
// kopek's v2 header as it is. No request leaves the process: constructEvent only computes HMACs.

const stripe = new Stripe('sk_test_unused_by_these_tests');
const doc = readFileSync(join(__dirname, '..', '..', 'docs', 'webhooks.md'), 'utf8');
const vectors = JSON.parse(/```json vectors\n([\s\S]*?)```/.exec(doc)![1]);

let s: TestServer;
const { receiver, closeAll } = receiverPool();
before(async () => {
  s = await startTestServer({ simDelaySeconds: 60 });
});
after(async () => {
  await closeAll();
  await s.close();
});

test('the Stripe SDK verifies a real payment.succeeded delivery; the kind is in "event", the object in "data"', async () => {
  const shop = await s.newShop();
  const rcv = await receiver();
  const { secret } = await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url + '/hook' }, Date.now());
  const paid = await succeededPayment(s, 15000, shop.key);
  const paymentId: string = paid.payment?.id ?? paid.id;
  const got = await rcv.waitFor(1);
  const header = String(got.headers['x-psp-signature']);

  const event = stripe.webhooks.constructEvent(got.body, header, secret) as unknown as { id: string; event: string; data: { id: string; status: string } };
  assert.equal(event.event, 'payment.succeeded');
  assert.equal((event as unknown as { type?: string }).type, undefined);
  assert.equal(event.data.id, paymentId);
  assert.equal(event.data.status, 'succeeded');
  assert.match(event.id, /^evt_[0-9A-Z]{26}$/);

  // Raw bytes as received: a Buffer works as well as the string.
  assert.equal((stripe.webhooks.constructEvent(Buffer.from(got.body), header, secret) as unknown as { id: string }).id, event.id);
});

test('the Stripe SDK refuses an altered body, another secret and a stale timestamp', async () => {
  const shop = await s.newShop();
  const rcv = await receiver();
  const { secret } = await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url + '/hook' }, Date.now());
  await succeededPayment(s, 15000, shop.key);
  const got = await rcv.waitFor(1);
  const header = String(got.headers['x-psp-signature']);
  const refused = (body: string, h: string, sec: string, tolerance?: number) =>
    assert.throws(() => stripe.webhooks.constructEvent(body, h, sec, tolerance), Stripe.errors.StripeSignatureVerificationError);
  refused(got.body.replace('"succeeded"', '"refunded"'), header, secret);
  refused(got.body, header, 'whs_not_the_endpoint_secret');
  // The documented vector was signed long ago: outside the SDK's default 300 s tolerance.
  refused(vectors.body, vectors.v2, vectors.secret);
});

test('during a rotation with overlap, the SDK accepts the header with either secret; the documented vectors verify at their time', async () => {
  const t = vectors.timestamp;
  for (const sec of [vectors.secret, vectors.old_secret]) {
    const e = stripe.webhooks.constructEvent(vectors.body, vectors.v2_overlap, sec, 300, undefined, t + 10) as unknown as { event: string };
    assert.equal(e.event, JSON.parse(vectors.body).event);
  }
  const shop = await s.newShop();
  const rcv = await receiver();
  const ep = await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url + '/hook' }, Date.now());
  const fresh = await rotateSecret(s.store, ep.endpoint.id, 24, Date.now());
  await succeededPayment(s, 15000, shop.key);
  const got = await rcv.waitFor(1);
  const header = String(got.headers['x-psp-signature']);
  for (const sec of [fresh, ep.secret]) assert.equal((stripe.webhooks.constructEvent(got.body, header, sec) as unknown as { event: string }).event, 'payment.succeeded');
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { startTestServer, type TestServer } from '../helpers/server';
import { startReceiver, type Receiver } from '../helpers/webhooks';

// One shop's receivers that accept and never answer must hold only their own share of the delivery slots.
// Attempts time out after 30 s: no hanging attempt ends (and frees its slot) while the test counts connections,
// however slow the machine is.
let s: TestServer;
/** 20 receivers (one origin each) that accept connections and never answer. */
const hangs: Server[] = [];
const hangUrls: string[] = [];
const held = new Set<Socket>();
let healthy: Receiver;
before(async () => {
  for (let i = 0; i < 20; i++) {
    const hang = createServer((sock) => {
      held.add(sock);
      sock.on('close', () => held.delete(sock));
    });
    await new Promise<void>((r) => hang.listen(0, '127.0.0.1', r));
    hangs.push(hang);
    hangUrls.push(`http://127.0.0.1:${(hang.address() as AddressInfo).port}`);
  }
  healthy = await startReceiver();
  s = await startTestServer({ webhookTimeoutMs: 30_000, simDelaySeconds: 3600 });
});
after(async () => {
  await s.close();
  for (const sock of held) sock.destroy();
  for (const hang of hangs) await new Promise((r) => hang.close(r));
  await healthy.close();
});

/** A succeeded test payment of the key's shop whose own webhook_url is `url`. */
async function paid(key: string, url: string): Promise<void> {
  const c = await s.request('POST', '/v1/public/payments', { key, body: { amount: 10_000, method: 'sbp', webhook_url: url } });
  assert.equal(c.status, 201, c.text);
  const id = c.body.payment.id;
  const opened = await s.request('POST', `/v1/test/payments/${id}/simulate`, { key, body: { action: 'open_session' } });
  assert.equal(opened.body.status, 'processing', opened.text);
  const ok = await s.request('POST', `/v1/test/payments/${id}/simulate`, { key, body: { action: 'succeed' } });
  assert.equal(ok.body.status, 'succeeded', ok.text);
}

test("one shop's hanging webhook receivers delay no other shop's webhooks", async () => {
  const noisy = await s.newShop();
  const quiet = await s.newShop();
  // 20 receivers of one shop that never answer, behind 160 payments.
  for (let i = 0; i < 160; i += 16) await Promise.all(Array.from({ length: 16 }, (_, j) => paid(noisy.key, `${hangUrls[(i + j) % 20]}/hook`)));
  for (let i = 0; i < 200 && held.size < 16; i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(held.size >= 16, `the hanging receivers hold ${held.size} connections`);
  const started = Date.now();
  await paid(quiet.key, `${healthy.url}/hook`);
  await healthy.waitFor(1, 3000);
  const waited_ms = Date.now() - started;
  assert.ok(waited_ms < 3000, `the other shop's webhook took ${waited_ms} ms`);
  assert.ok(held.size <= 16, `one shop holds at most its share of the slots, held ${held.size}`);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { startTestServer, type TestServer } from '../helpers/server';
import { openSse } from '../helpers/sse-client';
import { startReceiver, waitForLog } from '../helpers/webhooks';
import { encodeSse, encodeSseComment } from '../../src/money/events/sse';
import { addEndpoint } from '../../src/money/webhooks/store';
import type { TestShop } from '../helpers/server';
import { streamIdsOf, streamIdsOfShop } from '../helpers/pg';

let s: TestServer;
before(async () => {
  s = await startTestServer({ ssePingSeconds: 0.05 });
});
after(() => s.close());

async function append(shop: Pick<TestShop, 'merchantId' | 'shopId'>, n = 1, mode: 'test' | 'live' = 'test', payloadSize = 0): Promise<number[]> {
  const app = s.running.app;
  return app.store.tx(async (tx) => {
    const seqs: number[] = [];
    for (let i = 0; i < n; i++) {
      const row = await app.events.append(tx, {
        merchantId: shop.merchantId,
        shopId: shop.shopId,
        mode,
        kind: 'payment.created',
        payload: { id: `p${i}`, amount: 100 + i, status: 'pending', pad: 'x'.repeat(payloadSize) },
        at: await app.clocks.now(tx, shop.shopId, mode),
      });
      seqs.push(row.seq);
    }
    return seqs;
  }).then((seqs) => streamIdsOf(app.store, seqs));
}

test('the encoder is pure and refuses a newline in any field', () => {
  assert.equal(encodeSse({ id: 7, event: 'payment.created', data: '{"a":1}' }), 'id: 7\nevent: payment.created\ndata: {"a":1}\n\n');
  assert.equal(encodeSseComment('ping'), ': ping\n\n');
  assert.throws(() => encodeSse({ event: 'a\nb', data: '{}' }), /newline/);
  assert.throws(() => encodeSse({ id: '1\r', data: '{}' }), /newline/);
  assert.throws(() => encodeSse({ data: 'x\ny' }), /newline/);
  assert.throws(() => encodeSseComment('a\nb'), /newline/);
});

test("the stream starts with ': connected', carries a payment's life with ids, and pings", async () => {
  const c = await openSse(s.url, s.demo.key);
  assert.equal(c.status, 200);
  assert.match(String(c.headers['content-type']), /^text\/event-stream/);
  const rcv = await startReceiver();
  try {
    const created = await s.request('POST', '/v1/public/payments', { body: { amount: 15000, method: 'sbp', webhook_url: rcv.url + '/p' } });
    assert.equal(created.status, 201, created.text);
    const id = created.body.payment.id;
    assert.equal((await s.request('POST', `/v1/test/payments/${id}/simulate`, { body: { action: 'open_session' } })).status, 200);
    // With --sim-delay 0 the test bank answers as soon as the session opens: amount ending in 00 succeeds.
    const evs = (await c.waitEvents(3)).filter((f) => JSON.parse(f.data!).payload.id === id);
    assert.equal(c.frames[0].comment, 'connected');
    assert.deepEqual(
      evs.map((f) => [f.event, JSON.parse(f.data!).payload]),
      [
        ['payment.created', { id, amount: 15000, status: 'pending' }],
        ['payment.status_changed', { id, status: 'processing' }],
        ['payment.status_changed', { id, status: 'succeeded' }],
      ],
    );
    for (const f of evs) {
      assert.match(f.id!, /^\d+$/);
      const d = JSON.parse(f.data!);
      assert.deepEqual(Object.keys(d), ['kind', 'payload', 'at']);
      assert.equal(d.kind, f.event);
      assert.match(d.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    assert.ok(Number(evs[0].id) < Number(evs[1].id) && Number(evs[1].id) < Number(evs[2].id));
    // Only the final status sends a webhook, to the payment's own URL.
    const got = await rcv.waitFor(1);
    assert.equal(JSON.parse(got.body).event, 'payment.succeeded');
    assert.equal(JSON.parse(got.body).data.status, 'succeeded');
    const log = await waitForLog(s, `payment_id=${id}`, (it) => it.length === 1 && it[0].status === 'succeeded');
    assert.equal(log[0].event, 'payment.succeeded');
    await new Promise((r) => setTimeout(r, 120));
    assert.ok(c.frames.some((f) => f.comment === 'ping'), 'keep-alive pings arrive');
  } finally {
    c.close();
    await rcv.close();
  }
});

test('a reconnect with Last-Event-ID gets exactly the missed events, then live ones, no duplicates', async () => {
  const shop = await s.newShop();
  const c1 = await openSse(s.url, shop.key);
  await append(shop, 2);
  const seen = await c1.waitEvents(2);
  c1.close();
  const missed = await append(shop, 3);
  const c2 = await openSse(s.url, shop.key, seen[1].id);
  await c2.waitEvents(3);
  const live = await append(shop, 1);
  const all = await c2.waitEvents(4);
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(c2.events().map((f) => Number(f.id)), [...missed, ...live]);
  c2.close();
});

test('resume across more than a replay page while events keep arriving: no gap, no duplicate', async () => {
  const shop = await s.newShop();
  const first = (await append(shop, 1))[0];
  await append(shop, 1200);
  const c = await openSse(s.url, shop.key, String(first));
  for (let i = 0; i < 20; i++) {
    await append(shop, 5);
    await new Promise((r) => setImmediate(r));
  }
  const expected = (await s.store.all<{ seq: number }>('SELECT seq FROM events WHERE shop_id = ? AND seq > ? ORDER BY seq', shop.shopId, first)).map((r) => r.seq);
  await c.waitEvents(expected.length, 10_000);
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(c.events().map((f) => Number(f.id)), expected);
  c.close();
});

test('a Last-Event-ID beyond the log (a client of a wiped or restored database) gets new events, not silence', async () => {
  const shop = await s.newShop();
  const [last] = await append(shop, 1);
  const c = await openSse(s.url, shop.key, String(last + 1_000_000));
  const [next] = await append(shop, 1);
  const got = await c.waitEvents(1, 2000);
  assert.equal(Number(got[0].id), next);
  assert.ok(s.logs.some((l) => l.includes('sse Last-Event-ID beyond the event log')));
  c.close();
});

test('a key sees only its own shop and mode', async () => {
  const a = await s.newShop();
  const b = await s.newShop();
  const aLive = await s.newKey(a.shopId, 'live');
  await s.store.write(async (tx) => {
    await tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', a.merchantId);
  });
  const ca = await openSse(s.url, a.key);
  const cb = await openSse(s.url, b.key);
  const cl = await openSse(s.url, aLive.key);
  const [liveSeq] = await append(a, 1, 'live');
  const [bSeq] = await append(b, 1);
  const [aSeq] = await append(a, 1);
  await ca.waitEvents(1);
  await cb.waitEvents(1);
  await cl.waitEvents(1);
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(ca.events().map((f) => Number(f.id)), [aSeq]);
  assert.deepEqual(cb.events().map((f) => Number(f.id)), [bSeq]);
  assert.deepEqual(cl.events().map((f) => Number(f.id)), [liveSeq]);
  const resumed = await openSse(s.url, b.key, '0');
  await resumed.waitEvents(1);
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(resumed.events().map((f) => Number(f.id)), [bSeq], 'replay from 0 shows only the own shop');
  for (const c of [ca, cb, cl, resumed]) c.close();
});

test('a client that cannot keep up is disconnected instead of buffering without limit', async () => {
  const shop = await s.newShop();
  const hub = s.running.app.stream;
  hub.bufferLimitBytes = 64 * 1024;
  try {
    const sock = connect(Number(new URL(s.url).port), '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    sock.write(`GET /v1/public/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${shop.key}\r\n\r\n`);
    await new Promise((r) => sock.once('data', r));
    sock.pause();
    let closed = false;
    sock.once('close', () => (closed = true));
    // Far more than socket buffers hold: the server's own buffer passes the limit and it cuts the client.
    for (let i = 0; i < 60 && !closed; i++) {
      await append(shop, 10, 'test', 50_000);
      await new Promise((r) => setTimeout(r, 5));
    }
    // A paused socket may not notice the server's close until it reads: read what was sent (a bounded amount,
    // the server's buffer limit and the kernel's) until the end. On PostgreSQL the events reach the stream
    // from the feed a little after their commits, so the close may come after the last append.
    sock.resume();
    for (let i = 0; i < 100 && !closed; i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(closed, 'the server closed the slow client');
    assert.ok(s.logs.some((l) => l.includes('sse closed') && l.includes(shop.shopId) && l.includes('slow client')));
  } finally {
    hub.bufferLimitBytes = 1024 * 1024;
  }
});

test('bad Last-Event-ID is 400 and a missing key 401', async () => {
  const bad = await s.request('GET', '/v1/public/events', { headers: { 'last-event-id': 'abc' } });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.param, 'Last-Event-ID');
  const none = await s.request('GET', '/v1/public/events', { key: null });
  assert.equal(none.status, 401);
});

test('shutdown ends every stream cleanly', async () => {
  const t = await startTestServer();
  const c = await openSse(t.url, t.demo.key);
  assert.equal(t.running.app.stream.clientCount, 1);
  const started = Date.now();
  await t.close();
  await c.ended;
  assert.ok(Date.now() - started < 3000, 'shutdown does not wait for the stream');
  assert.ok(c.res.complete, 'the response ended with its final chunk, not a cut connection');
});

test('a webhook endpoint and the stream see the same event', async () => {
  const shop = await s.newShop();
  const rcv = await startReceiver();
  try {
    await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url }, Date.now());
    const c = await openSse(s.url, shop.key);
    const app = s.running.app;
    const row = await app.store.tx(async (tx) =>
      app.events.append(tx, { merchantId: shop.merchantId, shopId: shop.shopId, mode: 'test', kind: 'payout.status_changed', payload: { id: 'po1', status: 'failed', fail_reason: 'do_not_honor' }, at: await app.clocks.now(tx, shop.shopId, 'test'), webhook: { event: 'payout.failed', data: { id: 'po1' } } }),
    );
    const [f] = await c.waitEvents(1);
    assert.equal(Number(f.id), row.seq);
    assert.equal((await rcv.waitFor(1)).headers['x-psp-event-id'], row.id);
    c.close();
  } finally {
    await rcv.close();
  }
});

test('streams resumed while creates commit get every event once, in order: replay and live meet without a gap', async () => {
  const shop = await s.newShop();
  const clients: Array<Awaited<ReturnType<typeof openSse>>> = [];
  const creates: Array<Promise<unknown>> = [];
  for (let wave = 0; wave < 10; wave++) {
    for (let i = 0; i < 20; i++) creates.push(s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 10000 } }));
    // Each client resumes from the start while creates of this wave are committing and being synced...
    clients.push(await openSse(s.url, shop.key, '0'));
    // ...and an event of the same shop commits through tx() (as a job's would) while its replay waits for the disk.
    await append(shop, 1);
  }
  const answers = (await Promise.all(creates)) as Array<{ status: number }>;
  assert.ok(answers.every((r) => r.status === 201));
  let seqs: string[] = [];
  // On PostgreSQL the last events may still be waiting for their numbering pass (a few ms).
  for (let i = 0; i < 100 && seqs.length < 210; i++) {
    seqs = (await streamIdsOfShop(s.store, shop.shopId)).map(String);
    if (seqs.length < 210) await new Promise((r) => setTimeout(r, 20));
  }
  assert.equal(seqs.length, 210);
  for (const [i, c] of clients.entries()) {
    // A client that missed an event never reaches 210; its list shows which.
    await c.waitEvents(210, 5_000).catch(() => undefined);
    assert.deepEqual(
      c.events().map((f) => f.id),
      seqs,
      `client ${i} saw each event once, in order`,
    );
    c.close();
  }
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { openSse } from '../helpers/sse-client';

// A write settles once its commit is durable, and a read through the store once every commit it may have seen
// is; nobody above the storage layer waits for the disk. These tests drive a server over HTTP while its group
// commits are being synced: every create answered is readable at once, reads and refusals made meanwhile
// answer, and a stream opened in the middle carries every create exactly once, in order. (That an answered
// write survives a crash is what `npm run crash-test` proves, with SIGKILL.)

let s: TestServer;
before(async () => {
  s = await startTestServer({ ssePingSeconds: 0.05 });
});
after(() => s.close());

test('creates, GETs and refusals interleaved with group commits all answer, each create readable as soon as it is answered', async () => {
  const shop = await s.newShop();
  const created: string[] = [];
  const reads: Array<Promise<void>> = [];
  const creates = Array.from({ length: 60 }, async (_, i) => {
    const r = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 10_000 + i * 100, method: 'sbp' } });
    assert.equal(r.status, 201, r.text);
    const id = r.body.payment.id as string;
    created.push(id);
    // Read at once, while the next groups are committing and syncing.
    reads.push(
      s.request('GET', `/v1/public/payments/${id}`, { key: shop.key }).then((g) => {
        assert.equal(g.status, 200, g.text);
        assert.equal(g.body.id, id);
      }),
    );
    // A refusal that rests on the payment just written (a refund of a pending payment) is answered too.
    reads.push(
      s.request('POST', `/v1/public/payments/${id}/refund`, { key: shop.key, body: { amount: 100 } }).then((f) => {
        assert.ok(f.status >= 400 && f.status < 500, `${f.status} ${f.text}`);
      }),
    );
  });
  await Promise.all(creates);
  await Promise.all(reads);
  assert.equal(new Set(created).size, 60);
});

test('a stream opened while creates commit carries each of them once, in increasing id order', async () => {
  const shop = await s.newShop();
  const first = Array.from({ length: 20 }, (_, i) =>
    s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 20_000 + i * 100, method: 'sbp' } }),
  );
  const c = await openSse(s.url, shop.key, '0');
  try {
    const rest = Array.from({ length: 20 }, (_, i) =>
      s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 30_000 + i * 100, method: 'sbp' } }),
    );
    const answers = await Promise.all([...first, ...rest]);
    for (const a of answers) assert.equal(a.status, 201, a.text);
    const frames = (await c.waitEvents(40, 10_000)).filter((f) => f.event === 'payment.created');
    const ids = frames.map((f) => JSON.parse(f.data!).payload.id as string);
    assert.deepEqual([...ids].sort(), answers.map((a) => a.body.payment.id as string).sort(), 'every create once');
    const seqs = frames.map((f) => Number(f.id));
    assert.deepEqual(seqs, [...seqs].sort((x, y) => x - y), 'in stream order');
    assert.equal(new Set(seqs).size, seqs.length);
  } finally {
    c.close();
  }
});

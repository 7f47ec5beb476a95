import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { startTestServer, type TestServer } from '../helpers/server';
import { operationsOf, requestArb, send, judge, describe } from '../../scripts/lib/fuzz-model';
import { hostileCases, judgeGarbage, rawExchange } from '../../scripts/lib/hostile-raw';

// Small, seeded and deterministic; scripts/fuzz.ts runs the same generators with far more cases.
const SEED = 20_240_917;
const BODY_LIMIT = 64 * 1024;
const HEADERS_TIMEOUT_MS = 400;

let s: TestServer;
before(async () => {
  s = await startTestServer({ bodyLimitBytes: BODY_LIMIT, headersTimeoutMs: HEADERS_TIMEOUT_MS, requestTimeoutMs: 2_000, simDelaySeconds: 0 });
});
after(() => s.close());

async function idPool(): Promise<string[]> {
  const p = await s.request('POST', '/v1/public/payments', { body: { amount: 10000 } });
  assert.equal(p.status, 201);
  return [p.body.payment.id];
}

test('property: generated requests over every documented operation never get a 5xx and always get the documented shape', async () => {
  const doc = (await s.request('GET', '/v1/openapi.json', { key: null })).body;
  const ops = operationsOf(doc);
  assert.ok(ops.length >= 30, `${ops.length} operations in the document`);
  const ids = await idPool();
  const seen = new Set<string>();
  await fc.assert(
    fc.asyncProperty(requestArb(ops, ids, s.demo.key), async (r) => {
      const res = await send(s.url, r);
      seen.add(`${r.method} ${r.template}`);
      const verdict = judge(r, res);
      if (verdict) throw new Error(`${verdict}\n  request: ${describe(r)}`);
    }),
    { seed: SEED, numRuns: 250, endOnFailure: true },
  );
  assert.ok(seen.size >= 20, `only ${seen.size} distinct operations were exercised`);
  const health = await s.request('GET', '/healthz');
  assert.equal(health.status, 200);
});

test('property: raw byte garbage on a connection gets a 4xx or a close, never a 5xx, and the server keeps serving', async () => {
  await fc.assert(
    fc.asyncProperty(fc.oneof(fc.uint8Array({ minLength: 1, maxLength: 512 }), fc.string({ maxLength: 200 }).map((t) => new TextEncoder().encode(`GET /${t} HTTP/1.1\r\n\r\n`))), async (bytes) => {
      const got = await rawExchange(s.url, [Buffer.from(bytes)], { wait_ms: 3_000 });
      const verdict = judgeGarbage(got);
      if (verdict) throw new Error(`${verdict}\n  bytes: ${Buffer.from(bytes).toString('hex').slice(0, 200)}`);
    }),
    { seed: SEED, numRuns: 60, endOnFailure: true },
  );
  assert.equal((await s.request('GET', '/healthz')).status, 200);
});

for (const c of hostileCases({ bodyLimit: BODY_LIMIT, headersTimeoutMs: HEADERS_TIMEOUT_MS })) {
  test(`hostile: ${c.name}`, async () => {
    const verdict = await c.run(s.url, s.demo.key);
    assert.equal(verdict, null);
    assert.equal((await s.request('GET', '/healthz')).status, 200, 'the server still answers');
  });
}

test('memory stays bounded: 100 rejected bodies at the limit leave the heap within 64 MiB of where it began', async () => {
  const before = process.memoryUsage().heapUsed;
  const big = Buffer.alloc(BODY_LIMIT + 1024, 0x61);
  for (let i = 0; i < 100; i++) {
    const r = await s.request('POST', '/v1/public/payments', { body: big });
    assert.equal(r.status, 413);
  }
  const grown = process.memoryUsage().heapUsed - before;
  assert.ok(grown < 64 * 1024 * 1024, `heap grew ${grown} bytes`);
  assert.equal(s.logs.filter((l) => l.includes('"level":"error"')).length, 0, 'no request failed with an internal error');
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { startTestServer, type TestServer } from '../helpers/server';
import { appendWebhookEvent, receiverPool, waitForLog } from '../helpers/webhooks';
import { addEndpoint } from '../../src/money/webhooks/store';
import { RETRY_DELAYS_MS } from '../../src/money/webhooks/delivery';
import { SCHEMA_VERSION } from '../../src/platform/storage/migrations';

let s: TestServer;
const { receiver, closeAll } = receiverPool();
before(async () => {
  s = await startTestServer();
});
after(async () => {
  await closeAll();
  await s.close();
});

const done = (it: any[]): boolean => it.length > 0 && it[it.length - 1].status !== 'pending';

test('the full retry schedule on the test clock: 1 attempt + 8 retries at +10 s, 1 min, 5 min, 30 min, 2 h, 6 h, 24 h, 48 h; then failed; resend succeeds', async () => {
  const shop = await s.newShop();
  let answer = 500;
  const rcv = await receiver(() => ({ status: answer }));
  await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url }, Date.now());
  const ev = await appendWebhookEvent(s, shop);
  const q = `event_id=${ev.id}`;
  let items = await waitForLog(s, q, (it) => it.length === 2 && it[0].status === 'failed', { key: shop.key });
  for (let i = 0; i < RETRY_DELAYS_MS.length; i++) {
    const failed = items[i];
    assert.equal(failed.attempt, i + 1);
    assert.equal(failed.response_code, 500);
    // The retry is due exactly `delay` after the failure (attempt start + latency), on the shop's clock.
    assert.equal(Date.parse(failed.next_attempt_at) - Date.parse(failed.attempted_at) - failed.latency_ms, RETRY_DELAYS_MS[i]);
    assert.equal(items[i + 1].status, 'pending');
    assert.equal(items[i + 1].next_attempt_at, failed.next_attempt_at);
    // Move to a second before the retry is due (the shop clock also runs in real time), then past it.
    const clock = await s.request('GET', '/v1/test/clock', { key: shop.key });
    const until_s = Math.floor((Date.parse(failed.next_attempt_at) - Date.parse(clock.body.now)) / 1000) - 1;
    const early = await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: until_s } });
    assert.equal(early.status, 200);
    assert.equal(rcv.received.length, i + 1, `retry ${i + 1} does not run a second early`);
    await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: 2 } });
    items = await waitForLog(s, q, (it) => it.length >= i + 2 && it[i + 1].status !== 'pending', { key: shop.key });
    assert.equal(items[i + 1].attempt, i + 2);
    assert.equal(items[i + 1].attempted_at, failed.next_attempt_at, `retry ${i + 1} runs at its due time`);
  }
  assert.equal(items.length, 9);
  assert.equal(items[8].status, 'failed');
  assert.equal(items[8].next_attempt_at, null, 'after the eighth failed retry nothing more is scheduled');
  assert.equal(rcv.received.length, 9);
  assert.equal(new Set(rcv.received.map((r) => r.body)).size, 1, 'every retry sends the same body');
  assert.ok(rcv.received.every((r) => r.headers['x-psp-event-id'] === ev.id));
  await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: 7 * 86_400 } });
  assert.equal(rcv.received.length, 9, 'a failed delivery stays failed');

  answer = 204;
  const cli = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts', 'webhook', 'resend', ev.id, '--db', s.dbPath, '--json'], { encoding: 'utf8' });
  assert.equal(cli.status, 0, cli.stderr);
  assert.deepEqual(JSON.parse(cli.stdout), { event_id: ev.id, requeued: 1 });
  items = await waitForLog(s, q, (it) => it.length === 10 && it[9].status === 'succeeded', { key: shop.key, timeout_ms: 10_000 });
  assert.equal(items[9].attempt, 10);
  assert.equal(items[9].response_code, 204);
});

test('one advance past the whole schedule runs every retry, each at its own due time', async () => {
  const shop = await s.newShop();
  const rcv = await receiver(() => ({ status: 503 }));
  await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url }, Date.now());
  const ev = await appendWebhookEvent(s, shop);
  await waitForLog(s, `event_id=${ev.id}`, (it) => it[0]?.status === 'failed', { key: shop.key });
  await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: 4 * 86_400 } });
  const items = await waitForLog(s, `event_id=${ev.id}`, done, { key: shop.key });
  assert.deepEqual(items.map((i: any) => i.attempt), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
  for (let i = 1; i < 9; i++) assert.equal(items[i].attempted_at, items[i - 1].next_attempt_at);
  assert.equal(items[8].status, 'failed');
});

test('a receiver slower than the deadline is a failed attempt (deadline shortened to 300 ms for the test)', async () => {
  const t = await startTestServer({ webhookTimeoutMs: 300 });
  try {
    const rcv = await receiver(() => ({ status: 200, delay_ms: 1000 }));
    await addEndpoint(t.store, { shopId: t.demo.shopId, url: rcv.url }, Date.now());
    const ev = await appendWebhookEvent(t, t.demo);
    const items = await waitForLog(t, `event_id=${ev.id}`, (it) => it[0]?.status === 'failed');
    assert.equal(items[0].response_code, null);
    assert.match(items[0].error, /timeout: no answer within 300 ms/);
    assert.ok(items[0].latency_ms >= 290 && items[0].latency_ms < 1000, `latency ${items[0].latency_ms}`);
    assert.equal(Date.parse(items[0].next_attempt_at) - Date.parse(items[0].attempted_at) - items[0].latency_ms, 10_000);
  } finally {
    await t.close();
  }
});

test('a restart mid-schedule loses nothing and continues with the right attempt number', async () => {
  const shop = await s.newShop();
  const rcv = await receiver((n) => ({ status: n < 3 ? 500 : 200 }));
  await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url }, Date.now());
  const ev = await appendWebhookEvent(s, shop);
  await waitForLog(s, `event_id=${ev.id}`, (it) => it[0]?.status === 'failed', { key: shop.key });
  await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: 11 } });
  await waitForLog(s, `event_id=${ev.id}`, (it) => it[1]?.status === 'failed', { key: shop.key });
  await s.restart();
  await s.request('POST', '/v1/test/clock/advance', { key: shop.key, body: { seconds: 61 } });
  const items = await waitForLog(s, `event_id=${ev.id}`, done, { key: shop.key });
  assert.deepEqual(items.map((i: any) => [i.attempt, i.status]), [[1, 'failed'], [2, 'failed'], [3, 'succeeded']]);
  assert.equal(rcv.received.length, 3);
});

test('a database of the build before attempts were jobs: its pending first attempt and its retry job run once upgraded', async () => {
  const shop = await s.newShop();
  const rcv = await receiver();
  await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url }, Date.now());
  // As that build left them: a delivery whose first attempt is pending (its worker made those, with no job), and
  // one waiting for its first retry under the job kind of then; the schema marked as of that build.
  const app = s.running.app;
  const ids = await app.store.tx(async (tx) => {
    const out: string[] = [];
    for (const [n, attempts] of [[1, 0], [2, 1]]) {
      const id = `evt_${'0'.repeat(9)}${n}JQBSJQBSJQBSJQBS`;
      await tx.run(
        `INSERT INTO events (id, merchant_id, shop_id, mode, kind, payload, at, webhook_event, webhook_data) VALUES (?, ?, ?, 'test', 'payment.status_changed', '{}', ?, 'payment.failed', '{"id":"x"}')`,
        id,
        shop.merchantId,
        shop.shopId,
        Date.now(),
      );
      const seq = (await tx.get<{ seq: number }>('SELECT seq FROM events WHERE id = ?', id))!.seq;
      const d = await tx.run(
        `INSERT INTO webhook_deliveries (event_seq, event_id, event, shop_id, mode, endpoint_id, url, attempts, next_attempt_at, created_at)
           SELECT ?, ?, 'payment.failed', ?, 'test', id, url, ?, ?, ? FROM webhook_endpoints WHERE shop_id = ? RETURNING id`,
        seq,
        id,
        shop.shopId,
        attempts,
        Date.now(),
        Date.now(),
        shop.shopId,
      );
      if (attempts > 0) {
        await tx.run(
          `INSERT INTO jobs (kind, subject_id, shop_id, mode, due_at, run_at, payload, created_at) VALUES ('webhook.retry', ?, ?, 'test', ?, ?, ?, ?)`,
          String(d.lastInsertRowid),
          shop.shopId,
          Date.now(),
          Date.now(),
          JSON.stringify({ attempts }),
          Date.now(),
        );
      }
      out.push(id);
    }
    if (tx.engine === 'postgres') await tx.run('UPDATE kopek_schema SET version = ?', SCHEMA_VERSION - 1);
    else await tx.run(`PRAGMA user_version = ${SCHEMA_VERSION - 1}`);
    return out;
  });
  await s.restart();
  await rcv.waitFor(2);
  assert.deepEqual(rcv.received.map((r) => r.headers['x-psp-event-id']).sort(), [...ids].sort(), 'each sent once');
  for (const id of ids) await waitForLog(s, `event_id=${id}`, (it) => it.some((i: any) => i.status === 'succeeded'), { key: shop.key });
  const jobs = await s.store.all<{ kind: string; state: string }>(`SELECT kind, state FROM jobs WHERE shop_id = ? AND kind LIKE 'webhook.%' ORDER BY id`, shop.shopId);
  assert.deepEqual(jobs.map((j) => ({ ...j })), [
    { kind: 'webhook.attempt', state: 'done' },
    { kind: 'webhook.attempt', state: 'done' },
  ]);
});

test('a delivery and its first attempt committed before a crash are sent after restart', async () => {
  const shop = await s.newShop();
  const rcv = await receiver();
  await addEndpoint(s.store, { shopId: shop.shopId, url: rcv.url }, Date.now());
  // As if the process died right after the commit: the rows exist, nothing was sent, no wake-up came.
  await s.running.app.scheduler.stop();
  const ev = await appendWebhookEvent(s, shop);
  await s.restart();
  const got = await rcv.waitFor(1);
  assert.equal(got.headers['x-psp-event-id'], ev.id);
});

test("one dead endpoint (never answers) does not delay another endpoint's deliveries", async () => {
  const shop = await s.newShop();
  const dead = await receiver(() => 'hang');
  const alive = await receiver();
  await addEndpoint(s.store, { shopId: shop.shopId, url: dead.url }, Date.now() - 1);
  await addEndpoint(s.store, { shopId: shop.shopId, url: alive.url }, Date.now());
  const started = Date.now();
  for (let i = 0; i < 12; i++) await appendWebhookEvent(s, shop);
  await alive.waitFor(12, 3000);
  assert.ok(Date.now() - started < 3000);
  assert.ok(dead.received.length <= 4, `the dead receiver holds at most its own slots (${dead.received.length})`);
});

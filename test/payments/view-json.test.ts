import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { advance, createPayment, simulate, succeededPayment } from '../helpers/payments';
import { getPayment, paymentView, sqlIso } from '../../src/money/payments/store';

// GET answers a payment it has not held with JSON that SQLite builds (getPaymentJson); everything else that
// shows a payment (webhooks, the cabinet, replies of changes) uses paymentView. The two must agree byte for byte.
let s: TestServer;
before(async () => {
  s = await startTestServer({ simDelaySeconds: 60 });
});
after(() => s.close());

/** Text that JSON escapes in every way it can: quotes, backslashes, control characters, and characters it leaves raw. */
const AWKWARD = 'say "hi" \\ back\\slash\nnew line\ttab \u0001\u001f\u007f Привет 🙂 \u2028\u2029 </script> é';

/** The first-read answer of a payment next to paymentView's text of the same row. */
async function bothTexts(id: string): Promise<[string, string]> {
  assert.equal(s.running.app.viewCache.holds(id), false, 'the read below is not served from the cache');
  const r = await s.request('GET', `/v1/public/payments/${id}`);
  assert.equal(r.status, 200, r.text);
  const app = s.running.app;
  return [r.text, JSON.stringify(await paymentView(app.store, (await getPayment(app.store, id))!))];
}

test('GET builds the same JSON in SQL as paymentView, byte for byte, for payments of every shape', async () => {
  await s.store.write(async (tx) => tx.run('UPDATE shops SET name = ? WHERE id = ?', `Shop ${AWKWARD}`, s.demo.shopId));
  const ids: Record<string, string> = {};
  const made = async (name: string, body: Record<string, unknown>) => (ids[name] = (await createPayment(s, { amount: 10_000, ...body })).payment.id);

  await made('pending, awkward text', {
    description: AWKWARD,
    order_id: `o-${AWKWARD}`.slice(0, 60),
    metadata: { note: AWKWARD, 'key "quoted"': 'v', empty: '' },
    return_url: 'https://shop.example/back?a=1&b=%22',
  });
  await made('pending, no metadata', { amount: 1 });
  const processing = await made('processing', { amount: 20_000 });
  assert.equal((await simulate(s, processing, { action: 'open_session', method: 'sbp' })).status, 200);
  const failed = await made('failed', { amount: 30_000 });
  await simulate(s, failed, { action: 'open_session', method: 'cards' });
  assert.equal((await simulate(s, failed, { action: 'fail', failure_code: 'insufficient_funds' })).status, 200);
  const expired = await made('expired', {});
  await simulate(s, expired, { action: 'expire' });
  const cancelled = await made('cancelled', {});
  assert.equal((await s.request('POST', `/v1/public/payments/${cancelled}/cancel`)).status, 200);
  ids['succeeded'] = (await succeededPayment(s, 40_000)).id;
  const refunded = (ids['refunded twice'] = (await succeededPayment(s, 50_000)).id);
  assert.equal((await s.request('POST', `/v1/public/payments/${refunded}/refund`, { body: { amount: 1_000, reason: AWKWARD } })).status, 201);

  /** Compare every payment's first-read answer with paymentView's text; the answers. */
  const compareAll = async (when: string) => {
    const answers: Record<string, any> = {};
    for (const [name, id] of Object.entries(ids)) {
      const [sql, js] = await bothTexts(id);
      assert.equal(sql, js, `${name} (${when}): the SQL answer differs from paymentView's`);
      answers[name] = JSON.parse(sql);
    }
    return answers;
  };
  const first = await compareAll('as made');
  // The shapes do cover what differs between payments.
  assert.deepEqual(new Set(Object.values(first).map((a) => a.status)), new Set(['pending', 'processing', 'failed', 'expired', 'cancelled', 'succeeded']));
  assert.equal(first['pending, awkward text'].shop_name, `Shop ${AWKWARD}`);
  assert.equal(first['pending, awkward text'].metadata.note, AWKWARD);
  assert.equal(first['processing'].processing_until === null, false);

  // An hour on: the first refund settles, the pending links expire, the bank answers the open session.
  await advance(s, 3_600);
  assert.equal((await s.request('POST', `/v1/public/payments/${refunded}/refund`, { body: { amount: 2_000 } })).status, 201);
  const later = await compareAll('an hour later');
  assert.equal(later['processing'].status, 'succeeded');
  const twice = later['refunded twice'];
  assert.deepEqual(twice.refunds.map((r: any) => [r.amount, r.status, r.completed_at === null]), [[1_000, 'succeeded', false], [2_000, 'pending', true]]);
  assert.equal(twice.refunds[0].reason, AWKWARD);
});

test('an instant in SQL is written as iso() writes it, to the millisecond', async () => {
  const sql = `SELECT ${sqlIso('?', s.store.engine)} AS t`;
  const iso = async (ms: number | null) => (await s.store.get<{ t: string | null }>(sql, ms))!.t;
  const at = [0, 1, 999, 1_000, 59_999, 86_399_999, 951_782_400_000, 951_868_799_999, 1_795_490_476_496, 4_102_444_799_999, 253_402_300_799_999];
  // Spread over 1970 to 2200, with the milliseconds on both edges of a second.
  let x = 0x2545f491;
  for (let i = 0; i < 5_000; i++) {
    x = (Math.imul(x, 1_103_515_245) + 12_345) >>> 0;
    const ms = Math.floor((x / 2 ** 32) * 7_258_118_400) * 1_000 + [0, 1, 499, 500, 501, 998, 999][i % 7];
    at.push(ms);
  }
  for (const ms of at) assert.equal(await iso(ms), new Date(ms).toISOString(), `at ${ms}`);
  assert.equal(await iso(null), null);
});

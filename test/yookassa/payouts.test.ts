import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { cardBody, sbpBody, TEST_PAN, KNOWN_BANK } from '../helpers/payouts';
import { yookassaSuite, expectStatus, type FakeYookassa } from '../helpers/yookassa';
import type { TestServer } from '../helpers/server';

// Live SBP and card payouts through a fake YooKassa over real HTTP: the request as the protocol has it, the
// answers through notifications checked by a GET, the failure mapping, the reserve released, the balance.

const suite = yookassaSuite();
let s: TestServer;
let fake: FakeYookassa;
before(async () => void ({ s, fake } = await suite.ready));

/** The webhook event a payout's change recorded (events.webhook_event), with its object. */
async function webhookOf(id: string, event: string): Promise<any> {
  const row = await s.store.get<{ webhook_data: string }>('SELECT webhook_data FROM events WHERE payout_id = ? AND webhook_event = ?', id, event);
  assert.ok(row, `${event} of ${id} was recorded`);
  return JSON.parse(row.webhook_data);
}

async function available(): Promise<number> {
  const r = await suite.api('GET', '/v1/public/balance');
  expectStatus(r, 200);
  return r.body.available;
}

test('a live SBP payout: one POST as the protocol has it, pending, then succeeded by a checked notification', async () => {
  const before0 = await available();
  const c = await suite.api('POST', '/v1/public/payouts', sbpBody(150_050));
  expectStatus(c, 201);
  const id = c.body.payout.id as string;
  assert.equal(c.body.payout.status, 'pending');
  assert.equal(await available(), before0 - 150_050, 'reserved');
  await suite.pass();
  const posts = fake.calls('POST');
  assert.equal(posts.length, 1);
  assert.equal(posts[0].key, id, 'the Idempotence-Key is the payout id');
  assert.deepEqual(posts[0].body, {
    amount: { value: '1500.50', currency: 'RUB' },
    payout_destination_data: { type: 'sbp', phone: '79001234567', bank_id: KNOWN_BANK },
    description: `Payout ${id}`,
    metadata: { payout_id: id },
  });
  const po = fake.byPayoutId(id)!;
  let g = await suite.api('GET', `/v1/public/payouts/${id}`);
  assert.equal(g.body.status, 'pending');
  assert.equal(g.body.bank_ref, po.id, 'bank_ref is the provider payout id');
  await fake.settle(po.id, 'succeeded');
  assert.equal(fake.notified.at(-1)!.status, 200);
  await suite.pass();
  g = await suite.api('GET', `/v1/public/payouts/${id}`);
  assert.equal(g.body.status, 'succeeded');
  assert.equal(await available(), before0 - 150_050);
  assert.equal((await webhookOf(id, 'payout.succeeded')).bank_ref, po.id);
});

test('a live card payout canceled: payout.failed with the mapped fail_reason, the reserve released; the number never stored', async () => {
  const before0 = await available();
  const c = await suite.api('POST', '/v1/public/payouts', cardBody(99_900));
  expectStatus(c, 201);
  const id = c.body.payout.id as string;
  await suite.pass();
  const post = fake.calls('POST').at(-1)!;
  assert.deepEqual(post.body!.payout_destination_data, { type: 'bank_card', card: { number: TEST_PAN } });
  assert.equal((post.body!.amount as { value: string }).value, '999.00');
  const po = fake.byPayoutId(id)!;
  await fake.settle(po.id, 'canceled', 'recipient_not_found');
  await suite.pass();
  const g = await suite.api('GET', `/v1/public/payouts/${id}`);
  assert.equal(g.body.status, 'failed');
  assert.equal(g.body.fail_reason, 'recipient_not_in_sbp');
  assert.equal(await available(), before0, 'the reserve is released');
  assert.equal((await webhookOf(id, 'payout.failed')).fail_reason, 'recipient_not_in_sbp');
  const rows = await s.store.all<{ request: string; answer: string }>('SELECT request, answer FROM bank_requests WHERE subject_id = ?', id);
  for (const r of rows) assert.ok(!r.request.includes(TEST_PAN) && !r.answer.includes(TEST_PAN), 'no card number in the records');
  assert.ok(!s.logs.some((l) => l.includes(TEST_PAN)), 'no card number in the logs');
  assert.ok(!s.logs.some((l) => l.includes(suite.gateway.secret)), 'no secret key in the logs');
});

test('cancellation reasons map to unified codes', async () => {
  const cases: Array<[string, string]> = [
    ['insufficient_funds', 'insufficient_funds'],
    ['general_decline', 'do_not_honor'],
    ['one_time_limit_exceeded', 'processing_error'],
  ];
  for (const [reason, code] of cases) {
    const c = await suite.api('POST', '/v1/public/payouts', sbpBody(10_000));
    expectStatus(c, 201);
    await suite.pass();
    await fake.settle(fake.byPayoutId(c.body.payout.id)!.id, 'canceled', reason);
    await suite.pass();
    const g = await suite.api('GET', `/v1/public/payouts/${c.body.payout.id}`);
    assert.equal(g.body.fail_reason, code, reason);
  }
});

test('a 4xx refusal of the first POST fails the payout at once and releases the reserve', async () => {
  const before0 = await available();
  fake.next('POST', 'refuse');
  const c = await suite.api('POST', '/v1/public/payouts', sbpBody(20_000));
  expectStatus(c, 201);
  await suite.pass();
  const g = await suite.api('GET', `/v1/public/payouts/${c.body.payout.id}`);
  assert.equal(g.body.status, 'failed');
  assert.equal(g.body.fail_reason, 'processing_error');
  assert.equal(await available(), before0);
});

test('a forged notification moves nothing; a malformed one is refused', async () => {
  const c = await suite.api('POST', '/v1/public/payouts', sbpBody(30_000));
  const id = c.body.payout.id as string;
  await suite.pass();
  const po = fake.byPayoutId(id)!;
  const gets = fake.calls('GET').length;
  // Forged: claims success for the real provider id; the GET says pending.
  assert.equal(await fake.notify({ type: 'notification', event: 'payout.succeeded', object: { ...po, status: 'succeeded' } }), 200);
  // Forged: an id the provider never made, naming the payout in metadata.
  assert.equal(await fake.notify({ type: 'notification', event: 'payout.succeeded', object: { id: 'po-forged', status: 'succeeded', metadata: { payout_id: id } } }), 200);
  await suite.pass();
  assert.equal((await suite.api('GET', `/v1/public/payouts/${id}`)).body.status, 'pending');
  assert.ok(fake.calls('GET').length > gets, 'checked with a GET');
  assert.equal(await fake.notify({ hello: 'world' }), 403);
  const other = await s.newShop({ mode: 'live', acquirer: false });
  const r = await fetch(`${s.url}/v1/callbacks/yookassa/${other.shopId}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ type: 'notification', event: 'payout.succeeded', object: po }) });
  assert.equal(r.status, 404, 'a shop without this payout provider takes no notification');
});

test('a flood of notifications for one payout is one GET', async () => {
  const c = await suite.api('POST', '/v1/public/payouts', sbpBody(40_000));
  const id = c.body.payout.id as string;
  await suite.pass();
  const po = fake.byPayoutId(id)!;
  po.status = 'succeeded';
  const gets = fake.calls('GET').length;
  const answers = await Promise.all(Array.from({ length: 25 }, () => fake.notify(po, 'payout.succeeded')));
  assert.ok(answers.every((a) => a === 200));
  await suite.pass();
  assert.equal(fake.calls('GET').length - gets, 1, 'one GET for the flood');
  assert.equal((await suite.api('GET', `/v1/public/payouts/${id}`)).body.status, 'succeeded');
  // Late and repeated ones never move it backwards.
  po.status = 'canceled';
  assert.equal(await fake.notify(po, 'payout.canceled'), 200);
  await suite.pass();
  assert.equal((await suite.api('GET', `/v1/public/payouts/${id}`)).body.status, 'succeeded');
});

test('a live payouts_account is refused, nothing created', async () => {
  const posts = fake.calls('POST').length;
  const r = await suite.api('POST', '/v1/public/payouts', { method: 'payouts_account', amount: 10_000, account_number: '40817810099910004312', bik: '044525225', full_name: 'Ivan Petrov' });
  expectStatus(r, 403);
  assert.equal(r.body.error.code, 'payout_method_not_supported');
  await suite.pass();
  assert.equal(fake.calls('POST').length, posts);
});

test('a live batch: each item its own POST under its own key; each settles on its own', async () => {
  const before0 = await available();
  const items = [1, 2, 3].map((n) => ({ amount: 1_000 * n, phone: `+7900000000${n}`, bank_id: KNOWN_BANK, full_name: 'Ivan Petrov' }));
  const r = await suite.api('POST', '/v1/public/payouts/batch', { method: 'payouts_sbp', items });
  expectStatus(r, 201);
  assert.equal(r.body.created, 3);
  const ids = r.body.results.map((x: { payout_id: string }) => x.payout_id) as string[];
  const cards = await suite.api('POST', '/v1/public/payouts/batch', { method: 'payouts_card', items: [{ amount: 4_000, card_pan: TEST_PAN }] });
  expectStatus(cards, 201);
  ids.push(cards.body.results[0].payout_id);
  await suite.pass();
  for (const id of ids) assert.deepEqual(fake.calls('POST').filter((c) => c.key === id).length, 1, id);
  assert.equal((fake.calls('POST').find((c) => c.key === ids[1])!.body!.payout_destination_data as { phone: string }).phone, '79000000002');
  await fake.settle(fake.byPayoutId(ids[0])!.id, 'succeeded');
  await fake.settle(fake.byPayoutId(ids[1])!.id, 'canceled', 'general_decline');
  await fake.settle(fake.byPayoutId(ids[2])!.id, 'succeeded');
  await fake.settle(fake.byPayoutId(ids[3])!.id, 'succeeded');
  // Each settles on its own: a notification that arrives while that payout's status check is in flight is
  // taken up by the next check, so a payout may need another pass (on PostgreSQL the timing differs).
  let st: Array<{ status: string; fail_reason: string }> = [];
  for (let round = 0; round < 20; round++) {
    // After the first pass the clock moves a minute a round, so that a status check scheduled later runs.
    await suite.pass(round === 0 ? 0 : 60);
    st = await Promise.all(ids.map(async (id) => (await suite.api('GET', `/v1/public/payouts/${id}`)).body));
    if (st.every((p) => p.status !== 'pending')) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.deepEqual(st.map((p) => [p.status, p.fail_reason]), [['succeeded', ''], ['failed', 'do_not_honor'], ['succeeded', ''], ['succeeded', '']]);
  assert.equal(await available(), before0 - 1_000 - 3_000 - 4_000);
});

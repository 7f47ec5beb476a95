import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { cardBody, sbpBody } from '../helpers/payouts';
import { yookassaSuite, expectStatus, type Behaviour, type FakeYookassa } from '../helpers/yookassa';
import type { TestServer } from '../helpers/server';

// What the provider does not say: a hang past --acquirer-timeout, a 5xx, a 429, an unreadable body, a cut
// connection. The payout stays pending; the status check at --acquirer-sync-after repeats the same POST under
// the same Idempotence-Key (or GETs the provider's id once known), and the provider pays once.

const SYNC_AFTER_S = 60;
const suite = yookassaSuite({ acquirerSyncAfterSeconds: SYNC_AFTER_S, acquirerTimeoutSeconds: 0.3 });
let s: TestServer;
let fake: FakeYookassa;
before(async () => void ({ s, fake } = await suite.ready));

async function statusOf(id: string): Promise<{ status: string; bank_ref: string }> {
  const r = await suite.api('GET', `/v1/public/payouts/${id}`);
  expectStatus(r, 200);
  return r.body;
}

for (const b of ['lose', 'hang', '500', '429', 'garbage', 'drop'] as Behaviour[]) {
  test(`POST answered "${b}": pending; the check repeats the POST with the same key and the provider pays once`, async () => {
    const made = fake.payouts.size;
    fake.next('POST', b);
    const c = await suite.api('POST', '/v1/public/payouts', sbpBody(12_300));
    expectStatus(c, 201);
    const id = c.body.payout.id as string;
    await suite.pass();
    if (b === 'hang' || b === 'lose') fake.release();
    const p = await statusOf(id);
    assert.deepEqual([p.status, p.bank_ref], ['pending', '']);
    await suite.pass(SYNC_AFTER_S);
    const posts = fake.calls('POST').filter((r) => r.key === id);
    assert.equal(posts.length, 2, 'sent twice');
    assert.deepEqual(posts[1].body, posts[0].body, 'the same body');
    const po = fake.byPayoutId(id)!;
    assert.equal(fake.payouts.size, made + 1, 'one payout at the provider');
    assert.equal((await statusOf(id)).bank_ref, po.id);
    // Now the provider's id is known: the next check is a GET.
    await fake.settle(po.id, 'succeeded', '', false);
    await suite.pass(SYNC_AFTER_S * 2);
    assert.equal((await statusOf(id)).status, 'succeeded');
    assert.equal(fake.calls('POST').filter((r) => r.key === id).length, 2, 'no POST after the id is known');
  });
}

test('a 4xx to a repeated POST never fails the payout', async () => {
  fake.next('POST', '500');
  const c = await suite.api('POST', '/v1/public/payouts', sbpBody(5_000));
  const id = c.body.payout.id as string;
  await suite.pass();
  fake.next('POST', 'refuse');
  await suite.pass(SYNC_AFTER_S);
  assert.equal((await statusOf(id)).status, 'pending');
  await suite.pass(SYNC_AFTER_S * 2);
  const po = fake.byPayoutId(id)!;
  await fake.settle(po.id, 'succeeded', '', false);
  await suite.pass(SYNC_AFTER_S * 4);
  assert.equal((await statusOf(id)).status, 'succeeded');
});

test('a GET that fails (500, 429, hang) leaves the payout pending; a later check settles it', async () => {
  const c = await suite.api('POST', '/v1/public/payouts', sbpBody(6_000));
  const id = c.body.payout.id as string;
  await suite.pass();
  const po = fake.byPayoutId(id)!;
  fake.next('GET', '500');
  fake.next('GET', '429');
  fake.next('GET', 'hang');
  await suite.pass(SYNC_AFTER_S);
  await suite.pass(SYNC_AFTER_S * 2);
  fake.release();
  await suite.pass(SYNC_AFTER_S * 4);
  assert.equal((await statusOf(id)).status, 'pending');
  await fake.settle(po.id, 'canceled', 'insufficient_funds', false);
  await suite.pass(SYNC_AFTER_S * 8);
  const g = await statusOf(id);
  assert.equal(g.status, 'failed');
  assert.equal((g as unknown as { fail_reason: string }).fail_reason, 'insufficient_funds');
});

test('a notification that arrives before the POST answer finds its payout through metadata', async () => {
  fake.next('POST', 'lose');
  const c = await suite.api('POST', '/v1/public/payouts', cardBody(7_000));
  const id = c.body.payout.id as string;
  await suite.pass();
  fake.release();
  const po = fake.byPayoutId(id)!;
  assert.equal((await statusOf(id)).bank_ref, '');
  await fake.settle(po.id, 'succeeded');
  await suite.pass();
  const g = await statusOf(id);
  assert.equal(g.status, 'succeeded');
  assert.equal(g.bank_ref, po.id);
  assert.equal(fake.calls('POST').filter((r) => r.key === id).length, 1);
});

test('repeats of a POST stop before the provider forgets the key (24 hours)', async () => {
  const c = await suite.api('POST', '/v1/public/payouts', sbpBody(8_000));
  const id = c.body.payout.id as string;
  fake.next('POST', '500', 100);
  await suite.pass();
  for (let h = 0; h < 30; h++) await suite.pass(3600);
  const n = fake.calls('POST').filter((r) => r.key === id).length;
  for (let h = 0; h < 10; h++) await suite.pass(6 * 3600);
  assert.equal(fake.calls('POST').filter((r) => r.key === id).length, n, 'no repeat after the window');
  const times = await s.store.all<{ created_at: number }>(`SELECT created_at FROM bank_requests WHERE subject_id = ? AND operation = 'CreatePayout' ORDER BY id`, id);
  assert.ok(times.at(-1)!.created_at - times[0].created_at < 24 * 3600_000, 'the last repeat within 24 hours of the first');
  assert.equal((await statusOf(id)).status, 'pending', 'left pending for the operator');
  fake.release();
  fake.reset();
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer, type TestShop } from '../helpers/server';
import { advanceDays, advanceTo, clockNow, createSubscription, get, payThroughHelper, streamOf, webhooksOf } from '../helpers/recurrent';

// Charges settle at once (sim-delay 0), so a clock advance runs every charge and its bank answer in order.
let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

const DAY = 86_400_000;

/** The next Jan 31, 10:00 UTC, on the shop's test clock. */
async function nextJan31(shop: TestShop): Promise<number> {
  const now = await clockNow(s, shop.key);
  const y = new Date(now).getUTCFullYear();
  const thisYear = Date.UTC(y, 0, 31, 10, 0, 0);
  return thisYear > now ? thisYear : Date.UTC(y + 1, 0, 31, 10, 0, 0);
}

/** A subscription made active through its initial payment; returns it as GET shows it. */
async function activeSubscription(shop: TestShop, body: Record<string, unknown>): Promise<any> {
  const c = await createSubscription(s, { customer_ref: 'cust-1', ...body }, shop.key);
  await payThroughHelper(s, c.initial_payment.id, shop.key);
  const sub = await get(s, `/v1/public/subscriptions/${c.subscription.id}`, shop.key);
  assert.equal(sub.status, 'active');
  return sub;
}

test('a monthly subscription from Jan 31 charges through a year: Feb 28/29, Mar 31, Apr 30, … back on the 31st', async () => {
  const shop = await s.newShop();
  await advanceTo(s, await nextJan31(shop), shop.key);
  const sub = await activeSubscription(shop, { amount: 99000, plan_name: 'Pro monthly' });
  const anchor = new Date(sub.activated_at);
  assert.equal(anchor.getUTCMonth(), 0);
  assert.equal(anchor.getUTCDate(), 31);
  // The expected calendar, computed here independently: day 31 clamped to each month's length.
  const expected: string[] = [];
  for (let m = 1; m <= 12; m++) {
    const y = anchor.getUTCFullYear() + Math.floor(m / 12);
    const month = m % 12;
    const last = new Date(Date.UTC(y, month + 1, 0)).getUTCDate();
    expected.push(new Date(Date.UTC(y, month, Math.min(31, last), anchor.getUTCHours(), anchor.getUTCMinutes(), anchor.getUTCSeconds(), anchor.getUTCMilliseconds())).toISOString());
  }
  assert.equal(sub.next_charge_at, expected[0]);
  const before = await get(s, `/v1/public/subscriptions/${sub.id}/schedule`, shop.key);
  assert.deepEqual(before.upcoming, expected);
  assert.deepEqual(before.charges.map((c: any) => [c.kind, c.amount, c.status]), [['subscription_init', 99000, 'succeeded']]);

  await advanceTo(s, Date.parse(expected[11]) + 1000, shop.key);
  const sched = await get(s, `/v1/public/subscriptions/${sub.id}/schedule`, shop.key);
  const charges = sched.charges.filter((c: any) => c.kind === 'subscription_charge');
  assert.deepEqual(charges.map((c: any) => c.created_at), expected, 'one charge on each clamped date');
  assert.ok(charges.every((c: any) => c.status === 'succeeded' && c.amount === 99000 && c.attempt === 1));
  assert.equal(sched.status, 'active');
  assert.equal(sched.next_charge_at.slice(5, 10), new Date(Date.UTC(anchor.getUTCFullYear() + 1, 2, 0)).toISOString().slice(5, 10), 'next: Feb 28/29 again');
  for (const c of charges) {
    const paid = await get(s, `/v1/public/payments/${c.payment_id}`, shop.key);
    assert.equal(paid.captured_at, c.created_at, 'with sim-delay 0 the bank answers at the charge time, on the shop clock');
  }
  const p = await get(s, `/v1/public/payments/${charges[0].payment_id}`, shop.key);
  assert.equal(p.method, 'recurrent');
  assert.equal(p.metadata.subscription_id, sub.id);
  assert.equal(p.metadata.kind, 'subscription_charge');
  assert.equal((await webhooksOf(s, sub.id)).filter((e) => e === 'subscription.charge_succeeded').length, 12);
  assert.equal((await get(s, `/v1/public/tokens/${sub.token_id}`, shop.key)).last_charged_at, expected[11]);
});

test('a trial binds with 1 RUB, charges nothing during the trial, then the full amount at its end', async () => {
  const shop = await s.newShop();
  const c = await createSubscription(s, { amount: 50000, customer_ref: 'cust-trial', method: 'sbp', trial_days: 14 }, shop.key);
  assert.equal(c.initial_payment.amount, 100);
  assert.equal(c.subscription.status, 'pending');
  assert.equal(c.subscription.next_charge_at, null);
  const init = await get(s, `/v1/public/payments/${c.initial_payment.id}`, shop.key);
  assert.equal(init.amount, 100);
  assert.equal(init.metadata.kind, 'subscription_init');
  await payThroughHelper(s, c.initial_payment.id, shop.key);
  const sub = await get(s, `/v1/public/subscriptions/${c.subscription.id}`, shop.key);
  assert.equal(sub.status, 'active');
  assert.equal(Date.parse(sub.trial_end) - Date.parse(sub.activated_at), 14 * DAY);
  assert.equal(sub.next_charge_at, sub.trial_end);
  await advanceDays(s, 13, shop.key);
  let sched = await get(s, `/v1/public/subscriptions/${sub.id}/schedule`, shop.key);
  assert.equal(sched.charges.length, 1, 'no charge during the trial');
  await advanceDays(s, 1.01, shop.key);
  sched = await get(s, `/v1/public/subscriptions/${sub.id}/schedule`, shop.key);
  assert.deepEqual(sched.charges.map((x: any) => [x.kind, x.amount, x.status]), [
    ['subscription_init', 100, 'refunded'],
    ['subscription_charge', 50000, 'succeeded'],
  ]);
  assert.equal(sched.charges[1].created_at, sub.trial_end);
  // The 1 RUB binding went back to the buyer: a refund of the whole amount, settled like any other.
  const bound = await get(s, `/v1/public/payments/${c.initial_payment.id}`, shop.key);
  assert.deepEqual(bound.refunds.map((r: any) => [r.amount, r.status, r.reason]), [[100, 'succeeded', 'Verification payment returned']]);
  const balance = await get(s, '/v1/public/balance', shop.key);
  assert.equal(balance.balance, 50000, 'only the real charge stays on the balance');
  const trialEnd = new Date(sub.trial_end);
  const oneMonth = new Date(Date.UTC(trialEnd.getUTCFullYear(), trialEnd.getUTCMonth() + 1, 1)).getTime();
  assert.equal(new Date(sched.next_charge_at).getUTCMonth(), new Date(oneMonth).getUTCMonth(), 'next: a month after the trial');
});

test('a failed charge makes it past_due; the retry a day later succeeds and it is active on its anchor again', async () => {
  const shop = await s.newShop();
  const sub = await activeSubscription(shop, { amount: 30000 });
  const q = await s.request('POST', `/v1/test/tokens/${sub.token_id}/outcomes`, { body: { outcomes: ['fail:insufficient_funds', 'succeed'] }, key: shop.key });
  assert.equal(q.status, 200, q.text);
  const T = Date.parse(sub.next_charge_at);
  await advanceTo(s, T, shop.key);
  let now = await get(s, `/v1/public/subscriptions/${sub.id}`, shop.key);
  assert.equal(now.status, 'past_due');
  assert.equal(now.failed_charges, 1);
  assert.equal(now.next_charge_at, new Date(T + DAY).toISOString());
  assert.equal(now.latest_charge.failure_code, 'insufficient_funds');
  await advanceDays(s, 1, shop.key);
  now = await get(s, `/v1/public/subscriptions/${sub.id}`, shop.key);
  assert.equal(now.status, 'active');
  assert.equal(now.failed_charges, 0);
  const sched = await get(s, `/v1/public/subscriptions/${sub.id}/schedule`, shop.key);
  assert.equal(now.next_charge_at, sched.upcoming[0]);
  const anchor = new Date(sub.activated_at);
  const next = new Date(now.next_charge_at);
  assert.equal(next.getUTCDate(), Math.min(anchor.getUTCDate(), new Date(Date.UTC(next.getUTCFullYear(), next.getUTCMonth() + 1, 0)).getUTCDate()), 'the anchor day, not the retry day');
  assert.equal(next.getUTCHours(), anchor.getUTCHours());
  assert.deepEqual(sched.charges.slice(1).map((c: any) => [c.status, c.attempt, c.created_at]), [
    ['failed', 1, new Date(T).toISOString()],
    ['succeeded', 2, new Date(T + DAY).toISOString()],
  ]);
  assert.deepEqual(await webhooksOf(s, sub.id), ['subscription.activated', 'subscription.charge_failed', 'subscription.past_due', 'subscription.charge_succeeded']);
  assert.deepEqual(
    (await streamOf(s, sub.id)).filter((e) => e.kind === 'subscription.status_changed').map((e) => e.payload.status),
    ['pending', 'active', 'past_due', 'active'],
  );
});

test('a daily subscription whose retry succeeds a day late is not charged twice that day', async () => {
  const shop = await s.newShop();
  const sub = await activeSubscription(shop, { amount: 1000, period: 'day' });
  await s.request('POST', `/v1/test/tokens/${sub.token_id}/outcomes`, { body: { outcomes: ['fail'] }, key: shop.key });
  const T = Date.parse(sub.next_charge_at);
  await advanceTo(s, T + DAY, shop.key);
  const now = await get(s, `/v1/public/subscriptions/${sub.id}`, shop.key);
  assert.equal(now.status, 'active');
  assert.equal(now.next_charge_at, new Date(T + 2 * DAY).toISOString());
  const sched = await get(s, `/v1/public/subscriptions/${sub.id}/schedule`, shop.key);
  assert.deepEqual(sched.charges.slice(1).map((c: any) => c.status), ['failed', 'succeeded']);
});

test('upcoming honours interval_count and week periods', async () => {
  const shop = await s.newShop();
  const sub = await activeSubscription(shop, { amount: 1000, period: 'week', interval_count: 2 });
  const sched = await get(s, `/v1/public/subscriptions/${sub.id}/schedule`, shop.key);
  assert.equal(sched.upcoming.length, 12);
  const first = Date.parse(sub.activated_at);
  sched.upcoming.forEach((u: string, i: number) => assert.equal(Date.parse(u), first + (i + 1) * 14 * DAY));
});

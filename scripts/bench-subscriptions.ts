/**
 * Subscriptions benchmark: N daily subscriptions run D days of charges in ONE test clock advance, over a real
 * server and SQLite file. Prints the time of the advance, charges per second, and a PASS/FAIL line for the
 * result (every charge made once, on its day, and succeeded) and for the time target.
 * Usage: npm run bench:subscriptions [-- --small]
 * Full: 100 subscriptions × 365 days, target ≤ 60 s. --small (CI): 10 × 30, where a missed time target is
 * reported but only a wrong result fails the run.
 */
import assert from 'node:assert/strict';
import { startTestServer } from '../test/helpers/server';

const small = process.argv.includes('--small');
const SUBS = small ? 10 : 100;
const DAYS = small ? 30 : 365;
const TARGET_S = small ? 10 : 60;
const DAY_MS = 86_400_000;

function verdict(ok: boolean, what: string): boolean {
  process.stdout.write(`${ok ? 'PASS' : 'FAIL'}  ${what}\n`);
  return ok;
}

async function main(): Promise<number> {
  const s = await startTestServer({ simDelaySeconds: 0 }, {});
  try {
    const shop = await s.newShop();
    const call = async (method: string, path: string, body?: unknown): Promise<any> => {
      const r = await s.request(method, path, { key: shop.key, body, noSchemaCheck: true });
      if (r.status >= 300) throw new Error(`${method} ${path} answered ${r.status}: ${r.text}`);
      return r.body;
    };
    process.stdout.write(`${SUBS} daily subscriptions, ${DAYS} days of charges in one clock advance\n`);
    const ids: string[] = [];
    for (let i = 0; i < SUBS; i++) {
      const c = await call('POST', '/v1/public/subscriptions', { amount: 10000 + i * 100, customer_ref: `bench-${i}`, period: 'day' });
      await call('POST', `/v1/test/payments/${c.initial_payment.id}/simulate`, { action: 'open_session' });
      ids.push(c.subscription.id);
    }
    await call('POST', '/v1/test/clock/advance', { seconds: 0 });
    const anchors = new Map<string, number>();
    for (const id of ids) {
      const sub = await call('GET', `/v1/public/subscriptions/${id}`);
      assert.equal(sub.status, 'active', `subscription ${id} did not activate`);
      anchors.set(id, Date.parse(sub.activated_at));
    }

    const t0 = performance.now();
    const clock = await call('POST', '/v1/test/clock/advance', { seconds: DAYS * 86_400 });
    const seconds = (performance.now() - t0) / 1000;
    const charges = SUBS * DAYS;
    process.stdout.write(`advance: ${seconds.toFixed(2)} s, ${clock.jobs_run} jobs run\n`);
    process.stdout.write(`charges: ${charges.toLocaleString('en')}, ${(charges / seconds).toFixed(0)} charges/s\n`);

    let right = true;
    for (const id of ids) {
      const sched = await call('GET', `/v1/public/subscriptions/${id}/schedule`);
      const made = sched.charges.filter((c: any) => c.kind === 'subscription_charge');
      const anchor = anchors.get(id)!;
      const onTime = made.every((c: any, n: number) => Date.parse(c.created_at) === anchor + (n + 1) * DAY_MS && c.status === 'succeeded');
      if (made.length !== DAYS || !onTime || sched.status !== 'active') {
        right = false;
        process.stdout.write(`  subscription ${id}: ${made.length} charges, on time and succeeded: ${onTime}, status ${sched.status}\n`);
      }
    }
    const ok = verdict(right, `every subscription charged once a day for ${DAYS} days, all succeeded`);
    const fast = verdict(seconds <= TARGET_S, `advance took ${seconds.toFixed(2)} s (target ≤ ${TARGET_S} s)`);
    return ok && (fast || small) ? 0 : 1;
  } finally {
    await s.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`bench-subscriptions: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);

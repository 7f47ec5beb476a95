// Webhook fairness benchmark: one test shop's N receivers accept and never answer, behind M paid payments
// with those receivers as webhook_url; then another shop's payment is paid and we time until its webhook
// reaches a prompt receiver. Measured at two sizes, beside the same delay with no hanging receivers at all,
// against the target (the other shop's webhook within 1 s); each figure is the median of 5 deliveries.
// Ends with a PASS/FAIL line.
//   node --import tsx scripts/bench-webhook-fairness.ts           # 20/160 and 80/640
//   node --import tsx scripts/bench-webhook-fairness.ts --small   # 10/80 and 20/160, for CI
//   --exe PATH  the kopek executable (default dist/kopek, else the sources through tsx)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kopekCommand, runKopek, startKopek, scriptArgs, type KopekCommand } from './lib/kopek-process';
import { startHangs, startPrompt, payIntoHangs, waitHeld, otherShopDelay, paidPayment, type Prompt } from './lib/hanging-receivers';

/** The target: another shop's webhook arrives within this, whatever one shop's receivers do. */
const TARGET_MS = 1000;
/** How long a hanging attempt is held before the server gives up on it: longer than the whole measurement. */
const WEBHOOK_TIMEOUT_MS = 120_000;
/** Deliveries timed per figure; the median is reported (one is a few ms, so one alone is noise). */
const SAMPLES = 5;
/** Attempts one shop may have in flight (WORKER_LIMITS in src/money/webhooks/delivery.ts: 16 of 64); the noisy shop should fill exactly these. */
const SHOP_SLOTS = 16;

interface Figures {
  receivers: number;
  payments: number;
  held: number;
  setup_ms: number;
  /** Another shop's webhook before any hanging receiver existed, and after. */
  quiet_ms: number | null;
  other_ms: number | null;
  /** The first attempt: from the paying request's answer to the webhook's arrival, none hanging (negative: it came first). */
  first_ms: number | null;
}

/** One paid payment of `key`'s shop; from the paying request's answer to its webhook's arrival at `prompt`. */
async function firstAttemptMs(base: string, key: string, prompt: Prompt): Promise<number | null> {
  const t0 = performance.now();
  await paidPayment(base, key, prompt.url);
  const answered = performance.now();
  const t = await prompt.firstAfter(t0, 10_000);
  return t === null ? null : t - answered;
}

function demoShop(k: KopekCommand, db: string): string {
  const d = runKopek(k, ['demo', '--db', db, '--json']);
  if (d.code !== 0) throw new Error(`kopek demo failed: ${d.stderr}`);
  return (JSON.parse(d.stdout) as { key: string }).key;
}

/** The median of SAMPLES timings taken one after another (null when any never arrived). */
async function median(take: () => Promise<number | null>): Promise<number | null> {
  const xs: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const x = await take();
    if (x === null) return null;
    xs.push(x);
  }
  return xs.sort((a, b) => a - b)[SAMPLES >> 1];
}

async function measure(k: KopekCommand, receivers: number, payments: number): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-bench-fair-'));
  const db = join(dir, 'kopek.db');
  const noisy = demoShop(k, db);
  const other = demoShop(k, db);
  const hangs = await startHangs(receivers);
  const prompt = await startPrompt();
  // The test bank never settles by itself: the payments are paid through the simulate route.
  const server = await startKopek(k, ['--db', db, '--no-demo', '--sim-delay', '3600', '--log-level', 'warn', '--webhook-timeout-ms', String(WEBHOOK_TIMEOUT_MS)]);
  try {
    // The first delivery of a fresh server warms it up and is not counted.
    await otherShopDelay(server.url, other, prompt, 10_000);
    const quiet_ms = await median(() => otherShopDelay(server.url, other, prompt, 10_000));
    const first_ms = await median(() => firstAttemptMs(server.url, other, prompt));
    const t0 = performance.now();
    await payIntoHangs(server.url, noisy, hangs, payments);
    const held = await waitHeld(hangs, Math.min(SHOP_SLOTS, receivers * 4), 5000);
    const setup_ms = performance.now() - t0;
    const other_ms = await median(() => otherShopDelay(server.url, other, prompt, 30_000));
    if (server.proc.exitCode !== null || server.proc.signalCode !== null) throw new Error(`the server ended during the run: ${server.stderr().slice(-500)}`);
    return { receivers, payments, held, setup_ms, quiet_ms, other_ms, first_ms };
  } finally {
    server.proc.kill('SIGTERM');
    await server.exited;
    await hangs.close();
    await prompt.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const ms = (x: number | null): string => (x === null ? 'never (30 s)' : `${x.toFixed(0)} ms`);

async function main(): Promise<number> {
  const opts = scriptArgs(process.argv.slice(2), { small: 'switch', exe: 'value' });
  const k = kopekCommand(opts.get('exe') as string | undefined, true);
  const sizes: Array<[number, number]> = opts.has('small') ? [[10, 80], [20, 160]] : [[20, 160], [80, 640]];
  console.log(`bench-webhook-fairness: ${k.label}, sizes ${sizes.map(([n, m]) => `${n}/${m}`).join(' and ')} (hanging receivers / their payments), target ${TARGET_MS} ms`);
  const results: Figures[] = [];
  for (const [n, m] of sizes) {
    const f = await measure(k, n, m);
    results.push(f);
    console.log(
      `${n} hanging receivers behind ${m} payments: they hold ${f.held} connections (set up in ${(f.setup_ms / 1000).toFixed(1)} s); ` +
        `another shop's webhook ${ms(f.other_ms)} (${ms(f.quiet_ms)} with none hanging), ${f.other_ms === null ? '∞' : (f.other_ms / TARGET_MS).toFixed(3)} of the target; ` +
        `first attempt ${f.first_ms === null ? 'never' : `${f.first_ms.toFixed(1)} ms`} after the paying request's answer`,
    );
  }
  const [a, b] = results;
  if (a.other_ms !== null && b.other_ms !== null) console.log(`growth from ${a.receivers}/${a.payments} to ${b.receivers}/${b.payments}: ×${(b.other_ms / Math.max(1, a.other_ms)).toFixed(2)} for ×${b.payments / a.payments} the load`);
  const bad = results.filter((f) => f.other_ms === null || f.other_ms > TARGET_MS || f.held > SHOP_SLOTS);
  const worst = Math.max(...results.map((f) => f.other_ms ?? Infinity));
  console.log(`bench-webhook-fairness: ${bad.length === 0 ? 'PASS' : 'FAIL'} (worst ${ms(worst === Infinity ? null : worst)}, target ${TARGET_MS} ms; one shop holds at most ${SHOP_SLOTS} slots)`);
  return bad.length === 0 ? 0 : 1;
}

main().then(
  (code) => (process.exitCode = code),
  (err) => {
    console.log(`bench-webhook-fairness: FAIL: ${(err as Error).message}`);
    process.exitCode = 1;
  },
);

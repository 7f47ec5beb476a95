import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { runCli } from '../helpers/cli';
import { paidPayment } from '../helpers/money';

// kopek doctor's findings about counters, failing jobs and webhook endpoints, on the engine the suite runs on:
// each names what it found (the shop, the job, the counter) and the command or statement that deals with it.

let s: TestServer;

before(async () => {
  s = await startTestServer();
  await paidPayment(s, s.demo.key, 30_000);
  await paidPayment(s, s.demo.key, 20_000);
});

after(async () => {
  await s.close();
});

/** kopek doctor --json on the test server's database: the exit code and the findings by check. */
async function doctor(): Promise<{ code: number; by: Record<string, { ok: boolean; detail: string; action?: string }> }> {
  const r = await runCli(['doctor', '--db', s.dbPath, '--json']);
  return { code: r.code, by: Object.fromEntries(r.json.findings.map((f: { check: string }) => [f.check, f])) };
}

test("doctor reports a counter behind its table (on PostgreSQL every insert there failed on a taken key), and the statement it names moves it past", async () => {
  const healthy = await doctor();
  assert.equal(healthy.code, 0, JSON.stringify(healthy.by));
  assert.equal(healthy.by.counters.ok, true);
  assert.match(healthy.by.counters.detail, /^\d+ counters, each at or past its table's largest key$/);

  // As a database moved by hand leaves it: the counter of a table with rows back at its start.
  const pg = s.store.engine === 'postgres';
  const table = pg ? 'ledger_postings' : 'payments';
  const max = (await s.store.get<{ m: number }>(`SELECT max(${pg ? 'id' : 'seq'}) AS m FROM ${table}`))!.m;
  assert.ok(max > 1);
  await s.store.tx(async (tx) => {
    if (pg) await tx.get(`SELECT setval('ledger_postings_id_seq', 1, false) AS v`);
    else await tx.run(`UPDATE sqlite_sequence SET seq = 1 WHERE name = 'payments'`);
  });
  const behind = await doctor();
  assert.equal(behind.code, 1);
  assert.equal(behind.by.counters.ok, false);
  const column = pg ? 'id' : 'seq';
  assert.match(behind.by.counters.detail, new RegExp(`^1 counter\\(s\\) behind their table .*: ${table}\\.${column}: counter at ${pg ? 0 : 1}, largest key ${max}$`));
  const fix = /: (.+)$/.exec(behind.by.counters.action!)![1];
  assert.match(fix, pg ? /^SELECT setval\('ledger_postings_id_seq', \(SELECT max\(id\) FROM ledger_postings\)\);$/ : /^DELETE FROM sqlite_sequence WHERE name = 'payments'; INSERT INTO sqlite_sequence/);

  // The statement the action names puts it right.
  await s.store.tx(async (tx) => {
    for (const st of fix.split(/;\s*/).filter(Boolean)) await (pg ? tx.get(st) : tx.run(st));
  });
  const fixed = await doctor();
  assert.equal(fixed.by.counters.ok, true, fixed.by.counters.detail);
  assert.equal(fixed.code, 0);
  // And the table takes writes again.
  await paidPayment(s, s.demo.key, 10_000);
});

test('doctor reports a job that failed three times in a row and still retries, naming the job and its shop', async () => {
  const insert = (attempt: number, subject: string) =>
    s.store.tx((tx) =>
      tx.run(
        `INSERT INTO jobs (kind, subject_id, shop_id, mode, due_at, run_at, state, attempt, last_error, created_at) VALUES ('payment.expire', ?, ?, 'test', ?, ?, 'pending', ?, 'acquirer answered 502', 0)`,
        subject,
        s.demo.shopId,
        4e12,
        4e12,
        attempt,
      ),
    );
  try {
    await insert(2, 'doctor-twice');
    const twice = await doctor();
    assert.equal(twice.by['failing jobs'].ok, true, 'two failures are a retry, not a finding');
    await insert(3, 'doctor-thrice');
    const thrice = await doctor();
    assert.equal(thrice.code, 1);
    const f = thrice.by['failing jobs'];
    assert.equal(f.ok, false);
    const id = (await s.store.get<{ id: number }>(`SELECT id FROM jobs WHERE subject_id = 'doctor-thrice'`))!.id;
    assert.equal(f.detail, `1 job(s) failed 3 or more times in a row and retry: job ${id} payment.expire of shop ${s.demo.shopId}, 3 failures, last: acquirer answered 502`);
    assert.match(f.action!, /^kopek jobs shows each with its last error/);
    assert.equal(thrice.by['dead jobs'].ok, true);
  } finally {
    await s.store.tx((tx) => tx.run(`DELETE FROM jobs WHERE subject_id IN ('doctor-twice', 'doctor-thrice')`));
  }
});

test('doctor names the shop in the webhook commands it suggests: a disabled endpoint and a failing one', async () => {
  const other = await s.newShop();
  try {
    await s.store.tx(async (tx) => {
      await tx.run(
        `INSERT INTO webhook_endpoints (id, shop_id, url, created_at, disabled_at, disabled_reason) VALUES ('we_doctor', ?, 'https://gone.example/hook', 0, 1, 'receiver answered 410 Gone')`,
        other.shopId,
      );
      await tx.run(
        `INSERT INTO webhook_deliveries (event_seq, event_id, event, shop_id, mode, url, state, attempts, round_start, created_at) VALUES (0, 'evt_doctor', 'payment.succeeded', ?, 'test', 'https://down.example/hook', 'failed', 20, 0, 0)`,
        other.shopId,
      );
    });
    const r = await doctor();
    assert.equal(r.code, 1);
    const disabled = r.by['disabled endpoints'];
    assert.match(disabled.detail, new RegExp(`we_doctor https://gone\\.example/hook of shop ${other.shopId} \\(receiver answered 410 Gone\\)`));
    assert.ok(disabled.action!.includes(`kopek webhook delete we_doctor, kopek webhook add --shop ${other.shopId} --url https://gone.example/hook`), disabled.action);
    const failing = r.by['failing endpoints'];
    assert.equal(failing.detail, `https://down.example/hook (shop ${other.shopId}): 0 retrying, 1 given up`);
    assert.ok(failing.action!.startsWith(`kopek webhook deliveries --shop ${other.shopId} shows the answers`), failing.action);
    for (const f of [disabled, failing]) assert.ok(!f.action!.includes('SHOP'), f.action);
  } finally {
    await s.store.tx(async (tx) => {
      await tx.run(`DELETE FROM webhook_deliveries WHERE event_id = 'evt_doctor'`);
      await tx.run(`DELETE FROM webhook_endpoints WHERE id = 'we_doctor'`);
    });
  }
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startTestServer, type TestServer } from '../helpers/server';
import { ledgerCheck, paidPayment } from '../helpers/money';
import { cardBody, sbpBody } from '../helpers/payouts';

let s: TestServer;
let payout = '';
let payment = '';
before(async () => {
  s = await startTestServer({ simDelaySeconds: 60 });
  payment = await paidPayment(s, s.demo.key, 100_000);
  await s.request('POST', `/v1/public/payments/${payment}/refund`, { body: { amount: 10_000 } });
  payout = (await s.request('POST', '/v1/public/payouts', { body: sbpBody(60_000) })).body.payout.id;
  await s.request('POST', '/v1/public/payouts', { body: cardBody(5_001) });
  await s.request('POST', '/v1/test/clock/advance', { body: { seconds: 60 } });
  await s.request('POST', '/v1/public/payouts', { body: sbpBody(1_000) });
});
after(() => s.close());

let copies = 0;
/** A consistent copy of the live database (made on a connection of the test's own), changed by `corrupt`. */
function corruptedCopy(corrupt: (db: Database.Database) => void): string {
  const path = join(s.dir, `copy-${++copies}.db`);
  const live = new Database(s.dbPath, { readonly: true });
  try {
    live.exec(`VACUUM INTO '${path}'`);
  } finally {
    live.close();
  }
  const db = new Database(path);
  corrupt(db);
  db.close();
  return path;
}

/** Recompute the stored balances from the postings, so that a corruption is consistent and only deeper checks find it. */
function resum(db: Database.Database): void {
  db.prepare(
    `UPDATE ledger_balances SET balance = (SELECT COALESCE(SUM(amount), 0) FROM ledger_postings p
     WHERE p.shop_id = ledger_balances.shop_id AND p.mode = ledger_balances.mode AND p.account = ledger_balances.account)`,
  ).run();
}

/** Change the payment's credit to `amount` in its entry, postings and balances alike: only the replay and the payment check can tell. */
function setCredit(db: Database.Database, amount: number): void {
  const e = db.prepare(`SELECT id FROM ledger_entries WHERE movement = 'payment_succeeded' AND source_id = ?`).get(payment) as { id: number };
  db.prepare('UPDATE ledger_entries SET amount = ? WHERE id = ?').run(amount, e.id);
  db.prepare('UPDATE ledger_postings SET amount = CASE WHEN amount > 0 THEN ? ELSE ? END WHERE entry_id = ?').run(amount, -amount, e.id);
  resum(db);
}

test('kopek ledger check passes on the live database, while the server runs', async () => {
  const c = await ledgerCheck(s.dbPath);
  assert.equal(c.code, 0, c.stdout + c.stderr);
  assert.deepEqual(c.json.problems, []);
  const book = c.json.books.find((b: any) => b.shop_id === s.demo.shopId && b.mode === 'test');
  // 100 000 in, 10 000 refunded, 60 000 paid out, 5 001 failed and released, 1 000 still reserved.
  assert.deepEqual([book.balance, book.available, book.reserved], [30_000, 29_000, 1_000]);
});

test('a posting changed on a copy is found: the entry no longer balances and the stored balance differs', async () => {
  const path = corruptedCopy((db) => {
    db.prepare(`UPDATE ledger_postings SET amount = amount + 1 WHERE id = (SELECT MIN(id) FROM ledger_postings WHERE account = 'shop:available')`).run();
  });
  const c = await ledgerCheck(path);
  assert.equal(c.code, 1);
  assert.equal(c.json.ok, false);
  assert.ok(c.json.problems.some((p: string) => /postings sum to 1, not 0/.test(p)), c.stdout);
  assert.ok(c.json.problems.some((p: string) => /shop:available stored .* but its postings sum to/.test(p)), c.stdout);
  assert.match(c.stderr, /check failed/);
});

test('a stored balance changed on a copy is found', async () => {
  const path = corruptedCopy((db) => db.prepare(`UPDATE ledger_balances SET balance = balance - 500 WHERE account = 'shop:reserved'`).run());
  const c = await ledgerCheck(path);
  assert.equal(c.code, 1);
  assert.ok(c.json.problems.some((p: string) => /shop:reserved stored/.test(p)), c.stdout);
});

test('a succeeded payout without its settlement is found', async () => {
  const path = corruptedCopy((db) => {
    const e = db.prepare(`SELECT id FROM ledger_entries WHERE movement = 'payout_settled' AND source_id = ?`).get(payout) as { id: number };
    db.prepare('DELETE FROM ledger_postings WHERE entry_id = ?').run(e.id);
    db.prepare('DELETE FROM ledger_entries WHERE id = ?').run(e.id);
    resum(db);
  });
  const c = await ledgerCheck(path);
  assert.equal(c.code, 1);
  assert.deepEqual(c.json.problems, [`payout "${payout}" (succeeded): missing payout_settled`]);
});

test('a smaller credit, consistent in every table, is still found: the payout then overdrew available', async () => {
  const path = corruptedCopy((db) => setCredit(db, 50_000));
  const c = await ledgerCheck(path);
  assert.equal(c.code, 1);
  assert.ok(c.json.problems.some((p: string) => p.includes(`payout "${payout}" overdrew available`)), c.stdout);
  assert.ok(c.json.problems.some((p: string) => p.includes(`payment "${payment}" (succeeded): payment_succeeded posted 50000, its amount is 100000`)), c.stdout);
});

test('a refund that overdrew available is found, as a payout that did is', async () => {
  const refund = (await s.store.get<{ source_id: string }>(`SELECT source_id FROM ledger_entries WHERE movement = 'refund_reserved'`))!.source_id;
  // A credit of 5 000 instead of 100 000: the refund of 10 000 reserved after it leaves available at -5 000.
  const path = corruptedCopy((db) => setCredit(db, 5_000));
  const c = await ledgerCheck(path);
  assert.equal(c.code, 1);
  assert.ok(c.json.problems.some((p: string) => p.includes(`refund "${refund}" overdrew available to -5000`)), c.stdout);
});

test('kopek ledger check prints a readable report without --json, and its usage with --help', async () => {
  const main = join(__dirname, '..', '..', 'src', 'main.ts');
  const run = (args: string[]) =>
    new Promise<{ code: number; out: string }>((resolve) =>
      execFile(process.execPath, ['--import', 'tsx', main, 'ledger', ...args], (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
      ),
    );
  const ok = await run(['check', '--db', s.dbPath]);
  assert.equal(ok.code, 0, ok.out);
  assert.match(ok.out, /^ok: (1 book balances|\d+ books balance)$/m);
  assert.match(ok.out, new RegExp(`${s.demo.shopId} test  balance 30000  available 29000  reserved 1000`));
  const help = await run(['--help']);
  assert.equal(help.code, 0);
  assert.match(help.out, /Usage:\n  kopek ledger check/);
  const wrong = await run(['balance', '--db', s.dbPath]);
  assert.equal(wrong.code, 1);
  assert.match(wrong.out, /unknown subcommand "balance"/);
});

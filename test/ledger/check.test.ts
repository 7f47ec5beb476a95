import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { startTestServer, type TestServer } from '../helpers/server';
import { ledgerCheck, paidPayment } from '../helpers/money';
import { cardBody, sbpBody } from '../helpers/payouts';
import { dropPgDatabase, freshPgDatabase } from '../helpers/pg';
import { listTables } from '../../src/platform/storage/dialect';
import { openEngine } from '../../src/platform/storage/maintenance';
import type { Tx } from '../../src/platform/storage/store';

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
const pgCopies: string[] = [];
after(async () => {
  await s.close();
  for (const url of pgCopies) await dropPgDatabase(url);
});

let copies = 0;
/** A consistent copy of the live database (made on a connection of the test's own), changed by `corrupt` in one transaction. */
async function corruptedCopy(corrupt: (tx: Tx) => Promise<unknown>): Promise<string> {
  let path = join(s.dir, `copy-${++copies}.db`);
  if (s.store.engine === 'postgres') path = await pgCopy();
  else {
    const live = new Database(s.dbPath, { readonly: true });
    try {
      live.exec(`VACUUM INTO '${path}'`);
    } finally {
      live.close();
    }
  }
  const store = await openEngine(path);
  try {
    await store.tx(corrupt);
  } finally {
    await store.close();
  }
  return path;
}

/**
 * PostgreSQL's counterpart of VACUUM INTO: a new database with the schema, holding every row of every table as
 * one snapshot of the live database shows them. Triggers are off while it fills (an event must not be queued
 * twice) and foreign keys are checked once everything is in.
 */
async function pgCopy(): Promise<string> {
  const url = await freshPgDatabase();
  pgCopies.push(url);
  const tables = (await listTables(s.store)).map((t) => `"${t}"`);
  const from = new pg.Client({ connectionString: s.dbPath });
  const to = new pg.Client({ connectionString: url });
  await from.connect();
  await to.connect();
  try {
    await from.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    await to.query('BEGIN');
    await to.query('SET CONSTRAINTS ALL DEFERRED');
    await to.query(`TRUNCATE ${tables.join(', ')}`);
    for (const t of tables) await to.query(`ALTER TABLE ${t} DISABLE TRIGGER USER`);
    for (const t of tables) {
      // As text, so that 64-bit integers never pass through a JavaScript number.
      const rows = (await from.query(`SELECT coalesce(json_agg(t), '[]')::text AS rows FROM ${t} t`)).rows[0].rows as string;
      await to.query(`INSERT INTO ${t} SELECT * FROM json_populate_recordset(NULL::${t}, $1::json)`, [rows]);
    }
    await to.query('SET CONSTRAINTS ALL IMMEDIATE');
    for (const t of tables) await to.query(`ALTER TABLE ${t} ENABLE TRIGGER USER`);
    await to.query('COMMIT');
    await from.query('COMMIT');
  } finally {
    await from.end();
    await to.end();
  }
  return url;
}

/** Recompute the stored balances from the postings, so that a corruption is consistent and only deeper checks find it. */
function resum(tx: Tx): Promise<unknown> {
  return tx.run(
    `UPDATE ledger_balances SET balance = (SELECT COALESCE(SUM(amount), 0) FROM ledger_postings p
     WHERE p.shop_id = ledger_balances.shop_id AND p.mode = ledger_balances.mode AND p.account = ledger_balances.account)`,
  );
}

/** Change the payment's credit to `amount` in its entry, postings and balances alike: only the replay and the payment check can tell. */
async function setCredit(tx: Tx, amount: number): Promise<void> {
  const e = (await tx.get<{ id: number }>(`SELECT id FROM ledger_entries WHERE movement = 'payment_succeeded' AND source_id = ?`, payment))!;
  await tx.run('UPDATE ledger_entries SET amount = ? WHERE id = ?', amount, e.id);
  await tx.run('UPDATE ledger_postings SET amount = ? WHERE entry_id = ? AND amount > 0', amount, e.id);
  await tx.run('UPDATE ledger_postings SET amount = ? WHERE entry_id = ? AND amount < 0', -amount, e.id);
  await resum(tx);
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
  const path = await corruptedCopy((tx) =>
    tx.run(`UPDATE ledger_postings SET amount = amount + 1 WHERE id = (SELECT MIN(id) FROM ledger_postings WHERE account = 'shop:available')`),
  );
  const c = await ledgerCheck(path);
  assert.equal(c.code, 1);
  assert.equal(c.json.ok, false);
  assert.ok(c.json.problems.some((p: string) => /postings sum to 1, not 0/.test(p)), c.stdout);
  assert.ok(c.json.problems.some((p: string) => /shop:available stored .* but its postings sum to/.test(p)), c.stdout);
  assert.match(c.stderr, /check failed/);
});

test('a stored balance changed on a copy is found', async () => {
  const path = await corruptedCopy((tx) => tx.run(`UPDATE ledger_balances SET balance = balance - 500 WHERE account = 'shop:reserved'`));
  const c = await ledgerCheck(path);
  assert.equal(c.code, 1);
  assert.ok(c.json.problems.some((p: string) => /shop:reserved stored/.test(p)), c.stdout);
});

test('a succeeded payout without its settlement is found', async () => {
  const path = await corruptedCopy(async (tx) => {
    const e = (await tx.get<{ id: number }>(`SELECT id FROM ledger_entries WHERE movement = 'payout_settled' AND source_id = ?`, payout))!;
    await tx.run('DELETE FROM ledger_postings WHERE entry_id = ?', e.id);
    await tx.run('DELETE FROM ledger_entries WHERE id = ?', e.id);
    await resum(tx);
  });
  const c = await ledgerCheck(path);
  assert.equal(c.code, 1);
  assert.deepEqual(c.json.problems, [`payout "${payout}" (succeeded): missing payout_settled`]);
});

test('a smaller credit, consistent in every table, is still found: the payout then overdrew available', async () => {
  const path = await corruptedCopy((tx) => setCredit(tx, 50_000));
  const c = await ledgerCheck(path);
  assert.equal(c.code, 1);
  assert.ok(c.json.problems.some((p: string) => p.includes(`payout "${payout}" overdrew available`)), c.stdout);
  assert.ok(c.json.problems.some((p: string) => p.includes(`payment "${payment}" (succeeded): payment_succeeded posted 50000, its amount is 100000`)), c.stdout);
});

test('a refund that overdrew available is found, as a payout that did is', async () => {
  const refund = (await s.store.get<{ source_id: string }>(`SELECT source_id FROM ledger_entries WHERE movement = 'refund_reserved'`))!.source_id;
  // A credit of 5 000 instead of 100 000: the refund of 10 000 reserved after it leaves available at -5 000.
  const path = await corruptedCopy((tx) => setCredit(tx, 5_000));
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

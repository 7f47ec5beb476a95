import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { advance, createPayment, getPayment, pendingJobsOf, simulate, statusesOf } from '../helpers/payments';
import { LINK_END, SESSION_END } from '../../src/money/payments/store';
import { openDatabase } from '../../src/platform/storage/sqlite/open';
import { sqliteOnly } from '../helpers/pg';
import { BASE_VERSION } from '../../src/platform/storage/migrations';
import type { Tx } from '../../src/platform/storage/store';

// Amounts ending in 04 stay at the test bank without an answer, so only the session's end closes them.
const SILENT = 10004;

let s: TestServer;
before(async () => {
  s = await startTestServer({ simDelaySeconds: 0 });
});
after(() => s.close());

/** Mark the database as a build of schema version `v` left it, on either engine. */
async function markVersion(tx: Tx, v: number): Promise<void> {
  if (s.store.engine === 'postgres') await tx.run('UPDATE kopek_schema SET version = ?', v);
  else await tx.run(`PRAGMA user_version = ${v}`);
}



test('bank sessions of different lengths each expire at their own end, through one sweep job per shop and mode', async () => {
  const shop = await s.newShop();
  // cards: 15 min, sbp: 20 min. The sbp session opens first, so the cards one moves the sweep earlier.
  const sbp = (await createPayment(s, { amount: SILENT, method: 'sbp' }, shop.key)).payment.id;
  const cards = (await createPayment(s, { amount: SILENT, method: 'cards' }, shop.key)).payment.id;
  for (const id of [sbp, cards]) assert.equal((await simulate(s, id, { action: 'open_session' }, shop.key)).status, 200);
  const sweeps = (await pendingJobsOf(s, shop.shopId)).filter((j) => j.kind === 'payment.session_sweep');
  assert.equal(sweeps.length, 1, 'two sessions leave one sweep job');
  assert.equal(sweeps[0].subject_id, `${shop.shopId}/test`);
  const until = Date.parse((await getPayment(s, cards, shop.key)).processing_until);
  assert.equal(sweeps[0].due_at, until, 'the sweep is due when the shorter session ends');
  assert.equal((await pendingJobsOf(s, shop.shopId)).filter((j) => j.subject_id === sbp || j.subject_id === cards).length, 0, 'no job of a payment of its own');

  await advance(s, 14 * 60 + 50, shop.key);
  assert.deepEqual(await statusesOf(s, [sbp, cards], shop.key), ['processing', 'processing']);
  await advance(s, 20, shop.key);
  assert.deepEqual(await statusesOf(s, [sbp, cards], shop.key), ['processing', 'expired']);
  await advance(s, 5 * 60, shop.key);
  assert.deepEqual(await statusesOf(s, [sbp, cards], shop.key), ['expired', 'expired']);
  for (const id of [sbp, cards]) assert.equal((await getPayment(s, id, shop.key)).metadata.failure_code, 'session_expired');
  assert.deepEqual((await pendingJobsOf(s, shop.shopId)).filter((j) => j.kind === 'payment.session_sweep'), [], 'no sweep waits once no session is open');
});

test('a session the bank answered is not expired by the sweep, and the answer cancels no job', async () => {
  const shop = await s.newShop();
  const paid = (await createPayment(s, { amount: SILENT, method: 'sbp' }, shop.key)).payment.id;
  const left = (await createPayment(s, { amount: SILENT, method: 'sbp' }, shop.key)).payment.id;
  for (const id of [paid, left]) assert.equal((await simulate(s, id, { action: 'open_session' }, shop.key)).status, 200);
  assert.equal((await simulate(s, paid, { action: 'succeed' }, shop.key)).status, 200);
  const cancelled = (await s.store.get<{ n: number }>(`SELECT count(*) AS n FROM jobs WHERE shop_id = ? AND state = 'cancelled'`, shop.shopId))!;
  assert.equal(cancelled.n, 0);
  await advance(s, 21 * 60, shop.key);
  assert.deepEqual(await statusesOf(s, [paid, left], shop.key), ['succeeded', 'expired']);
});

test('more sessions than one sweep run takes all expire in one advance, and another shop\'s stay open', async () => {
  const shop = await s.newShop();
  const other = await s.newShop();
  const ids: string[] = [];
  for (let i = 0; i < 230; i++) {
    const id = (await createPayment(s, { amount: SILENT, method: 'cards' }, shop.key)).payment.id;
    assert.equal((await simulate(s, id, { action: 'open_session' }, shop.key)).status, 200);
    ids.push(id);
  }
  const theirs = (await createPayment(s, { amount: SILENT, method: 'cards' }, other.key)).payment.id;
  assert.equal((await simulate(s, theirs, { action: 'open_session' }, other.key)).status, 200);
  await advance(s, 16 * 60, shop.key);
  const counts = await s.store.all(`SELECT status, count(*) AS n FROM payments WHERE shop_id = ? GROUP BY status`, shop.shopId);
  assert.deepEqual(counts, [{ status: 'expired', n: 230 }]);
  const events = (await s.store.get<{ n: number }>(`SELECT count(*) AS n FROM events WHERE shop_id = ? AND webhook_event = 'payment.expired'`, shop.shopId))!;
  assert.equal(events.n, 230);
  assert.equal((await getPayment(s, theirs, other.key)).status, 'processing', 'the other shop\'s clock did not move');
});

test('a per-payment session job a database of kopek 0.1.0 holds becomes the shop\'s session sweep at start, and expires its payment', async () => {
  const shop = await s.newShop();
  const id = (await createPayment(s, { amount: SILENT, method: 'cards' }, shop.key)).payment.id;
  assert.equal((await simulate(s, id, { action: 'open_session' }, shop.key)).status, 200);
  // As schema version 8 left an open session: a job of the payment's own, no sweep.
  await s.store.write(async (tx) => {
    await tx.run(`DELETE FROM jobs WHERE shop_id = ? AND kind = 'payment.session_sweep'`, shop.shopId);
    const p = (await tx.get<{ processing_until: number }>('SELECT processing_until FROM payments WHERE id = ?', id))!;
    await tx.run(
      `INSERT INTO jobs (kind, subject_id, shop_id, mode, due_at, run_at, payload, created_at) VALUES ('payment.session_expiry', ?, ?, 'test', ?, ?, '{}', ?)`,
      id, shop.shopId, p.processing_until, p.processing_until, Date.now(),
    );
    await markVersion(tx, BASE_VERSION);
  });
  await s.restart();
  assert.equal(await s.store.get(`SELECT 1 FROM jobs WHERE kind = 'payment.session_expiry'`), undefined, 'the start converted the job');
  await advance(s, 16 * 60, shop.key);
  assert.equal((await getPayment(s, id, shop.key)).status, 'expired');
  const sweeps = await s.store.all<{ state: string }>(`SELECT state FROM jobs WHERE kind = 'payment.session_sweep' AND subject_id = ?`, `${shop.shopId}/test`);
  assert.deepEqual(sweeps.map((j) => j.state), ['done'], 'one sweep, which ran');
});

test('both sweeps find what is due, and the next deadline, through their partial index', { skip: sqliteOnly("SQLite's query plans") }, () => {
  // Query plans are SQLite's: read on a connection of the test's own.
  const db = openDatabase(s.dbPath, { readonly: true });
  try {
    for (const [d, index] of [
      [LINK_END, 'payments_pending_expiry'],
      [SESSION_END, 'payments_session_end'],
    ] as const) {
      for (const [q, args] of [
        [d.due, ['x', 'test', 1, 1]],
        [d.next, ['x', 'test']],
      ] as const) {
        const detail = (db.prepare(`EXPLAIN QUERY PLAN ${q}`).all(...args) as Array<{ detail: string }>).map((r) => r.detail).join('; ');
        assert.match(detail, new RegExp(`^SEARCH payments USING (COVERING )?INDEX ${index} \\(shop_id=\\? AND mode=\\?`), detail);
      }
    }
  } finally {
    db.close();
  }
});

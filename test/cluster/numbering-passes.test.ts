import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startTestServer, type TestServer } from '../helpers/server';
import { postgresOnly } from '../helpers/pg';
import { EVENT_FEED_LIMITS } from '../../src/platform/storage/postgres/events';

// On PostgreSQL a node numbers the events of its commits in passes (src/platform/storage/postgres/events.ts), each a transaction of
// its own with a COMMIT and a NOTIFY that wakes every listening node. Under a steady stream of commits a node ran
// its passes back to back, one every few milliseconds, and they cost about a tenth of the CPU of a create. Every
// pass of a node now waits the kick delay after the node's last one; the events are all numbered all the same.

const skip = postgresOnly();
let s: TestServer;
let admin: pg.Client;
before(async () => {
  if (skip) return;
  s = await startTestServer();
  admin = new pg.Client({ connectionString: s.dbPath });
  await admin.connect();
});
after(async () => {
  if (skip) return;
  await admin.end();
  await s.close();
});

test('numbering passes under a stream of commits: one per kick delay at most, and every event numbered', { skip }, async () => {
  const shop = await s.newShop();
  // When each pass wrote positions: a statement trigger of the test notes the time of each (a pass that found
  // nothing to number runs the statement too).
  await admin.query('CREATE TABLE pass_log (at timestamptz NOT NULL)');
  await admin.query(`CREATE FUNCTION pass_note() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN INSERT INTO pass_log VALUES (clock_timestamp()); RETURN NULL; END $$`);
  await admin.query('CREATE TRIGGER pass_note AFTER INSERT ON event_positions FOR EACH STATEMENT EXECUTE FUNCTION pass_note()');
  const ids: string[] = [];
  try {
    // Four clients create payments one after another for 1.5 s: a commit every few milliseconds.
    const until = performance.now() + 1_500;
    await Promise.all(
      Array.from({ length: 4 }, async (_, c) => {
        for (let i = 0; performance.now() < until; i++) {
          const r = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 1_000, order_id: `pass-${c}-${i}` } });
          assert.equal(r.status, 201);
          ids.push(r.body.payment.id);
        }
      }),
    );
    // Every event of those creates gets its position (the last pass runs a kick delay after the last commit).
    const numbered = async (): Promise<number> =>
      (
        await admin.query(`SELECT count(*)::int AS n FROM events e JOIN event_positions p ON p.seq = e.seq WHERE e.kind = 'payment.created' AND e.payment_id = ANY($1)`, [
          ids,
        ])
      ).rows[0].n;
    const deadline = performance.now() + 5_000;
    while ((await numbered()) < ids.length && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(await numbered(), ids.length);
  } finally {
    await admin.query('DROP TRIGGER pass_note ON event_positions');
  }
  const passes = (await admin.query('SELECT extract(epoch FROM at) * 1000 AS ms FROM pass_log ORDER BY at')).rows.map((r) => Number(r.ms));
  await admin.query('DROP FUNCTION pass_note() CASCADE');
  await admin.query('DROP TABLE pass_log');
  assert.ok(passes.length >= 2, `${ids.length} creates, ${passes.length} passes`);
  // Between two passes of the node lie its wait and the end and start of the passes (a timer may fire up to a
  // millisecond early by the database's clock): at most one pass per kick delay, however many commits (on a slow
  // machine the creates may be fewer than the passes, so their count is not compared).
  const gaps = passes.slice(1).map((t, i) => t - passes[i]);
  assert.ok(
    gaps.every((g) => g >= EVENT_FEED_LIMITS.kick_delay_ms - 1),
    `gaps between passes (ms): ${gaps.map((g) => g.toFixed(1)).join(', ')}`,
  );
});

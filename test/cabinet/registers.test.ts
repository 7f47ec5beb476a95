import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { cabGet, makeUser, signIn, type CabinetSession } from '../helpers/cabinet';
import { simulate } from '../helpers/payments';
import { createKey, createShop } from '../../src/money/shops/store';
import { SCAN_ROWS_MAX } from '../../src/web/cabinet/registers';
import { CREATED_EVENT_SQL, TIMELINE_SCAN_ROWS, WINDOW_END_SQL, WINDOW_SQL } from '../../src/web/cabinet/payment';
import { eventIdPrefix } from '../../src/platform/util/ids';
import { openDatabase } from '../../src/platform/storage/sqlite/open';

// The cabinet's registers read like the API's: each shop (and status value) is one index seek of at most a
// page, merged; a filter no index serves (order id, amount) is checked on a bounded stretch of the register.

let s: TestServer;
let session: CabinetSession;
let merchantId: string;
const shops: Array<{ id: string; key: string }> = [];

before(async () => {
  s = await startTestServer();
  const first = await s.newShop();
  merchantId = first.merchantId;
  shops.push({ id: first.shopId, key: first.key });
  const second = await createShop(s.store, merchantId, 'Second shop', undefined, Date.now());
  shops.push({ id: second.id, key: (await createKey(s.store, second.id, 'test', undefined, Date.now())).secret });
  await makeUser(s, merchantId, 'registers@shop.example');
  session = await signIn(s, 'registers@shop.example');
});
after(() => s.close());

// Amounts ending in 04 stay at the test bank until told, so the test decides which payments succeed.
const orders = (html: string): string[] => [...html.matchAll(/>(o-\d+)<\/a>/g)].map((m) => m[1]);
const nextLink = (html: string): string | null => /rel="next" href="([^"]+)"/.exec(html)?.[1].replace(/&amp;/g, '&') ?? null;

/** Every page of a cabinet register, following its next links; the order ids in page order and the pages' HTML. */
async function walk(path: string): Promise<{ ids: string[]; pages: string[] }> {
  const ids: string[] = [];
  const pages: string[] = [];
  for (let url: string | null = path; url; ) {
    const r = await cabGet(s, session, url);
    assert.equal(r.status, 200, r.text.slice(0, 500));
    pages.push(r.text);
    ids.push(...orders(r.text));
    url = nextLink(r.text);
    assert.ok(pages.length < 50, 'the pages end');
  }
  return { ids, pages };
}

test('all shops of a merchant page newest first as one register, each row once, a status filter too', async () => {
  const made: string[] = [];
  for (let i = 0; i < 64; i++) {
    const shop = shops[i % 2];
    const r = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 10_004, method: 'sbp', order_id: `o-${i}` } });
    assert.equal(r.status, 201, r.text);
    if (i % 3 === 0) {
      assert.equal((await simulate(s, r.body.payment.id, { action: 'open_session' }, shop.key)).status, 200);
      assert.equal((await simulate(s, r.body.payment.id, { action: 'succeed' }, shop.key)).status, 200);
    }
    made.push(`o-${i}`);
  }
  const all = await walk('/cabinet/payments');
  assert.equal(all.pages.length, 2, '64 rows of two shops make two pages of 50');
  assert.deepEqual(all.ids, [...made].reverse());
  const paid = await walk('/cabinet/payments?status=succeeded');
  assert.deepEqual(paid.ids, made.filter((_, i) => i % 3 === 0).reverse());
  const one = await walk(`/cabinet/payments?shop=${shops[1].id}`);
  assert.deepEqual(one.ids, made.filter((_, i) => i % 2 === 1).reverse());
});

test('an amount or order id filter searches a bounded stretch per page and says so; the next page searches on', async () => {
  const shop = shops[0];
  const tpl = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 10_000, order_id: 'o-template' } });
  assert.equal(tpl.status, 201);
  const deep = SCAN_ROWS_MAX + 5_000;
  // Older payments, straight into the table (a year of a busy shop): one match near the top, one past the window.
  // A uuid numbered i: SQLite's printf, PostgreSQL's lpad.
  const uuid = s.store.engine === 'postgres' ? `'00000000-0000-4000-8000-' || lpad(i::text, 12, '0')` : `printf('00000000-0000-4000-8000-%012d', i)`;
  await s.store.tx(async (tx) => {
    const t = (await tx.get<{ seq: number; created_at: number }>('SELECT seq, created_at FROM payments WHERE id = ?', tpl.body.payment.id))!;
    await tx.run(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
       INSERT INTO payments (seq, id, public_id, kind, merchant_id, shop_id, mode, order_id, status, amount, currency, method, purpose, metadata, created_at, expires_at)
       SELECT CAST(? AS BIGINT) + 1000000 + i, ${uuid}, 'Q-' || i, 'payment', merchant_id, shop_id, mode, 'o-' || (100000 + i), 'expired',
              CASE WHEN i IN (10, ?) THEN 777700 ELSE 10000 END, currency, 'sbp', purpose, '{}', CAST(? AS BIGINT) - i * 1000, CAST(? AS BIGINT) - i * 1000 + 60000
       FROM payments, n WHERE payments.id = ?`,
      deep,
      t.seq,
      deep,
      t.created_at,
      t.created_at,
      tpl.body.payment.id,
    );
  });
  const filter = `/cabinet/payments?shop=${shop.id}&amount_min=7777&amount_max=7777`;
  const first = await cabGet(s, session, filter);
  assert.equal(first.status, 200);
  assert.deepEqual(orders(first.text), ['o-100010'], 'the first page holds the match within the window');
  assert.match(first.text, /Searched the latest 20,000 records|Просмотрены последние 20/, 'and says how far it searched');
  const walked = await walk(filter);
  assert.deepEqual(walked.ids, ['o-100010', `o-${100000 + deep}`], 'the next pages find the older one, each once');
  assert.doesNotMatch(walked.pages[walked.pages.length - 1], /Searched the latest|Просмотрены последние/, 'the last page searched to the end');

  const byOrder = await walk(`/cabinet/payments?order_id=o-${100000 + deep}`);
  assert.deepEqual(byOrder.ids, [`o-${100000 + deep}`], 'an order id across both shops, found past two windows');

  const csv = await cabGet(s, session, `${filter.replace('/cabinet/payments?', '/cabinet/payments.csv?')}`);
  assert.equal(csv.status, 200);
  assert.deepEqual(csv.text.trimEnd().split('\r\n').slice(1).map((l) => l.split(',')[1]), ['o-100010', `o-${100000 + deep}`], 'the export searches every stretch');
});

test("a payment's timeline reads the shop's log from the payment's first event, a bounded window at a time", async () => {
  const shop = shops[1];
  const r = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 10_004, method: 'sbp', order_id: 'o-timeline' } });
  assert.equal(r.status, 201);
  const id = r.body.payment.id as string;
  assert.equal((await simulate(s, id, { action: 'open_session' }, shop.key)).status, 200);
  assert.equal((await simulate(s, id, { action: 'succeed' }, shop.key)).status, 200);
  const kindsOf = (html: string): string[] => [...html.matchAll(/<span class="mono(?: nowrap)?">((?:payment|refund)\.[a-z_]+)<\/span>/g)].map((m) => m[1]);
  const page = await cabGet(s, session, `/cabinet/payments/${id}`);
  assert.equal(page.status, 200);
  assert.deepEqual(kindsOf(page.text).slice(0, 3), ['payment.created', 'payment.status_changed', 'payment.status_changed']);
  assert.ok(kindsOf(page.text).includes('payment.succeeded'), 'the webhook event of the success');
  assert.doesNotMatch(page.text, /events_from=/, 'the window reached the end of the log');

  // A busy shop afterwards: more of its events than one window reads, then a late event of this payment.
  await s.store.tx(async (tx) => {
    const e = (await tx.get<{ merchant_id: string; at: number }>(`SELECT merchant_id, at FROM events WHERE payment_id = ? ORDER BY seq DESC LIMIT 1`, id))!;
    await tx.run(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
       INSERT INTO events (id, merchant_id, shop_id, mode, kind, payload, at) SELECT 'evt_busy_' || i, ?, ?, 'test', 'payment.created', '{}', CAST(? AS BIGINT) + i FROM n`,
      TIMELINE_SCAN_ROWS + 100,
      e.merchant_id,
      shop.id,
      e.at,
    );
    await tx.run(
      `INSERT INTO events (id, merchant_id, shop_id, mode, kind, payload, at, webhook_event, webhook_data, payment_id) VALUES ('evt_late', ?, ?, 'test', 'refund.created', '{"amount":500}', ?, 'payment.refunded', '{}', ?)`,
      e.merchant_id,
      shop.id,
      e.at + TIMELINE_SCAN_ROWS + 200,
      id,
    );
  });
  const first = await cabGet(s, session, `/cabinet/payments/${id}`);
  assert.ok(!kindsOf(first.text).includes('refund.created'), 'past the first window');
  const more = /href="(\/cabinet\/payments\/[^"?]+\?events_from=\d+)"/.exec(first.text);
  assert.ok(more, 'the page says the log goes on and links the next window');
  const second = await cabGet(s, session, more![1]);
  assert.equal(second.status, 200);
  assert.deepEqual(kindsOf(second.text), ['refund.created', 'payment.refunded']);
  assert.match(second.text, new RegExp(`<a href="/cabinet/payments/${id}">(First page|В начало)</a>`), 'and leads back to the first window');
  assert.equal((await cabGet(s, session, `/cabinet/payments/${id}?events_from=x`)).status, 400);

  // The first event is found among one millisecond's ids; each window is a range of the shop's index.
  // The plans are SQLite's: read on a connection of the test's own to the same file. PostgreSQL plans without hints.
  if (s.store.engine === 'postgres') return;
  const db = openDatabase(s.dbPath, { readonly: true });
  try {
    const plan = (sql: string, ...args: unknown[]) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as Array<{ detail: string }>).map((p) => p.detail).join('; ');
    assert.match(plan(CREATED_EVENT_SQL, eventIdPrefix(1), eventIdPrefix(2), id), /SEARCH events USING INDEX sqlite_autoindex_events_1 \(id>\? AND id<\?\)/);
    assert.match(plan(WINDOW_SQL.sqlite, shop.id, 'test', 1, 10, id, 10), /SEARCH events USING INDEX events_shop_seq \(shop_id=\? AND mode=\? AND seq>\?\)/);
    assert.match(plan(WINDOW_END_SQL.sqlite, shop.id, 'test', 1, 10), /SEARCH events USING COVERING INDEX events_shop_seq \(shop_id=\? AND mode=\? AND seq>\?\)/);
  } finally {
    db.close();
  }
});

test('the overview adds up payments per day in slices of the register, to the same totals as the table holds', async () => {
  const ids = shops.map((x) => x.id);
  const total = (await s.store.get<{ n: number }>(`SELECT count(*) AS n FROM payments WHERE shop_id IN (${ids.map(() => '?').join(', ')}) AND mode = 'test'`, ...ids))!;
  assert.ok(total.n > 25_000, 'more payments than several slices hold');
  const page = await cabGet(s, session, '/cabinet/overview');
  assert.equal(page.status, 200);
  // The count chart's title states the total, grouped in the page's language (25 123 or 25,123) with its word.
  const m = /<title id="chart-count">[^<]*: ([\d\s,\u00a0\u202f]+) (?:payments?|платеж\S*)</.exec(page.text);
  assert.ok(m, 'the chart states its total');
  assert.equal(Number(m![1].replace(/\D/g, '')), total.n);
});

test('a merge of more shops and statuses than a page may seek is refused with the reason beside the filter; the export sends nothing', async () => {
  const big = await s.newShop();
  // Payouts by status are one seek per payout method: 22 shops × 3 methods passes the bound of 64.
  for (let i = 0; i < 21; i++) await createShop(s.store, big.merchantId, `Branch ${i}`, undefined, Date.now());
  await makeUser(s, big.merchantId, 'branches@shop.example');
  const branches = await signIn(s, 'branches@shop.example');
  const page = await cabGet(s, branches, '/cabinet/payouts?status=pending');
  assert.equal(page.status, 400);
  assert.match(page.text, /role="alert">Cannot list payouts of 22 shops with this many statuses at once: choose one shop or fewer statuses</);
  assert.match(page.text, /<form method="get" action="\/cabinet\/payouts"/, 'the filter stays to be changed');
  const csv = await cabGet(s, branches, '/cabinet/payouts.csv?status=pending');
  assert.equal(csv.status, 400);
  assert.doesNotMatch(String(csv.headers['content-type']), /text\/csv/);
  assert.equal((await cabGet(s, branches, `/cabinet/payouts?status=pending&shop=${big.shopId}`)).status, 200, 'one shop is fine');
  assert.equal((await cabGet(s, branches, '/cabinet/payouts')).status, 200, 'all shops without a status are one seek each');
});

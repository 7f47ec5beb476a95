// Builds a kopek database of a given size for the growth benchmark: one test-mode shop with `payments` payments
// spread over three years (a few per mille failed, a tenth still pending with links that run out a few hours
// after the build), and a tenth as many refunds, payouts, tokens and subscriptions (one in a hundred failed,
// cancelled or past due; one in five hundred of one customer). Rows go straight into SQLite in large
// transactions (a connection of their own, straight through better-sqlite3); the schema, the shop and its key are
// made by kopek's own code through its store, so the server opens the file as one of its own.
import { randomUUID } from 'node:crypto';
import type Database from 'better-sqlite3';
import { openDatabase } from '../../src/platform/storage/sqlite/open';
import { openStorage } from '../../src/platform/storage/maintenance';
import { createKey, createMerchant, createShop } from '../../src/money/shops/store';

/** What a built database holds, for the benchmark's requests. */
export interface GrowthDb {
  path: string;
  payments: number;
  shopId: string;
  key: string;
  /** Ids of some payments, spread over the register (first reads). */
  sampleIds: string[];
  /** A customer with a few tokens and subscriptions. */
  customerRef: string;
  /** The latest expires_at of the pending payments (on the shop's clock): an advance past it expires them all. */
  lastExpiry: number;
  pending: number;
}

const ROWS_PER_TX = 50_000;
/**
 * When the pending payments' links start to run out, after the build. Later than any full run takes, so that the
 * only sweep of them is item 5's advance: expiring them in real time would put up to 100,000 payments' writes
 * into whichever item happens to be measured then.
 */
const LINKS_RUN_OUT_MS = 6 * 3_600_000;
const YEAR_MS = 365 * 86_400_000;

/** Build the database at `path` (which must not exist) with `n` payments. */
export async function buildGrowthDb(path: string, n: number, now = Date.now()): Promise<GrowthDb> {
  const store = openStorage(path);
  let merchant: Awaited<ReturnType<typeof createMerchant>>;
  let shop: Awaited<ReturnType<typeof createShop>>;
  let key: string;
  try {
    merchant = await createMerchant(store, 'Growth bench', now);
    shop = await createShop(store, merchant.id, 'Growth shop', undefined, now);
    key = (await createKey(store, shop.id, 'test', undefined, now)).secret;
  } finally {
    await store.close();
  }
  const db = openDatabase(path, { synchronous: 'NORMAL' });
  try {
    const rows = fillGrowthRows(db, merchant.id, shop.id, n, now);
    return { path, payments: n, shopId: shop.id, key, customerRef: CUSTOMER_REF, ...rows };
  } finally {
    db.close();
  }
}

/** The customer whose tokens and subscriptions the filter items look for. */
const CUSTOMER_REF = 'cust-bench';

/**
 * The rows of a growth database, straight into `db` (an open kopek database of any recent schema, its merchant
 * and shop already made): `n` payments over three years (the newest tenth pending, with their link-sweep job)
 * after the payments already there, and a tenth as many refunds, payouts, tokens and subscriptions.
 */
export function fillGrowthRows(db: Database.Database, merchantId: string, shopId: string, n: number, now = Date.now()): Pick<GrowthDb, 'sampleIds' | 'lastExpiry' | 'pending'> {
  db.pragma('cache_size = -262144');
  const start = now - 3 * YEAR_MS;
  const step = Math.max(1, Math.floor((3 * YEAR_MS) / n));
  const insertPayment = db.prepare(
    `INSERT INTO payments (seq, id, public_id, kind, merchant_id, shop_id, mode, order_id, status, amount, currency, method, purpose, metadata, created_at, expires_at, finalized_at)
     VALUES (?, ?, ?, 'payment', ?, ?, 'test', ?, ?, ?, 'RUB', 'any', ?, ?, ?, ?, ?)`,
  );
  const seq0 = (db.prepare('SELECT coalesce(max(seq), 0) AS s FROM payments').get() as { s: number }).s;
  const sampleIds: string[] = [];
  const sampleEvery = Math.max(1, Math.floor(n / 20_000));
  let lastExpiry = 0;
  let pending = 0;
  const metadata = JSON.stringify({ simulator_outcome: 'succeeded', simulator_failure_code: '' });
  for (let from = 0; from < n; from += ROWS_PER_TX) {
    db.transaction(() => {
      for (let i = from; i < Math.min(n, from + ROWS_PER_TX); i++) {
        const seq = seq0 + i + 1;
        const id = randomUUID();
        // Every tenth payment, the newest ones, still waits for its buyer; the rest are history.
        const isPending = i >= n - Math.floor(n / 10);
        const status = isPending ? 'pending' : i % 500 === 7 ? 'failed' : i % 20 === 3 ? 'refunded' : 'succeeded';
        const created = isPending ? now - 60_000 + (i % 1000) : start + i * step;
        const expires = isPending ? now + LINKS_RUN_OUT_MS + (i % 3_000_000) : created + 86_400_000;
        if (isPending) {
          pending++;
          lastExpiry = Math.max(lastExpiry, expires);
        }
        const publicId = `P-${100000 + seq}`;
        insertPayment.run(seq, id, publicId, merchantId, shopId, `order-${i}`, status, 1000 + (i % 90_000), `Payment ${publicId}`, metadata, created, expires, isPending ? null : created + 5000);
        if (i % sampleEvery === 0 && !isPending) sampleIds.push(id);
      }
    })();
  }
  if (pending > 0) {
    const due = db.prepare(`SELECT min(expires_at) AS at FROM payments WHERE shop_id = ? AND mode = 'test' AND status = 'pending'`).get(shopId) as { at: number };
    db.prepare(`INSERT INTO jobs (kind, subject_id, shop_id, mode, due_at, run_at, payload, created_at) VALUES ('payment.link_sweep', ?, ?, 'test', ?, ?, '{}', ?)`).run(
      `${shopId}/test`,
      shopId,
      due.at,
      due.at,
      now,
    );
  }
  const side = Math.max(10, Math.floor(n / 10));
  const paidIds = db.prepare(`SELECT id FROM payments WHERE shop_id = ? AND status IN ('succeeded', 'refunded') LIMIT ?`).pluck().all(shopId, side) as string[];
  db.transaction(() => {
    const refund = db.prepare(
      `INSERT INTO refunds (id, payment_id, merchant_id, shop_id, mode, amount, reason, status, created_at, completed_at) VALUES (?, ?, ?, ?, 'test', 500, '', ?, ?, ?)`,
    );
    const payout = db.prepare(
      `INSERT INTO payouts (id, merchant_id, shop_id, mode, amount, currency, method, status, recipient, bank_ref, created_at, completed_at)
       VALUES (?, ?, ?, 'test', 1000, 'RUB', ?, ?, '{}', ?, ?, ?)`,
    );
    const token = db.prepare(
      `INSERT INTO tokens (id, merchant_id, shop_id, mode, customer_ref, method, status, binding_payment_id, created_at) VALUES (?, ?, ?, 'test', ?, 'cards', ?, ?, ?)`,
    );
    const sub = db.prepare(
      `INSERT INTO subscriptions (id, merchant_id, shop_id, mode, customer_ref, amount, currency, method, period, interval_count, status, token_id, initial_payment_id, created_at)
       VALUES (?, ?, ?, 'test', ?, 1000, 'RUB', 'cards', 'month', 1, ?, ?, ?, ?)`,
    );
    const methods = ['payouts_sbp', 'payouts_card', 'payouts_account'];
    for (let i = 0; i < side; i++) {
      const at = start + i * step * 10;
      const rare = i % 100 === 7;
      refund.run(randomUUID(), paidIds[i % paidIds.length], merchantId, shopId, rare ? 'failed' : 'succeeded', at, at + 1000);
      payout.run(randomUUID(), merchantId, shopId, methods[i % 3], rare ? 'failed' : 'succeeded', `ref-${i}`, at, at + 1000);
      const customer = i % 500 === 11 ? CUSTOMER_REF : `cust-${i}`;
      token.run(randomUUID(), merchantId, shopId, customer, rare ? 'cancelled' : 'active', randomUUID(), at);
      sub.run(randomUUID(), merchantId, shopId, customer, rare ? 'past_due' : 'active', randomUUID(), randomUUID(), at);
    }
  })();
  return { sampleIds, lastExpiry, pending };
}

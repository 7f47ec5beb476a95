/**
 * Migrations from one schema version to the next: MIGRATIONS[0] takes version 1 to 2, and so on.
 * schema.sql always holds the newest whole schema; a new database gets it in one step.
 */
export const MIGRATIONS: readonly string[] = [
  // 1 → 2: links expire through one sweep job per shop and mode, which finds due payments through this index.
  `CREATE INDEX payments_pending_expiry ON payments(shop_id, mode, expires_at) WHERE status = 'pending';`,
  // 2 → 3: every documented filter of every register is served by an index ending (created_at, seq), so that
  // a page is one seek however deep its cursor and however few rows match (src/registers/plan.ts).
  `DROP INDEX IF EXISTS payments_register;
   CREATE INDEX IF NOT EXISTS payments_register ON payments(shop_id, mode, created_at, seq);
   CREATE INDEX IF NOT EXISTS payments_status ON payments(shop_id, mode, status, created_at, seq);
   CREATE INDEX IF NOT EXISTS refunds_status ON refunds(shop_id, mode, status, created_at, seq);
   CREATE INDEX IF NOT EXISTS payouts_method_status ON payouts(shop_id, mode, method, status, created_at, seq);
   CREATE INDEX IF NOT EXISTS tokens_status ON tokens(shop_id, mode, status, created_at, seq);
   DROP INDEX IF EXISTS tokens_customer;
   CREATE INDEX IF NOT EXISTS tokens_customer ON tokens(shop_id, mode, customer_ref, status, created_at, seq);
   CREATE INDEX IF NOT EXISTS subscriptions_status ON subscriptions(shop_id, mode, status, created_at, seq);
   CREATE INDEX IF NOT EXISTS subscriptions_customer ON subscriptions(shop_id, mode, customer_ref, status, created_at, seq);`,
];

/**
 * Migrations from one schema version to the next: MIGRATIONS[0] takes version 1 to 2, and so on.
 * schema.sql always holds the newest whole schema; a new database gets it in one step.
 */
export const MIGRATIONS: readonly string[] = [
  // 1 → 2: links expire through one sweep job per shop and mode, which finds due payments through this index.
  `CREATE INDEX payments_pending_expiry ON payments(shop_id, mode, expires_at) WHERE status = 'pending';`,
  // 2 → 3: the bank port picks a live shop's bank from its acquirer.
  `CREATE TABLE shop_acquirers (
    shop_id TEXT PRIMARY KEY REFERENCES shops(id), provider TEXT NOT NULL, settings TEXT NOT NULL DEFAULT '{}', updated_at INTEGER NOT NULL
  ) STRICT;`,
];

/**
 * The migrations a start applies, on both engines: MIGRATIONS[0] takes BASE_VERSION to BASE_VERSION + 1. A new
 * database gets schema.sql in one step; older SQLite ones need `kopek migrate` (migrations-old.ts). A step is one
 * SQL text or one per engine; both schema files take its change too (test/db/schema-engines.test.ts).
 */
export type Migration = string | { sqlite: string; postgres: string };

/** Release 0.1.0's (build 4ce3fbf): the oldest a start upgrades, and the first a PostgreSQL database can have. */
export const BASE_VERSION = 20;

export const MIGRATIONS: readonly Migration[] = [
  // 20 → 21: payments expire through their shop's sweeps alone: old per-payment jobs (links, schema 1; sessions,
  // schema 8 and before) become their shop and mode's sweep; of several one subject now has, the earliest stays.
  `UPDATE jobs SET kind = 'payment.link_sweep', subject_id = shop_id || '/' || mode, payload = '{}'
  WHERE kind = 'payment.link_expiry' AND state IN ('pending', 'dead');
UPDATE jobs SET kind = 'payment.session_sweep', subject_id = shop_id || '/' || mode, payload = '{}'
  WHERE kind = 'payment.session_expiry' AND state IN ('pending', 'dead');
DELETE FROM jobs WHERE state = 'pending' AND kind IN ('payment.link_sweep', 'payment.session_sweep')
  AND EXISTS (SELECT 1 FROM jobs o WHERE o.state = 'pending' AND o.kind = jobs.kind AND o.subject_id = jobs.subject_id
    AND (o.due_at < jobs.due_at OR (o.due_at = jobs.due_at AND o.id < jobs.id)));`,
  // 21 -> 22: PostgreSQL's key-table announcements (postgres/schema.sql's last section), which older layouts lack;
  // every statement may run again. SQLite's key cache needs nothing (temporary triggers, PRAGMA data_version).
  {
    sqlite: '',
    postgres: `CREATE OR REPLACE FUNCTION kopek_announce_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('kopek_changes', TG_TABLE_NAME);
  RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER api_keys_announce AFTER INSERT OR DELETE OR UPDATE ON api_keys
  FOR EACH STATEMENT EXECUTE FUNCTION kopek_announce_change();
CREATE OR REPLACE TRIGGER shops_announce AFTER INSERT OR DELETE OR UPDATE OF id, merchant_id, name, scopes, ip_allowlist, signing_secret, require_signature ON shops
  FOR EACH STATEMENT EXECUTE FUNCTION kopek_announce_change();
CREATE OR REPLACE TRIGGER merchants_announce AFTER INSERT OR DELETE OR UPDATE OF id, live_enabled ON merchants
  FOR EACH STATEMENT EXECUTE FUNCTION kopek_announce_change();
CREATE OR REPLACE TRIGGER shop_acquirers_announce AFTER INSERT OR DELETE OR UPDATE ON shop_acquirers
  FOR EACH STATEMENT EXECUTE FUNCTION kopek_announce_change();
CREATE OR REPLACE TRIGGER shop_payout_providers_announce AFTER INSERT OR DELETE OR UPDATE ON shop_payout_providers
  FOR EACH STATEMENT EXECUTE FUNCTION kopek_announce_change();`,
  },
  // 22 → 23: every webhook attempt is a job of one kind. Retry jobs take its name; a delivery whose first attempt
  // is pending (the delivery worker of 22 made those, without a job) gets its job, due when the delivery is,
  // in due order. The payload names the attempt count, and the endpoint as the receiver (a payment's own URL
  // has none here: its limits are its shop's and the process's).
  `UPDATE jobs SET kind = 'webhook.attempt' WHERE kind = 'webhook.retry' AND state IN ('pending', 'dead');
INSERT INTO jobs (kind, subject_id, shop_id, mode, due_at, run_at, payload, created_at)
  SELECT 'webhook.attempt', CAST(d.id AS TEXT), d.shop_id, d.mode, coalesce(d.next_attempt_at, d.created_at),
    coalesce(d.next_attempt_at, d.created_at) - (CASE WHEN d.mode = 'test' THEN s.test_clock_offset_ms ELSE 0 END),
    '{"attempts":' || CAST(d.attempts AS TEXT) || (CASE WHEN d.endpoint_id IS NULL THEN '' ELSE ',"receiver":"ep:' || d.endpoint_id || '"' END) || '}',
    d.created_at
  FROM webhook_deliveries d JOIN shops s ON s.id = d.shop_id
  WHERE d.state = 'pending' AND d.attempts = d.round_start
  ORDER BY coalesce(d.next_attempt_at, d.created_at), d.id;`,
];

/** `PRAGMA user_version` of a current SQLite database, kopek_schema's on PostgreSQL. */
export const SCHEMA_VERSION = BASE_VERSION + MIGRATIONS.length;

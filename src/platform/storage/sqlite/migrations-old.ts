/**
 * The SQLite migrations before release 0.1.0 (OLD_MIGRATIONS[0] takes 1 to 2, up to BASE_VERSION). Only
 * `kopek migrate` applies them; a start refuses such a database, so the server never carries migrations-records.ts.
 */
import type Database from 'better-sqlite3';
import { hasColumn, TO_13, TO_14, TO_15, TO_16, type OldMigration as Migration } from './migrations-records';
import { BASE_VERSION } from '../migrations';
import { openExisting } from './open';

/** In one transaction under the write lock (version read again inside); at BASE_VERSION or later, new or absent, left as is. Returns the version found. */
export function upgradeOldSqlite(path: string): number {
  if (path === ':memory:') return 0;
  let db: Database.Database;
  try {
    db = openExisting(path);
  } catch {
    return 0;
  }
  try {
    db.pragma('foreign_keys = ON');
    const upgrade = db.transaction((): number => {
      const version = db.pragma('user_version', { simple: true }) as number;
      if (version === 0 || version >= BASE_VERSION) return version;
      for (let v = version; v < BASE_VERSION; v++) {
        const step = OLD_MIGRATIONS[v - 1];
        if (typeof step === 'string') db.exec(step);
        else step(db);
      }
      db.pragma(`user_version = ${BASE_VERSION}`);
      return version;
    });
    return upgrade.immediate();
  } finally {
    db.close();
  }
}

const OLD_MIGRATIONS: readonly Migration[] = [
  // 1 → 2: one link-expiry sweep per shop and mode finds due payments through this index.
  `CREATE INDEX payments_pending_expiry ON payments(shop_id, mode, expires_at) WHERE status = 'pending';`,
  // 2 → 3: the bank port picks a live shop's bank from its acquirer.
  `CREATE TABLE shop_acquirers (
    shop_id TEXT PRIMARY KEY REFERENCES shops(id), provider TEXT NOT NULL, settings TEXT NOT NULL DEFAULT '{}', updated_at INTEGER NOT NULL
  ) STRICT;`,
  // 3 → 4: the cabinet's users, sessions, sign-in throttling and audit log; a key's last use. IF NOT EXISTS: a
  // database marked older than it is (as a test of 1 → 2 does) migrates all the same.
  `CREATE TABLE IF NOT EXISTS api_key_usage (
  key_id        TEXT PRIMARY KEY,
  last_used_at  INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS cabinet_users (
  id              TEXT PRIMARY KEY,
  merchant_id     TEXT NOT NULL REFERENCES merchants(id),
  email           TEXT NOT NULL UNIQUE,
  password_hash   TEXT NOT NULL,
  totp_secret     TEXT,
  totp_pending    TEXT,
  totp_last_step  INTEGER NOT NULL DEFAULT 0,
  created_at      INTEGER NOT NULL,
  disabled_at     INTEGER
) STRICT;
CREATE INDEX IF NOT EXISTS cabinet_users_merchant ON cabinet_users(merchant_id);
CREATE TABLE IF NOT EXISTS cabinet_recovery_codes (
  user_id    TEXT NOT NULL REFERENCES cabinet_users(id),
  code_hash  TEXT NOT NULL,
  used_at    INTEGER,
  PRIMARY KEY (user_id, code_hash)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS cabinet_sessions (
  token_hash    TEXT PRIMARY KEY,
  user_id       TEXT NOT NULL REFERENCES cabinet_users(id),
  csrf_token    TEXT NOT NULL,
  view_mode     TEXT NOT NULL DEFAULT 'test' CHECK (view_mode IN ('test', 'live')),
  lang          TEXT NOT NULL DEFAULT 'ru' CHECK (lang IN ('ru', 'en')),
  flash         TEXT,
  ip            TEXT NOT NULL,
  created_at    INTEGER NOT NULL,
  last_seen_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS cabinet_sessions_user ON cabinet_sessions(user_id);
CREATE TABLE IF NOT EXISTS cabinet_login_failures (
  subject         TEXT PRIMARY KEY,
  failures        INTEGER NOT NULL,
  last_failed_at  INTEGER NOT NULL,
  locked_until    INTEGER
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS cabinet_audit (
  id           INTEGER PRIMARY KEY,
  merchant_id  TEXT,
  user_id      TEXT,
  email        TEXT NOT NULL,
  action       TEXT NOT NULL,
  target       TEXT NOT NULL DEFAULT '',
  detail       TEXT NOT NULL DEFAULT '',
  ip           TEXT NOT NULL DEFAULT '',
  at           INTEGER NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS cabinet_audit_merchant ON cabinet_audit(merchant_id, id);`,
  // 4 → 5: every register filter gets an index ending (created_at, seq): one seek per page (registers/plan.ts).
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
  // 5 → 6: idempotency records become small rows in rowid order under a unique key index (a whole stored answer took
  // an overflow page). Existing records keep answers as plain JSON and fingerprints, now 32 bytes. Test and live keys
  // are separate namespaces. Skipped where the records already have a newer form.
  (db) => {
    if (!hasColumn(db, 'idempotency_keys', 'shop_id')) return;
    db.exec(`CREATE TABLE idempotency_keys_new (
     id            INTEGER PRIMARY KEY,
     merchant_id   TEXT NOT NULL,
     key           TEXT NOT NULL,
     shop_id       TEXT NOT NULL,
     mode          TEXT NOT NULL CHECK (mode IN ('test', 'live')),
     request_hash  BLOB NOT NULL,
     status        INTEGER NOT NULL,
     object_id     TEXT,
     response      BLOB NOT NULL,
     created_at    INTEGER NOT NULL
   ) STRICT;
   INSERT INTO idempotency_keys_new (merchant_id, key, shop_id, mode, request_hash, status, object_id, response, created_at)
     SELECT merchant_id, key, shop_id, mode, unhex(request_hash), status, NULL, CAST(response AS BLOB), created_at
     FROM idempotency_keys ORDER BY created_at;
   DROP TABLE idempotency_keys;
   ALTER TABLE idempotency_keys_new RENAME TO idempotency_keys;
   CREATE UNIQUE INDEX idempotency_keys_key ON idempotency_keys(merchant_id, mode, key);`);
  },
  // 6 → 7: live acquirers' requests, T-Bank's sessions and saved methods, mismatched answers. IF NOT EXISTS as in 3 → 4.
  `CREATE TABLE IF NOT EXISTS bank_requests (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  shop_id          TEXT NOT NULL,
  mode             TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  provider         TEXT NOT NULL,
  operation        TEXT NOT NULL,                       -- the bank's method: Init, GetState, CheckOrder, Cancel, Charge, GetQr
  subject_kind     TEXT NOT NULL CHECK (subject_kind IN ('payment', 'refund')),
  subject_id       TEXT NOT NULL,
  order_id         TEXT NOT NULL DEFAULT '',            -- the attempt's OrderId
  bank_payment_id  TEXT NOT NULL DEFAULT '',            -- the bank's PaymentId, once known
  request          TEXT NOT NULL,                       -- JSON body without Password and Token
  state            TEXT NOT NULL CHECK (state IN ('queued', 'sent', 'answered', 'unknown')),
  answer           TEXT NOT NULL DEFAULT '',            -- the bank's JSON answer, or why it is unknown
  created_at       INTEGER NOT NULL,
  sent_at          INTEGER,
  answered_at      INTEGER
) STRICT;
CREATE INDEX IF NOT EXISTS bank_requests_subject ON bank_requests(subject_id, id);
CREATE INDEX IF NOT EXISTS bank_requests_order ON bank_requests(order_id) WHERE order_id <> '';
CREATE TABLE IF NOT EXISTS tbank_sessions (
  payment_id       TEXT PRIMARY KEY,
  shop_id          TEXT NOT NULL,
  order_id         TEXT NOT NULL UNIQUE,
  attempt          INTEGER NOT NULL DEFAULT 1,
  bank_payment_id  TEXT NOT NULL DEFAULT '',
  payment_url      TEXT NOT NULL DEFAULT '',
  qr_payload       TEXT NOT NULL DEFAULT '',
  updated_at       INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS tbank_rebills (
  token_id         TEXT PRIMARY KEY,
  shop_id          TEXT NOT NULL,
  rebill_enc       TEXT NOT NULL,
  updated_at       INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS bank_mismatches (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  shop_id          TEXT NOT NULL,
  subject_id       TEXT NOT NULL,
  expected_amount  INTEGER NOT NULL,
  bank_amount      INTEGER NOT NULL,
  answer           TEXT NOT NULL,                       -- what the bank said (outcome)
  created_at       INTEGER NOT NULL
) STRICT;`,
  // 7 → 8: retention finds finished jobs by their finish time.
  `CREATE INDEX IF NOT EXISTS jobs_finished ON jobs(finished_at) WHERE state IN ('done', 'cancelled');`,
  // 8 → 9: bank sessions end through one sweep per shop and mode; jobs of sessions already open stay.
  `CREATE INDEX IF NOT EXISTS payments_session_end ON payments(shop_id, mode, processing_until) WHERE status = 'processing';`,
  // 9 → 10: recurrent_payments becomes a rowid table (each row went to a random page when keyed by a random id),
  // with a unique index on payment_id; rows copied in the order they were made.
  `ALTER TABLE recurrent_payments RENAME TO recurrent_payments_old;
CREATE TABLE recurrent_payments (
  payment_id       TEXT NOT NULL UNIQUE,
  kind             TEXT NOT NULL CHECK (kind IN ('token_binding', 'subscription_init', 'subscription_charge', 'token_charge')),
  token_id         TEXT NOT NULL,
  subscription_id  TEXT,
  shop_id          TEXT NOT NULL,
  mode             TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  charge_index     INTEGER,
  attempt          INTEGER NOT NULL DEFAULT 1,
  created_at       INTEGER NOT NULL
) STRICT;
INSERT INTO recurrent_payments (payment_id, kind, token_id, subscription_id, shop_id, mode, charge_index, attempt, created_at)
  SELECT payment_id, kind, token_id, subscription_id, shop_id, mode, charge_index, attempt, created_at FROM recurrent_payments_old
  ORDER BY created_at, payment_id;
DROP TABLE recurrent_payments_old;
CREATE INDEX recurrent_payments_subscription ON recurrent_payments(subscription_id, charge_index, attempt) WHERE subscription_id IS NOT NULL;`,
  // 10 → 11: recurrent_payments keyed by its payment's seq; the index on the random id goes. Every row has its
  // payment (written in one transaction), so the join keeps every row.
  `ALTER TABLE recurrent_payments RENAME TO recurrent_payments_old;
DROP INDEX recurrent_payments_subscription;
CREATE TABLE recurrent_payments (
  payment_seq      INTEGER PRIMARY KEY,
  payment_id       TEXT NOT NULL,
  kind             TEXT NOT NULL CHECK (kind IN ('token_binding', 'subscription_init', 'subscription_charge', 'token_charge')),
  token_id         TEXT NOT NULL,
  subscription_id  TEXT,
  shop_id          TEXT NOT NULL,
  mode             TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  charge_index     INTEGER,
  attempt          INTEGER NOT NULL DEFAULT 1,
  created_at       INTEGER NOT NULL
) STRICT;
INSERT INTO recurrent_payments (payment_seq, payment_id, kind, token_id, subscription_id, shop_id, mode, charge_index, attempt, created_at)
  SELECT p.seq, r.payment_id, r.kind, r.token_id, r.subscription_id, r.shop_id, r.mode, r.charge_index, r.attempt, r.created_at
  FROM recurrent_payments_old r JOIN payments p ON p.id = r.payment_id ORDER BY p.seq;
DROP TABLE recurrent_payments_old;
CREATE INDEX recurrent_payments_subscription ON recurrent_payments(subscription_id, charge_index, attempt) WHERE subscription_id IS NOT NULL;`,
  // 11 → 12: a ledger entry's once-per-source key is its source's seq, not its random id (a random index page per
  // payment). Made anew, so a database marked older migrates too; an entry whose source is gone keys on its own
  // negative id, which no seq takes.
  `ALTER TABLE ledger_entries RENAME TO ledger_entries_old;
DROP INDEX ledger_entries_once;
DROP INDEX ledger_entries_book;
CREATE TABLE ledger_entries (
  id           INTEGER PRIMARY KEY,
  merchant_id  TEXT NOT NULL,
  shop_id      TEXT NOT NULL,
  mode         TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  movement     TEXT NOT NULL,
  source_id    TEXT NOT NULL,
  amount       INTEGER NOT NULL CHECK (amount > 0),
  at           INTEGER NOT NULL,
  source_seq   INTEGER NOT NULL
) STRICT;
INSERT INTO ledger_entries (id, merchant_id, shop_id, mode, movement, source_id, amount, at, source_seq)
  SELECT id, merchant_id, shop_id, mode, movement, source_id, amount, at, coalesce(CASE
      WHEN movement LIKE 'payment%' THEN (SELECT seq FROM payments WHERE payments.id = o.source_id)
      WHEN movement LIKE 'refund%' THEN (SELECT seq FROM refunds WHERE refunds.id = o.source_id)
      ELSE (SELECT seq FROM payouts WHERE payouts.id = o.source_id) END, -id)
  FROM ledger_entries_old o ORDER BY id;
DROP TABLE ledger_entries_old;
CREATE UNIQUE INDEX ledger_entries_once ON ledger_entries(movement, source_seq);
CREATE INDEX ledger_entries_book ON ledger_entries(shop_id, mode, id);`,
  // 12 → 16: idempotency records, step by step (migrations-records.ts).
  TO_13,
  TO_14,
  TO_15,
  TO_16,
  // 16 → 17: a job run outside a transaction is claimed in the database (process, token, lapse time), so a job
  // whose process died is taken again once its claim lapses.
  (db) => {
    for (const [column, type] of [['claimed_by', 'TEXT'], ['claim_token', 'TEXT'], ['claim_until', 'INTEGER']]) {
      if (!hasColumn(db, 'jobs', column)) db.exec(`ALTER TABLE jobs ADD COLUMN ${column} ${type}`);
    }
  },
  // 17 → 18: the database's identity, which the stream names so a resuming client tells restarts from another database.
  `CREATE TABLE IF NOT EXISTS database_identity (id TEXT NOT NULL, created_at INTEGER NOT NULL) STRICT;
INSERT INTO database_identity (id, created_at)
  SELECT lower(hex(randomblob(16))), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
  WHERE NOT EXISTS (SELECT 1 FROM database_identity);`,
  // 18 → 19: the sign-in throttle reserves each attempt before hashing, `locked_until` says when the next may come;
  // old counters are dropped (they last 15 minutes). TOTP secrets are sealed from here on: the server seals those in
  // clear at start (secrets/at-rest.ts sealPlainSecrets), and an older build refuses this version instead of
  // taking a sealed secret for base32.
  `DELETE FROM cabinet_login_failures;`,
  // 19 → 20: a shop's live payout provider (YooKassa Payouts) beside its acquirer, secret sealed (context
  // 'shop_payout_providers.secret:<shop id>'); bank_requests takes payouts too (CHECK widened: table made anew, rows kept).
  `CREATE TABLE IF NOT EXISTS shop_payout_providers (
  shop_id     TEXT PRIMARY KEY REFERENCES shops(id),
  provider    TEXT NOT NULL,
  agent_id    TEXT NOT NULL,
  secret      TEXT NOT NULL,
  api_url     TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
) STRICT;
ALTER TABLE bank_requests RENAME TO bank_requests_old;
DROP INDEX IF EXISTS bank_requests_subject;
DROP INDEX IF EXISTS bank_requests_order;
CREATE TABLE bank_requests (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  shop_id          TEXT NOT NULL,
  mode             TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  provider         TEXT NOT NULL,
  operation        TEXT NOT NULL,
  subject_kind     TEXT NOT NULL CHECK (subject_kind IN ('payment', 'refund', 'payout')),
  subject_id       TEXT NOT NULL,
  order_id         TEXT NOT NULL DEFAULT '',
  bank_payment_id  TEXT NOT NULL DEFAULT '',
  request          TEXT NOT NULL,
  state            TEXT NOT NULL CHECK (state IN ('queued', 'sent', 'answered', 'unknown')),
  answer           TEXT NOT NULL DEFAULT '',
  created_at       INTEGER NOT NULL,
  sent_at          INTEGER,
  answered_at      INTEGER
) STRICT;
INSERT INTO bank_requests SELECT * FROM bank_requests_old ORDER BY id;
DROP TABLE bank_requests_old;
CREATE INDEX bank_requests_subject ON bank_requests(subject_id, id);
CREATE INDEX bank_requests_order ON bank_requests(order_id) WHERE order_id <> '';`,
];

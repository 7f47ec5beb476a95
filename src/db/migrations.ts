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
  // 3 → 4: live acquirers record every request, T-Bank's sessions and saved methods, and answers whose amount did not match.
  `CREATE TABLE bank_requests (
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
CREATE INDEX bank_requests_subject ON bank_requests(subject_id, id);
CREATE INDEX bank_requests_order ON bank_requests(order_id) WHERE order_id <> '';
CREATE TABLE tbank_sessions (
  payment_id       TEXT PRIMARY KEY,
  shop_id          TEXT NOT NULL,
  order_id         TEXT NOT NULL UNIQUE,
  attempt          INTEGER NOT NULL DEFAULT 1,
  bank_payment_id  TEXT NOT NULL DEFAULT '',
  payment_url      TEXT NOT NULL DEFAULT '',
  qr_payload       TEXT NOT NULL DEFAULT '',
  updated_at       INTEGER NOT NULL
) STRICT;
CREATE TABLE tbank_rebills (
  token_id         TEXT PRIMARY KEY,
  shop_id          TEXT NOT NULL,
  rebill_enc       TEXT NOT NULL,
  updated_at       INTEGER NOT NULL
) STRICT;
CREATE TABLE bank_mismatches (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  shop_id          TEXT NOT NULL,
  subject_id       TEXT NOT NULL,
  expected_amount  INTEGER NOT NULL,
  bank_amount      INTEGER NOT NULL,
  answer           TEXT NOT NULL,                       -- what the bank said (outcome)
  created_at       INTEGER NOT NULL
) STRICT;`,
];

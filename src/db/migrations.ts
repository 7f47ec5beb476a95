/**
 * Migrations from one schema version to the next: MIGRATIONS[0] takes version 1 to 2, and so on.
 * schema.sql always holds the newest whole schema; a new database gets it in one step.
 */
import type Database from 'better-sqlite3';
import { decodeLegacyRecord, LEGACY_FINGERPRINT_BYTES, legacyKeyHash, legacyMerchantKey, merchantIdOfLegacyKey, namesShop } from './legacy-records';

/** A step: SQL, or a function for a step that must look at the schema first. */
export type Migration = string | ((db: Database.Database) => void);

/** Whether `table` has a column named `column`. */
function hasColumn(db: Database.Database, table: string, column: string): boolean {
  return (db.pragma(`table_info(${table})`) as Array<{ name: string }>).some((c) => c.name === column);
}

export const MIGRATIONS: readonly Migration[] = [
  // 1 → 2: links expire through one sweep job per shop and mode, which finds due payments through this index.
  `CREATE INDEX payments_pending_expiry ON payments(shop_id, mode, expires_at) WHERE status = 'pending';`,
  // 2 → 3: the bank port picks a live shop's bank from its acquirer.
  `CREATE TABLE shop_acquirers (
    shop_id TEXT PRIMARY KEY REFERENCES shops(id), provider TEXT NOT NULL, settings TEXT NOT NULL DEFAULT '{}', updated_at INTEGER NOT NULL
  ) STRICT;`,
  // 3 → 4: the merchant cabinet's users, sessions, sign-in throttling and audit log; a key's last use.
  // IF NOT EXISTS: a database marked older than it is (as a test of 1 → 2 does) migrates all the same.
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
  // 4 → 5: every documented filter of every register is served by an index ending (created_at, seq), so that
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
  // 5 → 6: idempotency records become small rows in rowid order under a unique index of their key; a stored
  // answer kept whole took an overflow page of its own. Existing records keep their answers as plain JSON
  // (read as such) and their fingerprints, now as 32 bytes. Test and live keys are separate namespaces, as
  // they are separate books.
  // Skipped where the records already have a newer form (a database marked older than it is).
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
  // 6 → 7: live acquirers record every request, T-Bank's sessions and saved methods, and answers whose amount did not match.
  // IF NOT EXISTS: a database marked older than it is (as the tests of earlier migrations do) migrates all the same.
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
  // 8 → 9: bank sessions end through one sweep per shop and mode instead of a job per payment. The jobs of
  // sessions already open stay and run as before.
  `CREATE INDEX IF NOT EXISTS payments_session_end ON payments(shop_id, mode, processing_until) WHERE status = 'processing';`,
  // 9 → 10: recurrent_payments becomes a rowid table with a unique index on payment_id. Keyed by the payment's
  // random id, each new row of about 200 bytes went to a random page of the whole table; now only its index
  // entry does. The rows are copied in the order they were made.
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
  // 10 → 11: recurrent_payments is keyed by its payment's seq, and the unique index on the payment's random id
  // goes: each charge wrote an entry to a random page of it. A row always has its payment (both are written in
  // one transaction), so the join keeps every row.
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
  // 11 → 12: a ledger entry's once-per-source key is its source's seq instead of the source's random id, whose
  // index entry went to a random page for every payment that succeeded. The table is made anew (so a database
  // marked older than it is migrates all the same). An entry whose source is gone (none should be: a test reset
  // deletes both) keys on its own negative id, which no seq takes.
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
  // 12 → 13: an idempotency record is one row in the b-tree of its key, and the answer it replays lives in the row
  // of the object its request created: storing a key wrote a page of the records' table and a random page of their
  // key index besides the pages of the create. Existing records keep their answers in their own rows. Columns are
  // added only where missing, so that a database marked older than it is migrates all the same.
  (db) => {
    for (const table of ['payments', 'refunds', 'payouts', 'tokens', 'subscriptions']) {
      if (!hasColumn(db, table, 'answer')) db.exec(`ALTER TABLE ${table} ADD COLUMN answer BLOB`);
    }
    if (!hasColumn(db, 'idempotency_keys', 'response')) return;
    db.exec(`ALTER TABLE idempotency_keys RENAME TO idempotency_keys_old;
DROP INDEX idempotency_keys_key;
CREATE TABLE idempotency_keys (
  merchant_id   TEXT NOT NULL,
  mode          TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  key           TEXT NOT NULL,
  request_hash  BLOB NOT NULL,
  holder        TEXT CHECK (holder IN ('payments', 'refunds', 'payouts', 'tokens', 'subscriptions')),
  holder_seq    INTEGER,
  answer        BLOB,
  object_id     TEXT,
  created_at    INTEGER NOT NULL,
  PRIMARY KEY (merchant_id, mode, key),
  CHECK ((holder IS NULL) = (holder_seq IS NULL) AND (holder IS NULL) = (answer IS NOT NULL))
) STRICT, WITHOUT ROWID;
INSERT INTO idempotency_keys (merchant_id, mode, key, request_hash, answer, object_id, created_at)
  SELECT merchant_id, mode, key, request_hash, response, object_id, created_at FROM idempotency_keys_old;
DROP TABLE idempotency_keys_old;`);
  },
  // 13 → 14: a record keeps its merchant as the 16 bytes of the id (36 as text) and 16 bytes of its fingerprint (32
  // before): a record of about 85 bytes instead of 121, so that its b-tree splits and rebalances pages less often
  // (every keyed create inserts one). The merchant's form is legacyMerchantKey's (src/db/legacy-records.ts).
  (db) => {
    const type = (db.pragma('table_info(idempotency_keys)') as Array<{ name: string; type: string }>).find((c) => c.name === 'merchant_id')?.type;
    // Only the layout of 13 (a later one keeps its merchant as text too, without holders).
    if (type !== 'TEXT' || !hasColumn(db, 'idempotency_keys', 'holder')) return;
    db.function('kopek_merchant_key', { deterministic: true }, (id: unknown) => legacyMerchantKey(String(id)));
    db.exec(`ALTER TABLE idempotency_keys RENAME TO idempotency_keys_old;
CREATE TABLE idempotency_keys (
  merchant_id   BLOB NOT NULL,
  mode          TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  key           TEXT NOT NULL,
  request_hash  BLOB NOT NULL,
  holder        TEXT CHECK (holder IN ('payments', 'refunds', 'payouts', 'tokens', 'subscriptions')),
  holder_seq    INTEGER,
  answer        BLOB,
  object_id     TEXT,
  created_at    INTEGER NOT NULL,
  PRIMARY KEY (merchant_id, mode, key),
  CHECK ((holder IS NULL) = (holder_seq IS NULL) AND (holder IS NULL) = (answer IS NOT NULL))
) STRICT, WITHOUT ROWID;
INSERT INTO idempotency_keys (merchant_id, mode, key, request_hash, holder, holder_seq, answer, object_id, created_at)
  SELECT kopek_merchant_key(merchant_id), mode, key, substr(request_hash, 1, ${LEGACY_FINGERPRINT_BYTES}), holder, holder_seq, answer, object_id, created_at
  FROM idempotency_keys_old;
DROP TABLE idempotency_keys_old;`);
  },
  // 14 → 15: records in the order they are made, under a seq, found by key through the server's in-memory index
  // (gone since 16) instead of a b-tree sorted by key: a client's random key put each keyed create's record
  // on a leaf of its own, a page written for that create alone. Old records keep their age order.
  (db) => {
    if (hasColumn(db, 'idempotency_keys', 'seq') || !hasColumn(db, 'idempotency_keys', 'holder')) return;
    db.function('kopek_key_hash', { deterministic: true }, (merchant: unknown, mode: unknown, key: unknown) => legacyKeyHash(merchant as Buffer, String(mode), String(key)));
    db.exec(`ALTER TABLE idempotency_keys RENAME TO idempotency_keys_old;
CREATE TABLE idempotency_keys (
  seq           INTEGER PRIMARY KEY AUTOINCREMENT,
  merchant_id   BLOB NOT NULL,
  mode          TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  key           TEXT NOT NULL,
  key_hash      INTEGER NOT NULL,
  request_hash  BLOB NOT NULL,
  holder        TEXT CHECK (holder IN ('payments', 'refunds', 'payouts', 'tokens', 'subscriptions')),
  holder_seq    INTEGER,
  answer        BLOB,
  object_id     TEXT,
  created_at    INTEGER NOT NULL,
  CHECK ((holder IS NULL) = (holder_seq IS NULL) AND (holder IS NULL) = (answer IS NOT NULL))
) STRICT;
INSERT INTO idempotency_keys (merchant_id, mode, key, key_hash, request_hash, holder, holder_seq, answer, object_id, created_at)
  SELECT merchant_id, mode, key, kopek_key_hash(merchant_id, mode, key), request_hash, holder, holder_seq, answer, object_id, created_at
  FROM idempotency_keys_old ORDER BY created_at;
DROP TABLE idempotency_keys_old;`);
  },
  // 15 → 16: the database enforces one record per merchant, mode and key (a UNIQUE constraint), claimed in the
  // create's transaction, instead of an index in the server's memory; each record keeps its first answer as the
  // plain JSON text it replays. The answers kept in the created objects' rows, compact, are read into the records,
  // and those columns go. A record whose answer can no longer be read (its holder's row is gone) is dropped: the
  // server would have made a new object for its key anyway. The index of subscription charges becomes unique.
  (db) => {
    if (!hasColumn(db, 'idempotency_keys', 'fingerprint')) convertKeyRecords(db);
    // One charge per subscription period and attempt, by the database: the index becomes unique. A database that
    // already holds two charges of one period and attempt cannot take it: say which, rather than fail obscurely.
    const twice = db
      .prepare(
        `SELECT subscription_id, charge_index, attempt, group_concat(payment_id, ', ') AS payments FROM recurrent_payments
         WHERE subscription_id IS NOT NULL GROUP BY subscription_id, charge_index, attempt HAVING count(*) > 1 LIMIT 5`,
      )
      .all() as Array<{ subscription_id: string; charge_index: number | null; attempt: number; payments: string }>;
    if (twice.length > 0) {
      const list = twice.map((t) => `subscription ${t.subscription_id} period ${t.charge_index} attempt ${t.attempt} (payments ${t.payments})`).join('; ');
      throw new Error(`cannot upgrade to schema 16: charges recorded twice for one period: ${list}; refund the extra charge and delete its recurrent_payments row, then start again`);
    }
    db.exec(`DROP INDEX IF EXISTS recurrent_payments_subscription;
CREATE UNIQUE INDEX recurrent_payments_subscription ON recurrent_payments(subscription_id, charge_index, attempt) WHERE subscription_id IS NOT NULL;`);
    for (const table of ['payments', 'refunds', 'payouts', 'tokens', 'subscriptions']) {
      if (hasColumn(db, table, 'answer')) db.exec(`ALTER TABLE ${table} DROP COLUMN answer`);
    }
  },
  // 16 → 17: a job run outside a transaction is claimed in the database (process, token, lapse time) instead of
  // being held in one process's memory, so that a job whose process died is taken again once its claim lapses.
  (db) => {
    for (const [column, type] of [['claimed_by', 'TEXT'], ['claim_token', 'TEXT'], ['claim_until', 'INTEGER']]) {
      if (!hasColumn(db, 'jobs', column)) db.exec(`ALTER TABLE jobs ADD COLUMN ${column} ${type}`);
    }
  },
];

/**
 * Migration 15 → 16's conversion of the records (see there). Answers are read in every form versions 6 to 15 wrote:
 * compact in the created object's row (a holder), or in the record itself, compact or plain. A compact answer
 * names its shop by marker: the shop is the holder's, else the object's the record names (object_id), else a
 * batch's first payout's.
 */
function convertKeyRecords(db: Database.Database): void {
  db.exec(`ALTER TABLE idempotency_keys RENAME TO idempotency_keys_old;
CREATE TABLE idempotency_keys (
  seq          INTEGER PRIMARY KEY,
  merchant_id  TEXT NOT NULL,
  mode         TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  key          TEXT NOT NULL,
  fingerprint  TEXT NOT NULL,
  answer       TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  UNIQUE (merchant_id, mode, key)
) STRICT;`);
  type Old = { seq: number; merchant_id: Buffer; mode: string; key: string; request_hash: Buffer; holder: string | null; holder_seq: number | null; answer: Buffer | null; object_id: string | null; created_at: number };
  const page = db.prepare('SELECT seq, merchant_id, mode, key, request_hash, holder, holder_seq, answer, object_id, created_at FROM idempotency_keys_old WHERE seq > ? ORDER BY seq LIMIT 10000');
  const merchantExists = db.prepare('SELECT 1 FROM merchants WHERE id = ?');
  const tables = ['payments', 'refunds', 'payouts', 'tokens', 'subscriptions'];
  const bySeq = new Map(tables.map((t) => [t, db.prepare(`SELECT id, shop_id, answer FROM ${t} WHERE seq = ?`)]));
  const shopOf = tables.map((t) => db.prepare(`SELECT shop_id FROM ${t} WHERE id = ?`));
  const objectShop = (id: string): string | undefined => {
    for (const st of shopOf) {
      const row = st.get(id) as { shop_id: string } | undefined;
      if (row) return row.shop_id;
    }
    return undefined;
  };
  const insert = db.prepare('INSERT INTO idempotency_keys (seq, merchant_id, mode, key, fingerprint, answer, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
  for (let after = 0; ; ) {
    const rows = page.all(after) as Old[];
    if (rows.length === 0) break;
    after = rows[rows.length - 1].seq;
    for (const r of rows) {
      const asUuid = merchantIdOfLegacyKey(r.merchant_id);
      const merchantId = merchantExists.get(asUuid) ? asUuid : r.merchant_id.toString('utf8');
      let text: string | undefined;
      if (r.holder !== null) {
        const h = bySeq.get(r.holder)?.get(r.holder_seq!) as { id: string; shop_id: string; answer: Buffer | null } | undefined;
        if (h?.answer) text = decodeLegacyRecord(h.answer, { objectId: h.id, shopId: h.shop_id, merchantId });
      } else if (r.answer) {
        let shop: string | undefined = '';
        if (namesShop(r.answer)) {
          shop = r.object_id ? objectShop(r.object_id) : undefined;
          if (shop === undefined) {
            const first = /"payout_id":"([^"]+)"/.exec(decodeLegacyRecord(r.answer, { objectId: r.object_id, shopId: '', merchantId }));
            shop = first ? objectShop(first[1]) : undefined;
          }
        }
        if (shop !== undefined) text = decodeLegacyRecord(r.answer, { objectId: r.object_id, shopId: shop, merchantId });
      }
      if (text !== undefined) insert.run(r.seq, merchantId, r.mode, r.key, r.request_hash.toString('hex'), text, r.created_at);
    }
  }
  db.exec('DROP TABLE idempotency_keys_old');
}

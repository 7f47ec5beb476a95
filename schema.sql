-- kopek: the whole schema, top to bottom.
-- Times are INTEGER milliseconds since the Unix epoch (UTC); money is INTEGER minor units.
-- A test-mode row's times are on its shop's test clock; a live row's on real time.
-- Each domain keeps its tables in its own section below. Every table that holds a shop's data has
-- `shop_id` and `mode` columns: that is how a key sees only its own shop, and how POST /v1/test/reset
-- finds a shop's test-mode rows.

-- == cabinet: merchants, shops, API keys ==

CREATE TABLE merchants (
  id            TEXT PRIMARY KEY,
  name          TEXT NOT NULL,
  live_enabled  INTEGER NOT NULL DEFAULT 0,
  created_at    INTEGER NOT NULL
) STRICT;

CREATE TABLE shops (
  id                   TEXT PRIMARY KEY,
  merchant_id          TEXT NOT NULL REFERENCES merchants(id),
  name                 TEXT NOT NULL,
  scopes               TEXT NOT NULL DEFAULT '',      -- comma list of enabled scopes
  ip_allowlist         TEXT NOT NULL DEFAULT '',      -- comma list of IPs and CIDRs; empty = any
  signing_secret       TEXT NOT NULL,                 -- thm_…, verifies X-PSP-Signature of requests
  require_signature    INTEGER NOT NULL DEFAULT 0,
  webhook_secret       TEXT NOT NULL,                 -- whs_…, fallback for a payment's own webhook_url
  test_clock_offset_ms INTEGER NOT NULL DEFAULT 0,    -- the shop's test clock = real time + offset
  created_at           INTEGER NOT NULL
) STRICT;
CREATE INDEX shops_merchant ON shops(merchant_id);

CREATE TABLE api_keys (
  id          TEXT PRIMARY KEY,
  shop_id     TEXT NOT NULL REFERENCES shops(id),
  mode        TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  key_hash    TEXT NOT NULL UNIQUE,                   -- SHA-256 hex of the whole key; the key itself is never stored
  key_prefix  TEXT NOT NULL,                          -- first characters, to recognise a key in listings
  scopes      TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  revoked_at  INTEGER
) STRICT;
CREATE INDEX api_keys_shop ON api_keys(shop_id);

-- A key's last request, shown in the cabinet; written at most once a minute (src/platform/auth/authenticate.ts). Kept
-- apart from api_keys so that writing it does not drop the server's cache of key lookups.
CREATE TABLE api_key_usage (
  key_id        TEXT PRIMARY KEY,
  last_used_at  INTEGER NOT NULL                      -- real time
) STRICT, WITHOUT ROWID;

-- == idempotency ==

-- One record per merchant, mode and Idempotency-Key, enforced by the UNIQUE constraint and claimed in the
-- transaction of the create it guards: a replay of the same request finds the record and answers with the
-- first answer, kept here as the JSON text first sent, byte for byte; the same key with another request is a
-- conflict. Test and live are separate books, so separate namespaces: a key used in test mode is free in live
-- mode. Records are in the order made (seq); the retention sweep deletes the oldest past their time.
CREATE TABLE idempotency_keys (
  seq          INTEGER PRIMARY KEY,                 -- the order records were made in
  merchant_id  TEXT NOT NULL,
  mode         TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  key          TEXT NOT NULL,
  fingerprint  TEXT NOT NULL,                       -- hex of the first 16 bytes of SHA-256 of shop, mode, method, route, params and canonical body
  answer       TEXT NOT NULL,                       -- the first answer's JSON text
  created_at   INTEGER NOT NULL,                    -- real time
  UNIQUE (merchant_id, mode, key)
) STRICT;

-- == scheduler: the jobs table is the truth; a process keeps only the time of its next wake in memory ==

CREATE TABLE jobs (
  id           INTEGER PRIMARY KEY,
  kind         TEXT NOT NULL,
  subject_id   TEXT NOT NULL,
  shop_id      TEXT,
  mode         TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  due_at       INTEGER NOT NULL,                      -- on the shop's test clock in test mode
  run_at       INTEGER NOT NULL,                      -- real time it runs: due_at - the shop's test clock offset (test), due_at (live)
  attempt      INTEGER NOT NULL DEFAULT 0,            -- failed runs so far
  payload      TEXT NOT NULL DEFAULT '{}',
  state        TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done', 'dead', 'cancelled')),
  last_error   TEXT,
  created_at   INTEGER NOT NULL,
  finished_at  INTEGER,
  -- The claim of the process running the job outside a transaction (an async job's request, an advance's jobs):
  -- its random process id, the claim's own random token (completion names it), and when the claim lapses (real
  -- time; renewed while the job runs). A pending job whose claim lapsed is taken again. NULL: nobody holds it.
  claimed_by   TEXT,
  claim_token  TEXT,
  claim_until  INTEGER
) STRICT;
-- Due jobs: pending, run_at <= now, claim free or lapsed (checked on the row), in (run_at, id) order.
CREATE INDEX jobs_run ON jobs(run_at, id) WHERE state = 'pending';
CREATE INDEX jobs_shop_due ON jobs(shop_id, mode, due_at) WHERE state = 'pending';
CREATE INDEX jobs_subject ON jobs(subject_id, kind) WHERE state = 'pending';
CREATE INDEX jobs_failing ON jobs(kind) WHERE state = 'dead' OR (state = 'pending' AND attempt > 0);
-- Retention deletes finished jobs by their finish time (src/web/system/retention.ts).
CREATE INDEX jobs_finished ON jobs(finished_at) WHERE state IN ('done', 'cancelled');

-- == events: append-only; the SSE stream replays it, webhook deliveries are made from it ==

CREATE TABLE events (
  seq            INTEGER PRIMARY KEY AUTOINCREMENT,   -- the SSE `id:`
  id             TEXT NOT NULL UNIQUE,                -- evt_…, the webhook event id
  merchant_id    TEXT NOT NULL,
  shop_id        TEXT NOT NULL,
  mode           TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  kind           TEXT NOT NULL,                       -- SSE kind, e.g. payment.status_changed
  payload        TEXT NOT NULL,                       -- SSE payload JSON
  at             INTEGER NOT NULL,                    -- on the object's clock
  webhook_event  TEXT,                                -- e.g. payment.succeeded; NULL when no webhook is sent
  webhook_data   TEXT,                                -- the object as GET returns it at the time of the event
  webhook_url    TEXT,                                -- a payment's own webhook_url, replacing the shop's endpoints
  payment_id     TEXT,
  payout_id      TEXT
) STRICT;
CREATE INDEX events_shop_seq ON events(shop_id, mode, seq);
-- The database's identity, one row made with the schema. The event stream names it in its answer, so that a
-- client resuming with Last-Event-ID tells the same database after a restart (resume) from another one, such as
-- a restarted in-memory server whose sequence starts anew (src/money/events/events.ts).
CREATE TABLE database_identity (
  id          TEXT NOT NULL,                          -- 32 hex digits, random
  created_at  INTEGER NOT NULL
) STRICT;
INSERT INTO database_identity (id, created_at)
  VALUES (lower(hex(randomblob(16))), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER));
-- No index on payment_id or payout_id: one at a random UUID position would cost every payment's events a page
-- write. A payment's timeline (the cabinet) finds its payment.created event through `id`, which sorts by time,
-- and reads the shop's log from there in bounded windows (src/web/cabinet/payment.ts).

-- == webhooks ==
-- Endpoints and their secrets are shop settings, shared by both modes: they have no `mode` column, so
-- POST /v1/test/reset keeps them. Deliveries and attempts belong to one event of one mode.

CREATE TABLE webhook_endpoints (
  id               TEXT PRIMARY KEY,
  shop_id          TEXT NOT NULL REFERENCES shops(id),
  url              TEXT NOT NULL,
  events           TEXT NOT NULL DEFAULT '',        -- comma list of webhook events; empty = all
  signature        TEXT NOT NULL DEFAULT 'v2' CHECK (signature IN ('v1', 'v2')),
  disabled_at      INTEGER,                         -- real time; set when the receiver answered 410
  disabled_reason  TEXT,
  created_at       INTEGER NOT NULL
) STRICT;
CREATE INDEX webhook_endpoints_shop ON webhook_endpoints(shop_id, created_at);

CREATE TABLE webhook_secrets (
  id           INTEGER PRIMARY KEY,
  endpoint_id  TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  secret       TEXT NOT NULL,                       -- whs_…; the HMAC key is the whole string
  created_at   INTEGER NOT NULL,
  expires_at   INTEGER                              -- real time; NULL = valid until rotated away
) STRICT;
CREATE INDEX webhook_secrets_endpoint ON webhook_secrets(endpoint_id);

-- The outbox: one row per (event, receiver), written in the event's transaction.
CREATE TABLE webhook_deliveries (
  id               INTEGER PRIMARY KEY,
  event_seq        INTEGER NOT NULL,                -- events.seq
  event_id         TEXT NOT NULL,                   -- evt_…
  event            TEXT NOT NULL,                   -- e.g. payment.succeeded
  shop_id          TEXT NOT NULL,
  mode             TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  endpoint_id      TEXT,                            -- NULL: a payment's own webhook_url
  url              TEXT NOT NULL,
  payment_id       TEXT,
  state            TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'succeeded', 'failed')),
  attempts         INTEGER NOT NULL DEFAULT 0,      -- attempts made, ever
  round_start      INTEGER NOT NULL DEFAULT 0,      -- attempts before the last resend: retries count from here
  next_attempt_at  INTEGER,                         -- on the shop's clock; NULL once final
  created_at       INTEGER NOT NULL
) STRICT;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_event ON webhook_deliveries(event_id);
CREATE INDEX webhook_deliveries_payment ON webhook_deliveries(payment_id) WHERE payment_id IS NOT NULL;
CREATE INDEX webhook_deliveries_shop ON webhook_deliveries(shop_id, mode, id);

-- The delivery log: every attempt, kept.
CREATE TABLE webhook_attempts (
  id               INTEGER PRIMARY KEY,
  delivery_id      INTEGER NOT NULL REFERENCES webhook_deliveries(id),
  shop_id          TEXT NOT NULL,
  mode             TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  attempt          INTEGER NOT NULL,                -- 1-based, per delivery
  url              TEXT NOT NULL,
  attempted_at     INTEGER NOT NULL,                -- on the shop's clock
  latency_ms       INTEGER NOT NULL,
  response_code    INTEGER,                         -- NULL when no answer
  error            TEXT,
  succeeded        INTEGER NOT NULL,
  next_attempt_at  INTEGER                          -- the retry this failure scheduled, on the shop's clock
) STRICT;
CREATE INDEX webhook_attempts_delivery ON webhook_attempts(delivery_id, attempt);

-- == payments and refunds ==

-- seq orders the registers and numbers public_id (P-<100000 + seq>): AUTOINCREMENT never reuses a value.
CREATE TABLE payments (
  seq               INTEGER PRIMARY KEY AUTOINCREMENT,
  id                TEXT NOT NULL UNIQUE,
  public_id         TEXT NOT NULL UNIQUE,
  kind              TEXT NOT NULL DEFAULT 'payment',    -- payment, token_binding, subscription_init, subscription_charge, token_charge
  merchant_id       TEXT NOT NULL,
  shop_id           TEXT NOT NULL REFERENCES shops(id),
  mode              TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  order_id          TEXT NOT NULL,
  status            TEXT NOT NULL CHECK (status IN ('pending', 'processing', 'succeeded', 'failed', 'cancelled', 'refunded', 'expired')),
  amount            INTEGER NOT NULL CHECK (amount > 0),
  amount_refunded   INTEGER NOT NULL DEFAULT 0 CHECK (amount_refunded >= 0 AND amount_refunded <= amount),
  currency          TEXT NOT NULL,
  method            TEXT NOT NULL,
  method_fixed      INTEGER NOT NULL DEFAULT 0,         -- 1 when created with a method other than any
  return_url        TEXT NOT NULL DEFAULT '',
  description       TEXT NOT NULL DEFAULT '',
  webhook_url       TEXT NOT NULL DEFAULT '',
  purpose           TEXT NOT NULL,                      -- the fixed bank purpose text, holds public_id
  metadata          TEXT NOT NULL DEFAULT '{}',         -- JSON object of strings, reserved keys included
  rrn               TEXT NOT NULL DEFAULT '',
  bank_name         TEXT NOT NULL DEFAULT '',
  card_brand        TEXT NOT NULL DEFAULT '',
  card_mask         TEXT NOT NULL DEFAULT '',           -- never a full card number
  card_holder       TEXT NOT NULL DEFAULT '',
  phone_mask        TEXT NOT NULL DEFAULT '',
  payer_bank        TEXT NOT NULL DEFAULT '',
  created_at        INTEGER NOT NULL,
  expires_at        INTEGER NOT NULL,
  processing_until  INTEGER,
  captured_at       INTEGER,
  finalized_at      INTEGER
) STRICT;
-- The registers: every index starts (shop_id, mode) and ends (created_at, seq), so that a page of any documented
-- filter is one seek and limit + 1 rows in order (src/money/registers/plan.ts chooses among them).
CREATE INDEX payments_register ON payments(shop_id, mode, created_at, seq);
CREATE INDEX payments_status ON payments(shop_id, mode, status, created_at, seq);
-- The link-expiry sweep (one job per shop and mode) finds the pending payments due by its time here; a payment
-- that leaves pending drops out by itself.
CREATE INDEX payments_pending_expiry ON payments(shop_id, mode, expires_at) WHERE status = 'pending';
-- The session sweep, likewise: the processing payments whose bank session ends by its time.
CREATE INDEX payments_session_end ON payments(shop_id, mode, processing_until) WHERE status = 'processing';

CREATE TABLE refunds (
  seq           INTEGER PRIMARY KEY AUTOINCREMENT,
  id            TEXT NOT NULL UNIQUE,
  payment_id    TEXT NOT NULL REFERENCES payments(id),
  merchant_id   TEXT NOT NULL,
  shop_id       TEXT NOT NULL,
  mode          TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  amount        INTEGER NOT NULL CHECK (amount > 0),
  reason        TEXT NOT NULL DEFAULT '',
  status        TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
  failure_code  TEXT NOT NULL DEFAULT '',
  created_at    INTEGER NOT NULL,
  completed_at  INTEGER
) STRICT;
CREATE INDEX refunds_payment ON refunds(payment_id);
CREATE INDEX refunds_register ON refunds(shop_id, mode, created_at, seq);
CREATE INDEX refunds_status ON refunds(shop_id, mode, status, created_at, seq);

-- Who asked for each refund and why; append-only, kept apart from the refund itself.
CREATE TABLE refund_audit (
  id           INTEGER PRIMARY KEY,
  refund_id    TEXT NOT NULL,
  payment_id   TEXT NOT NULL,
  shop_id      TEXT NOT NULL,
  mode         TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  key_id       TEXT NOT NULL,
  amount       INTEGER NOT NULL,
  reason       TEXT NOT NULL,
  at           INTEGER NOT NULL
) STRICT;

-- == ledger, payouts ==
-- Double entry: each money movement is one ledger_entries row and its postings, which sum to zero.
-- A book is (shop_id, mode): test and live money never meet. Accounts of a book: shop:available,
-- shop:reserved (held for pending refunds and payouts), and the counterparties external:acquiring,
-- external:refunds, external:payouts. balance = available + reserved; available = shop:available.

CREATE TABLE ledger_entries (
  id           INTEGER PRIMARY KEY,
  merchant_id  TEXT NOT NULL,
  shop_id      TEXT NOT NULL,
  mode         TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  movement     TEXT NOT NULL,                       -- payment_succeeded, refund_reserved, payout_settled, …
  source_id    TEXT NOT NULL,                       -- the payment, refund or payout moved
  amount       INTEGER NOT NULL CHECK (amount > 0),
  at           INTEGER NOT NULL,                    -- on the book's clock
  source_seq   INTEGER NOT NULL                     -- the seq of that payment, refund or payout
) STRICT;
-- A movement posts once per source, however often its event is replayed. Keyed by the source's seq, which grows
-- as sources are made, an entry goes next to the last one instead of to a random place of the index.
CREATE UNIQUE INDEX ledger_entries_once ON ledger_entries(movement, source_seq);
CREATE INDEX ledger_entries_book ON ledger_entries(shop_id, mode, id);

CREATE TABLE ledger_postings (                      -- append-only
  id           INTEGER PRIMARY KEY,
  entry_id     INTEGER NOT NULL,
  shop_id      TEXT NOT NULL,
  mode         TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  account      TEXT NOT NULL,
  amount       INTEGER NOT NULL                     -- signed minor units; a book's shop accounts gain on +
) STRICT;
CREATE INDEX ledger_postings_entry ON ledger_postings(entry_id);
CREATE INDEX ledger_postings_book ON ledger_postings(shop_id, mode, account);

CREATE TABLE ledger_balances (                      -- running sums of the postings, kept in the same transaction
  shop_id      TEXT NOT NULL,
  mode         TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  account      TEXT NOT NULL,
  merchant_id  TEXT NOT NULL,
  balance      INTEGER NOT NULL,
  PRIMARY KEY (shop_id, mode, account)
) STRICT, WITHOUT ROWID;

-- seq orders the register (keyset with created_at), as in the other registers.
CREATE TABLE payouts (
  seq               INTEGER PRIMARY KEY AUTOINCREMENT,
  id                TEXT NOT NULL UNIQUE,
  merchant_id       TEXT NOT NULL,
  shop_id           TEXT NOT NULL,
  mode              TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  amount            INTEGER NOT NULL CHECK (amount > 0),
  currency          TEXT NOT NULL,
  method            TEXT NOT NULL CHECK (method IN ('payouts_sbp', 'payouts_card', 'payouts_account')),
  status            TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
  recipient         TEXT NOT NULL,                  -- JSON echo of the recipient fields; never a card number
  card_last4        TEXT,                           -- card payouts: the last 4 digits, all that is kept of the PAN
  bank_name         TEXT,                           -- recipient bank from the SBP directory, when known
  bank_ref          TEXT NOT NULL,
  fail_reason       TEXT NOT NULL DEFAULT '',       -- unified failure code on failed
  sim_outcome       TEXT,                           -- test mode: the simulator's plan, fixed at creation
  sim_failure_code  TEXT,
  created_at        INTEGER NOT NULL,
  completed_at      INTEGER
) STRICT;
CREATE INDEX payouts_register ON payouts(shop_id, mode, created_at, seq);
CREATE INDEX payouts_method_status ON payouts(shop_id, mode, method, status, created_at, seq);

-- == tokens and subscriptions ==
-- A token is a saved method, bound by a payment (kind token_binding, or a subscription's subscription_init).
-- A subscription owns one token and charges it on a calendar counted from its anchor (UTC).

CREATE TABLE tokens (
  seq                 INTEGER PRIMARY KEY AUTOINCREMENT,
  id                  TEXT NOT NULL UNIQUE,
  merchant_id         TEXT NOT NULL,
  shop_id             TEXT NOT NULL REFERENCES shops(id),
  mode                TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  customer_ref        TEXT NOT NULL,
  customer_email      TEXT NOT NULL DEFAULT '',
  method              TEXT NOT NULL CHECK (method IN ('cards', 'sbp', 'tpay')),
  status              TEXT NOT NULL CHECK (status IN ('pending', 'active', 'cancelled')),
  card_brand          TEXT NOT NULL DEFAULT '',
  card_mask           TEXT NOT NULL DEFAULT '',          -- last 4 digits masked; never a full card number
  binding_payment_id  TEXT NOT NULL,
  subscription_id     TEXT,                              -- set when a subscription made this token
  outcomes            TEXT NOT NULL DEFAULT '[]',        -- test mode: JSON queue of the next charges' outcomes
  last_charged_at     INTEGER,                           -- the last successful charge
  created_at          INTEGER NOT NULL,
  activated_at        INTEGER,
  cancelled_at        INTEGER
) STRICT;
CREATE INDEX tokens_register ON tokens(shop_id, mode, created_at, seq);
CREATE INDEX tokens_status ON tokens(shop_id, mode, status, created_at, seq);
CREATE INDEX tokens_customer ON tokens(shop_id, mode, customer_ref, status, created_at, seq);

CREATE TABLE subscriptions (
  seq                 INTEGER PRIMARY KEY AUTOINCREMENT,
  id                  TEXT NOT NULL UNIQUE,
  merchant_id         TEXT NOT NULL,
  shop_id             TEXT NOT NULL REFERENCES shops(id),
  mode                TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  customer_ref        TEXT NOT NULL,
  customer_email      TEXT NOT NULL DEFAULT '',
  plan_name           TEXT NOT NULL DEFAULT '',
  amount              INTEGER NOT NULL CHECK (amount > 0),
  currency            TEXT NOT NULL,
  method              TEXT NOT NULL CHECK (method IN ('cards', 'sbp', 'tpay')),
  period              TEXT NOT NULL CHECK (period IN ('day', 'week', 'month', 'year')),
  interval_count      INTEGER NOT NULL CHECK (interval_count >= 1),
  trial_days          INTEGER NOT NULL DEFAULT 0,
  status              TEXT NOT NULL CHECK (status IN ('pending', 'active', 'past_due', 'cancelled')),
  token_id            TEXT NOT NULL,
  initial_payment_id  TEXT NOT NULL,
  anchor_at           INTEGER,                           -- charge n is due at anchor + n periods (n from 0 with a trial, 1 without)
  charge_index        INTEGER NOT NULL DEFAULT 0,        -- n of the period being charged next
  failures            INTEGER NOT NULL DEFAULT 0,        -- consecutive failed charges
  next_charge_at      INTEGER,
  trial_end           INTEGER,
  cancel_reason       TEXT NOT NULL DEFAULT '',
  created_at          INTEGER NOT NULL,
  activated_at        INTEGER,
  cancelled_at        INTEGER
) STRICT;
CREATE INDEX subscriptions_register ON subscriptions(shop_id, mode, created_at, seq);
CREATE INDEX subscriptions_status ON subscriptions(shop_id, mode, status, created_at, seq);
CREATE INDEX subscriptions_customer ON subscriptions(shop_id, mode, customer_ref, status, created_at, seq);

-- Every payment a token or subscription made: binding, initial payment and charges, with the attempt. A row is
-- keyed by its payment's seq, so rows go in the order their payments were made and nothing lands at a random
-- place; a payment's row is found from its id through the payments' own index.
CREATE TABLE recurrent_payments (
  payment_seq      INTEGER PRIMARY KEY,                  -- payments.seq of the payment
  payment_id       TEXT NOT NULL,
  kind             TEXT NOT NULL CHECK (kind IN ('token_binding', 'subscription_init', 'subscription_charge', 'token_charge')),
  token_id         TEXT NOT NULL,
  subscription_id  TEXT,
  shop_id          TEXT NOT NULL,
  mode             TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  charge_index     INTEGER,                              -- subscription_charge: the period n it pays
  attempt          INTEGER NOT NULL DEFAULT 1,           -- subscription_charge: 1, then the retries 2 and 3
  created_at       INTEGER NOT NULL
) STRICT;
-- One charge per subscription period and attempt: a second charge of a period the database refuses.
CREATE UNIQUE INDEX recurrent_payments_subscription ON recurrent_payments(subscription_id, charge_index, attempt) WHERE subscription_id IS NOT NULL;

-- == hosted payment page ==

-- == bank port: which bank a shop's live operations reach ==
-- Test mode always reaches the simulator; a live shop reaches its acquirer's provider. The settings are the
-- provider's own (terminal key, address); secrets in them are encrypted under the master key.
CREATE TABLE shop_acquirers (
  shop_id     TEXT PRIMARY KEY REFERENCES shops(id),
  provider    TEXT NOT NULL,
  settings    TEXT NOT NULL DEFAULT '{}',
  updated_at  INTEGER NOT NULL
) STRICT;

-- A shop's live payout provider (YooKassa Payouts), independent of its acquirer. `secret` is sealed under the
-- master key (context 'shop_payout_providers.secret:<shop id>'), never stored in clear.
CREATE TABLE shop_payout_providers (
  shop_id     TEXT PRIMARY KEY REFERENCES shops(id),
  provider    TEXT NOT NULL,
  agent_id    TEXT NOT NULL,
  secret      TEXT NOT NULL,
  api_url     TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
) STRICT;


-- Where a buyer stands in a step of the page that outlives one request: a 3-D Secure challenge, a bank's
-- extra confirmation, or waiting for a bank that has not answered. Only a card's brand, mask and holder
-- are kept; the card number never reaches the database.
CREATE TABLE pay_page_steps (
  payment_id    TEXT PRIMARY KEY,
  shop_id       TEXT NOT NULL,
  mode          TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  step          TEXT NOT NULL CHECK (step IN ('challenge', 'confirm', 'waiting')),
  card_brand    TEXT NOT NULL DEFAULT '',
  card_mask     TEXT NOT NULL DEFAULT '',
  card_holder   TEXT NOT NULL DEFAULT '',
  outcome       TEXT NOT NULL DEFAULT '',             -- the bank's answer once the step passes: succeeded, failed, pending
  failure_code  TEXT NOT NULL DEFAULT '',
  updated_at    INTEGER NOT NULL
) STRICT;

-- == merchant cabinet (web): users, sessions, sign-in throttling, audit log ==
-- None of these tables has a `mode` column: POST /v1/test/reset never touches them.

CREATE TABLE cabinet_users (
  id              TEXT PRIMARY KEY,
  merchant_id     TEXT NOT NULL REFERENCES merchants(id),
  email           TEXT NOT NULL UNIQUE,               -- lower case
  password_hash   TEXT NOT NULL,                      -- scrypt$N$r$p$salt$key, base64url parts
  totp_secret     TEXT,                               -- base32, sealed under the master key; set once enrolment is confirmed
  totp_pending    TEXT,                               -- base32 offered during enrolment, not yet confirmed; sealed too
  totp_last_step  INTEGER NOT NULL DEFAULT 0,         -- last accepted 30 s step: a code signs in once
  created_at      INTEGER NOT NULL,
  disabled_at     INTEGER
) STRICT;
CREATE INDEX cabinet_users_merchant ON cabinet_users(merchant_id);

CREATE TABLE cabinet_recovery_codes (
  user_id    TEXT NOT NULL REFERENCES cabinet_users(id),
  code_hash  TEXT NOT NULL,                           -- SHA-256 hex of the code; the code is shown once
  used_at    INTEGER,
  PRIMARY KEY (user_id, code_hash)
) STRICT, WITHOUT ROWID;

CREATE TABLE cabinet_sessions (
  token_hash    TEXT PRIMARY KEY,                     -- SHA-256 hex of the cookie value; the value is never stored
  user_id       TEXT NOT NULL REFERENCES cabinet_users(id),
  csrf_token    TEXT NOT NULL,                        -- every POST of the session must carry it
  view_mode     TEXT NOT NULL DEFAULT 'test' CHECK (view_mode IN ('test', 'live')),
  lang          TEXT NOT NULL DEFAULT 'ru' CHECK (lang IN ('ru', 'en')),
  flash         TEXT,                                 -- a message for the next page, shown once
  ip            TEXT NOT NULL,
  created_at    INTEGER NOT NULL,                     -- real time; the absolute expiry counts from here
  last_seen_at  INTEGER NOT NULL                      -- real time; the idle expiry counts from here
) STRICT;
CREATE INDEX cabinet_sessions_user ON cabinet_sessions(user_id);

-- Password checks per email and per client address: each is reserved here before the password is hashed
-- (counted as a failure until it succeeds); slowed, then locked for a while (src/web/cabinet/users.ts).
CREATE TABLE cabinet_login_failures (
  subject         TEXT PRIMARY KEY,                   -- "email:…" or "ip:…"
  failures        INTEGER NOT NULL,
  last_failed_at  INTEGER NOT NULL,                   -- the last attempt reserved
  locked_until    INTEGER                             -- no attempt before this (slowed or locked); NULL: at once
) STRICT, WITHOUT ROWID;

-- Every sign-in (and failed attempt) and every change made in the cabinet; append-only.
CREATE TABLE cabinet_audit (
  id           INTEGER PRIMARY KEY,
  merchant_id  TEXT,                                  -- NULL: a failed sign-in with an unknown email
  user_id      TEXT,
  email        TEXT NOT NULL,
  action       TEXT NOT NULL,                         -- e.g. sign_in, key.create, payment.refund
  target       TEXT NOT NULL DEFAULT '',              -- the id acted on
  detail       TEXT NOT NULL DEFAULT '',
  ip           TEXT NOT NULL DEFAULT '',
  at           INTEGER NOT NULL                       -- real time
) STRICT;
CREATE INDEX cabinet_audit_merchant ON cabinet_audit(merchant_id, id);
-- Every request kopek sends to a live acquirer or payout provider, recorded in the transaction that decides it, before it is
-- sent, without secrets (no password, no Token): queued → sent → answered | unknown. A request found `sent`
-- after a restart may have reached the bank; its operation is settled by a status check, never re-sent.
CREATE TABLE bank_requests (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  shop_id          TEXT NOT NULL,
  mode             TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  provider         TEXT NOT NULL,
  operation        TEXT NOT NULL,                       -- the bank's method: Init, GetState, CheckOrder, Cancel, Charge, GetQr
  subject_kind     TEXT NOT NULL CHECK (subject_kind IN ('payment', 'refund', 'payout')),
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
-- A live payment's session at T-Bank: the current attempt's OrderId, the bank's PaymentId, and what the
-- hosted page shows (the bank's PaymentURL, or the SBP QR payload).
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
-- A saved method's RebillId at T-Bank, encrypted under the master key.
CREATE TABLE tbank_rebills (
  token_id         TEXT PRIMARY KEY,
  shop_id          TEXT NOT NULL,
  rebill_enc       TEXT NOT NULL,
  updated_at       INTEGER NOT NULL
) STRICT;
-- Answers of a bank that were not applied because their amount differs from the operation's (kopek doctor).
CREATE TABLE bank_mismatches (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  shop_id          TEXT NOT NULL,
  subject_id       TEXT NOT NULL,
  expected_amount  INTEGER NOT NULL,
  bank_amount      INTEGER NOT NULL,
  answer           TEXT NOT NULL,                       -- what the bank said (outcome)
  created_at       INTEGER NOT NULL
) STRICT;

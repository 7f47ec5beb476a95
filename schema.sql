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

-- == idempotency ==

CREATE TABLE idempotency_keys (
  merchant_id   TEXT NOT NULL,
  key           TEXT NOT NULL,
  shop_id       TEXT NOT NULL,
  mode          TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  request_hash  TEXT NOT NULL,                        -- SHA-256 of method, route and raw body
  status        INTEGER NOT NULL,
  response      TEXT NOT NULL,                        -- the JSON body first answered
  created_at    INTEGER NOT NULL,
  PRIMARY KEY (merchant_id, key)
) STRICT, WITHOUT ROWID;

-- == scheduler: the jobs table is the truth, the in-memory wheel only a cache of what is due soon ==

CREATE TABLE jobs (
  id           INTEGER PRIMARY KEY,
  kind         TEXT NOT NULL,
  subject_id   TEXT NOT NULL,
  shop_id      TEXT,
  mode         TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  due_at       INTEGER NOT NULL,                      -- on the shop's test clock in test mode
  attempt      INTEGER NOT NULL DEFAULT 0,            -- failed runs so far
  payload      TEXT NOT NULL DEFAULT '{}',
  state        TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done', 'dead', 'cancelled')),
  last_error   TEXT,
  created_at   INTEGER NOT NULL,
  finished_at  INTEGER
) STRICT;
CREATE INDEX jobs_due ON jobs(due_at) WHERE state = 'pending';
CREATE INDEX jobs_shop_due ON jobs(shop_id, mode, due_at) WHERE state = 'pending';
CREATE INDEX jobs_subject ON jobs(subject_id, kind) WHERE state = 'pending';

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
CREATE INDEX events_payment ON events(payment_id) WHERE payment_id IS NOT NULL;

-- == webhooks ==

-- == payments and refunds ==

-- == ledger, payouts ==

-- == tokens and subscriptions ==

import { type Store } from '../db/store';
import { cachedStmt } from '../db/statements';
import type Database from 'better-sqlite3';
import { secret as newSecret, uuid } from '../util/ids';
import { seal, unseal } from '../secrets/at-rest';

/** Every webhook event a shop can receive; an endpoint's filter must name only these. */
export const WEBHOOK_EVENTS = [
  'payment.succeeded',
  'payment.failed',
  'payment.cancelled',
  'payment.expired',
  'payment.refunded',
  'payout.succeeded',
  'payout.failed',
  'subscription.activated',
  'subscription.charge_succeeded',
  'subscription.charge_failed',
  'subscription.past_due',
  'subscription.cancelled',
  'token.activated',
  'token.cancelled',
] as const;

/** Signature version of an endpoint: v2 (timestamped, default) or v1 (legacy). */
export type SignatureVersion = 'v1' | 'v2';

/** A webhook endpoint row (secrets live in their own table). */
export interface Endpoint {
  id: string;
  shop_id: string;
  url: string;
  events: string;
  signature: SignatureVersion;
  disabled_at: number | null;
  disabled_reason: string | null;
  created_at: number;
}

/** Longest overlap a rotation may keep the old secret valid for. */
export const MAX_OVERLAP_HOURS = 24 * 30;

/** Check an endpoint URL: an absolute http(s) URL without credentials; throws a one-line error. */
export function checkEndpointUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`cannot use webhook URL "${url}": not an absolute URL`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new Error(`cannot use webhook URL "${url}": scheme must be https (or http for test mode)`);
  if (u.username || u.password) throw new Error(`cannot use webhook URL "${url}": credentials in the URL are not allowed`);
  if (url.length > 2000) throw new Error(`cannot use webhook URL "${url.slice(0, 64)}…": longer than 2000 characters`);
  return u.toString();
}

/** Parse an event filter (comma list); empty means all events. */
export function parseEventFilter(text: string | undefined): string[] {
  const list = (text ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  for (const e of list) {
    if (!(WEBHOOK_EVENTS as readonly string[]).includes(e)) {
      throw new Error(`cannot use event filter "${e}": not a webhook event; known: ${WEBHOOK_EVENTS.join(', ')}`);
    }
  }
  return [...new Set(list)];
}

/** Add an endpoint to a shop; its first secret is returned once. */
export function addEndpoint(
  store: Store,
  input: { shopId: string; url: string; events?: string; signature?: string },
  now: number,
): { endpoint: Endpoint; secret: string } {
  const shop = store.stmt('SELECT id FROM shops WHERE id = ?').get(input.shopId);
  if (!shop) throw new Error(`cannot add webhook endpoint: shop "${input.shopId}" not found`);
  const signature = input.signature ?? 'v2';
  if (signature !== 'v1' && signature !== 'v2') throw new Error(`cannot add webhook endpoint: --signature must be v1 or v2, got "${signature}"`);
  const endpoint: Endpoint = {
    id: uuid(),
    shop_id: input.shopId,
    url: checkEndpointUrl(input.url),
    events: parseEventFilter(input.events).join(','),
    signature,
    disabled_at: null,
    disabled_reason: null,
    created_at: now,
  };
  const secret = newSecret('whs_');
  store.tx(({ db }) => {
    cachedStmt(db, `INSERT INTO webhook_endpoints (id, shop_id, url, events, signature, created_at) VALUES (?, ?, ?, ?, ?, ?)`).run(endpoint.id, endpoint.shop_id, endpoint.url, endpoint.events, endpoint.signature, now);
    cachedStmt(db, 'INSERT INTO webhook_secrets (endpoint_id, secret, created_at) VALUES (?, ?, ?)').run(endpoint.id, seal(db, secret, `webhook_secrets:${endpoint.id}`), now);
  });
  return { endpoint, secret };
}

/** A shop's endpoints, oldest first, disabled ones included. */
export function listEndpoints(store: Store, shopId: string): Endpoint[] {
  return store.stmt('SELECT * FROM webhook_endpoints WHERE shop_id = ? ORDER BY created_at, id').all(shopId) as Endpoint[];
}

/** One endpoint by id. */
export function getEndpoint(db: Database.Database, id: string): Endpoint | undefined {
  return cachedStmt(db, 'SELECT * FROM webhook_endpoints WHERE id = ?').get(id) as Endpoint | undefined;
}

/** Delete an endpoint and its secrets; its pending deliveries end as failed with a reason. */
export function deleteEndpoint(store: Store, id: string): void {
  store.tx(({ db }) => {
    if (!getEndpoint(db, id)) throw new Error(`cannot delete webhook endpoint "${id}": not found`);
    cachedStmt(db, 'DELETE FROM webhook_endpoints WHERE id = ?').run(id);
    cachedStmt(db, `UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL WHERE endpoint_id = ? AND state = 'pending'`).run(id);
  });
}

/**
 * Rotate an endpoint's secret. Without overlap every older secret stops at once; with `overlap_h` hours
 * the secrets valid now stay valid until then, and the header carries one signature per valid secret.
 */
export function rotateSecret(store: Store, id: string, overlap_h: number, now: number): string {
  if (!(overlap_h >= 0 && overlap_h <= MAX_OVERLAP_HOURS)) {
    throw new Error(`cannot rotate webhook secret: --overlap must be 0..${MAX_OVERLAP_HOURS} hours, got "${overlap_h}"`);
  }
  const secret = newSecret('whs_');
  store.tx(({ db }) => {
    if (!getEndpoint(db, id)) throw new Error(`cannot rotate webhook secret of endpoint "${id}": not found`);
    const until = now + Math.round(overlap_h * 3_600_000);
    if (overlap_h === 0) {
      cachedStmt(db, 'DELETE FROM webhook_secrets WHERE endpoint_id = ?').run(id);
    } else {
      cachedStmt(db, 'DELETE FROM webhook_secrets WHERE endpoint_id = ? AND expires_at IS NOT NULL AND expires_at <= ?').run(id, now);
      cachedStmt(db, 'UPDATE webhook_secrets SET expires_at = MIN(COALESCE(expires_at, ?), ?) WHERE endpoint_id = ?').run(until, until, id);
    }
    cachedStmt(db, 'INSERT INTO webhook_secrets (endpoint_id, secret, created_at) VALUES (?, ?, ?)').run(id, seal(db, secret, `webhook_secrets:${id}`), now);
  });
  return secret;
}

/** The secrets of an endpoint valid at real time `now`, newest first. */
export function validSecrets(db: Database.Database, endpointId: string, now: number): string[] {
  const rows = cachedStmt(db, 'SELECT secret FROM webhook_secrets WHERE endpoint_id = ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY id DESC')
    .all(endpointId, now) as Array<{ secret: string }>;
  return rows.map((r) => unseal(db, r.secret, `webhook_secrets:${endpointId}`));
}

/** Endpoints of a shop that receive `event` now: enabled, and the filter is empty or names it. */
export function matchingEndpoints(db: Database.Database, shopId: string, event: string): Endpoint[] {
  const rows = cachedStmt(db, 'SELECT * FROM webhook_endpoints WHERE shop_id = ? AND disabled_at IS NULL ORDER BY created_at, id').all(shopId) as Endpoint[];
  return rows.filter((e) => e.events === '' || e.events.split(',').includes(event));
}

/** Disable an endpoint (the receiver answered 410 Gone); it stays listed with the reason. */
export function disableEndpoint(db: Database.Database, id: string, reason: string, now: number): boolean {
  return cachedStmt(db, 'UPDATE webhook_endpoints SET disabled_at = ?, disabled_reason = ? WHERE id = ? AND disabled_at IS NULL').run(now, reason, id).changes > 0;
}

/**
 * How a payment's own webhook_url is signed: with the shop's oldest enabled endpoint (its version and
 * valid secrets), else v2 with the shop's fallback secret.
 */
export function paymentUrlSigning(db: Database.Database, shopId: string, now: number): { signature: SignatureVersion; secrets: string[] } {
  const oldest = cachedStmt(db, 'SELECT id, signature FROM webhook_endpoints WHERE shop_id = ? AND disabled_at IS NULL ORDER BY created_at, id LIMIT 1')
    .get(shopId) as { id: string; signature: SignatureVersion } | undefined;
  if (oldest) {
    const secrets = validSecrets(db, oldest.id, now);
    if (secrets.length > 0) return { signature: oldest.signature, secrets };
  }
  const shop = cachedStmt(db, 'SELECT webhook_secret FROM shops WHERE id = ?').get(shopId) as { webhook_secret: string } | undefined;
  return { signature: 'v2', secrets: shop ? [unseal(db, shop.webhook_secret, `shops.webhook_secret:${shopId}`)] : [] };
}

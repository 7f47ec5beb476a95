import type { Reader, Store, Tx } from '../../platform/storage/store';
import { secret as newSecret, uuid, WEBHOOK_SECRET_RE } from '../../platform/util/ids';
import { seal, unseal } from '../../platform/secrets/at-rest';
import { allowListOf, literalRefusal, TEST_MODE_PERMITS } from './url-safety';
import { urlControlChar } from '../../platform/http/body';

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

/** Reads that also unseal secrets: a Reader that knows its database's path (the Store). */
export type SecretReader = Reader & Pick<Store, 'path'>;

/** Longest overlap a rotation may keep the old secret valid for. */
export const MAX_OVERLAP_HOURS = 24 * 30;

/**
 * Check an endpoint URL: an absolute http(s) URL without credentials, whose host, when it is an IP address, is
 * one webhooks may reach: loopback (test mode's developer receiver) or public, or in the operator's ranges
 * (`allow`, --webhook-allow). A host name is checked at each delivery. Throws a one-line error.
 */
export function checkEndpointUrl(url: string, allow: readonly string[] = []): string {
  const control = urlControlChar(url);
  if (control) throw new Error(`cannot use webhook URL ${JSON.stringify(url.slice(0, 64))}: it holds a control character written raw (${control}); percent-encode it`);
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`cannot use webhook URL "${url}": not an absolute URL`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new Error(`cannot use webhook URL "${url}": scheme must be https (or http for test mode)`);
  if (u.username || u.password) throw new Error(`cannot use webhook URL "${url}": credentials in the URL are not allowed`);
  if (url.length > 2000) throw new Error(`cannot use webhook URL "${url.slice(0, 64)}…": longer than 2000 characters`);
  const why = literalRefusal(u, allowListOf(allow), TEST_MODE_PERMITS);
  if (why) throw new Error(`cannot use webhook URL "${url}": webhooks never reach the ${why} (an operator opens a range with --webhook-allow)`);
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

/**
 * Add an endpoint to a shop; its first secret is returned once. `allow` is the operator's --webhook-allow;
 * `secret` is one the operator fixed (serve --webhook-secret), else a new one is made.
 */
export async function addEndpoint(
  store: Store,
  input: { shopId: string; url: string; events?: string; signature?: string; allow?: readonly string[]; secret?: string },
  now: number,
): Promise<{ endpoint: Endpoint; secret: string }> {
  if (input.secret !== undefined && !WEBHOOK_SECRET_RE.test(input.secret)) {
    throw new Error('cannot add webhook endpoint: a webhook secret is whs_ followed by 16 to 200 letters, digits, _ or -');
  }
  const shop = await store.get('SELECT id FROM shops WHERE id = ?', input.shopId);
  if (!shop) throw new Error(`cannot add webhook endpoint: shop "${input.shopId}" not found`);
  const signature = input.signature ?? 'v2';
  if (signature !== 'v1' && signature !== 'v2') throw new Error(`cannot add webhook endpoint: --signature must be v1 or v2, got "${signature}"`);
  const endpoint: Endpoint = {
    id: uuid(),
    shop_id: input.shopId,
    url: checkEndpointUrl(input.url, input.allow),
    events: parseEventFilter(input.events).join(','),
    signature,
    disabled_at: null,
    disabled_reason: null,
    created_at: now,
  };
  const secret = input.secret ?? newSecret('whs_');
  await store.tx(async (tx) => {
    await tx.run(`INSERT INTO webhook_endpoints (id, shop_id, url, events, signature, created_at) VALUES (?, ?, ?, ?, ?, ?)`, endpoint.id, endpoint.shop_id, endpoint.url, endpoint.events, endpoint.signature, now);
    await tx.run('INSERT INTO webhook_secrets (endpoint_id, secret, created_at) VALUES (?, ?, ?)', endpoint.id, seal(store.path, secret, `webhook_secrets:${endpoint.id}`), now);
  });
  return { endpoint, secret };
}

/** A shop's endpoints, oldest first, disabled ones included. */
export function listEndpoints(q: Reader, shopId: string): Promise<Endpoint[]> {
  return q.all<Endpoint>('SELECT * FROM webhook_endpoints WHERE shop_id = ? ORDER BY created_at, id', shopId);
}

/** One endpoint by id. */
export function getEndpoint(q: Reader, id: string): Promise<Endpoint | undefined> {
  return q.get<Endpoint>('SELECT * FROM webhook_endpoints WHERE id = ?', id);
}

/** Delete an endpoint and its secrets; its pending deliveries end as failed with a reason. */
export async function deleteEndpoint(store: Store, id: string): Promise<void> {
  await store.tx(async (tx) => {
    if (!(await getEndpoint(tx, id))) throw new Error(`cannot delete webhook endpoint "${id}": not found`);
    await tx.run('DELETE FROM webhook_endpoints WHERE id = ?', id);
    await tx.run(`UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL WHERE endpoint_id = ? AND state = 'pending'`, id);
  });
}

/**
 * Rotate an endpoint's secret. Without overlap every older secret stops at once; with `overlap_h` hours
 * the secrets valid now stay valid until then, and the header carries one signature per valid secret.
 */
export async function rotateSecret(store: Store, id: string, overlap_h: number, now: number): Promise<string> {
  if (!(overlap_h >= 0 && overlap_h <= MAX_OVERLAP_HOURS)) {
    throw new Error(`cannot rotate webhook secret: --overlap must be 0..${MAX_OVERLAP_HOURS} hours, got "${overlap_h}"`);
  }
  const secret = newSecret('whs_');
  await store.tx(async (tx) => {
    if (!(await getEndpoint(tx, id))) throw new Error(`cannot rotate webhook secret of endpoint "${id}": not found`);
    const until = now + Math.round(overlap_h * 3_600_000);
    if (overlap_h === 0) {
      await tx.run('DELETE FROM webhook_secrets WHERE endpoint_id = ?', id);
    } else {
      await tx.run('DELETE FROM webhook_secrets WHERE endpoint_id = ? AND expires_at IS NOT NULL AND expires_at <= ?', id, now);
      const shorten = {
        sqlite: 'UPDATE webhook_secrets SET expires_at = MIN(COALESCE(expires_at, ?), ?) WHERE endpoint_id = ?',
        postgres: 'UPDATE webhook_secrets SET expires_at = LEAST(COALESCE(expires_at, ?), ?) WHERE endpoint_id = ?',
      };
      await tx.run(shorten[tx.engine], until, until, id);
    }
    await tx.run('INSERT INTO webhook_secrets (endpoint_id, secret, created_at) VALUES (?, ?, ?)', id, seal(store.path, secret, `webhook_secrets:${id}`), now);
  });
  return secret;
}

/** The secrets of an endpoint valid at real time `now`, newest first (unsealed with the master key of `store`'s database). */
export async function validSecrets(store: SecretReader, endpointId: string, now: number): Promise<string[]> {
  const rows = await store.all<{ secret: string }>(
    'SELECT secret FROM webhook_secrets WHERE endpoint_id = ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY id DESC',
    endpointId,
    now,
  );
  return rows.map((r) => unseal(store.path, r.secret, `webhook_secrets:${endpointId}`));
}

/** Endpoints of a shop that receive `event` now: enabled, and the filter is empty or names it. */
export async function matchingEndpoints(q: Reader, shopId: string, event: string): Promise<Endpoint[]> {
  const rows = await q.all<Endpoint>('SELECT * FROM webhook_endpoints WHERE shop_id = ? AND disabled_at IS NULL ORDER BY created_at, id', shopId);
  return rows.filter((e) => e.events === '' || e.events.split(',').includes(event));
}

/** Disable an endpoint (the receiver answered 410 Gone); it stays listed with the reason. */
export async function disableEndpoint(tx: Tx, id: string, reason: string, now: number): Promise<boolean> {
  return (await tx.run('UPDATE webhook_endpoints SET disabled_at = ?, disabled_reason = ? WHERE id = ? AND disabled_at IS NULL', now, reason, id)).changes > 0;
}

/**
 * How a payment's own webhook_url is signed: with the shop's oldest enabled endpoint (its version and
 * valid secrets), else v2 with the shop's fallback secret.
 */
export async function paymentUrlSigning(store: SecretReader, shopId: string, now: number): Promise<{ signature: SignatureVersion; secrets: string[] }> {
  const oldest = await store.get<{ id: string; signature: SignatureVersion }>(
    'SELECT id, signature FROM webhook_endpoints WHERE shop_id = ? AND disabled_at IS NULL ORDER BY created_at, id LIMIT 1',
    shopId,
  );
  if (oldest) {
    const secrets = await validSecrets(store, oldest.id, now);
    if (secrets.length > 0) return { signature: oldest.signature, secrets };
  }
  const shop = await store.get<{ webhook_secret: string }>('SELECT webhook_secret FROM shops WHERE id = ?', shopId);
  return { signature: 'v2', secrets: shop ? [unseal(store.path, shop.webhook_secret, `shops.webhook_secret:${shopId}`)] : [] };
}

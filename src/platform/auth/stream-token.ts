import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Store } from '../storage/store';
import type { Clocks } from '../clock';
import type { Auth, Ctx, Reply } from '../http/types';
import { ApiError } from '../http/errors';
import { authOfKeyId } from './authenticate';
import { loadMasterKey } from '../secrets/at-rest';

/**
 * Stream tokens let a browser's EventSource (no Authorization header) open GET /v1/public/events: the merchant's
 * server asks for one with its key and hands the page a URL holding the token, never the key. A token names its
 * key and an expiry, signed with HMAC-SHA256; it opens that key's stream only, is refused once the key is revoked
 * or the expiry passed. On SQLite the secret lives only in memory (a restart voids every token); a PostgreSQL
 * cluster's nodes derive theirs from the shared master key, so a token holds on every node and across restarts.
 */

/** Seconds a token can open the stream: long enough to pass to a page, short enough that a leaked one soon dies. */
export const STREAM_TOKEN_TTL_S = 300;

const TOKEN_RE = /^est_([A-Za-z0-9_-]{1,200})\.([A-Za-z0-9_-]{43})$/;
const PAYLOAD_RE = /^([0-9a-f-]{36})\.(\d{1,12})$/;

/** One secret per store, made at first use. */
const secrets = new WeakMap<Store, Buffer>();

function mac(store: Store, payload: string): Buffer {
  let secret = secrets.get(store);
  if (!secret) {
    secret = store.engine === 'postgres' ? createHmac('sha256', loadMasterKey(store.path)).update('kopek stream token secret v1').digest() : randomBytes(32);
    secrets.set(store, secret);
  }
  return createHmac('sha256', secret).update(`kopek stream token v1.${payload}`).digest();
}

/** The Auth of the key a token was issued with; 401 when the token is malformed, forged, expired or its key revoked. */
export async function authenticateStreamToken(store: Store, token: string, nowMs: number): Promise<Auth> {
  const m = TOKEN_RE.exec(token);
  if (!m) throw new ApiError(401, 'unauthorized', 'Cannot authenticate: the stream token is malformed');
  const payload = Buffer.from(m[1], 'base64url').toString('utf8');
  const p = PAYLOAD_RE.exec(payload);
  // The signature's text as issued, compared as text: its last character has two bits base64url decoding ignores,
  // so comparing decoded bytes would take four spellings of one signature.
  const given = Buffer.from(m[2], 'latin1');
  const expected = Buffer.from(mac(store, payload).toString('base64url'), 'latin1');
  if (!p || given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new ApiError(401, 'unauthorized', 'Cannot authenticate: the stream token is not valid here (forged, or issued before the server restarted)');
  }
  const expiresAtS = Number(p[2]);
  if (nowMs >= expiresAtS * 1000) {
    throw new ApiError(401, 'unauthorized', `Cannot authenticate: the stream token expired at ${new Date(expiresAtS * 1000).toISOString()}; ask for a new one`);
  }
  const auth = await authOfKeyId(store, p[1]);
  if (!auth) throw new ApiError(401, 'unauthorized', 'Cannot authenticate: the key of the stream token is unknown or revoked');
  return auth;
}

/** What issuing a token reads: the store (whose secret signs it), real time, and the API's address for the URL. */
export interface StreamTokenServices {
  readonly store: Store;
  readonly clocks: Pick<Clocks, 'real'>;
  readonly baseUrl: string;
}

/** POST /v1/public/events/token: a stream token of the calling key and the stream URL that carries it. */
export function createStreamToken(ctx: Ctx<StreamTokenServices>): Reply {
  const expiresAtS = Math.floor(ctx.app.clocks.real() / 1000) + STREAM_TOKEN_TTL_S;
  const payload = `${ctx.auth!.keyId}.${expiresAtS}`;
  const signature = mac(ctx.app.store, payload).toString('base64url');
  const token = `est_${Buffer.from(payload).toString('base64url')}.${signature}`;
  const stream_url = `${ctx.app.baseUrl}/v1/public/events?token=${token}`;
  return { status: 201, body: { token, expires_at: new Date(expiresAtS * 1000).toISOString(), stream_url } };
}

import type { Tx } from '../db/store';
import type { Ctx, Reply } from '../http/types';
import { ApiError } from '../http/errors';
import { createHash } from 'node:crypto';
import { decodeRecord, encodeRecord, objectIdOf } from './idempotency-record';
import { cardFingerprint } from '../secrets/at-rest';

/** Longest accepted Idempotency-Key. */
export const IDEMPOTENCY_KEY_MAX = 64;

/** Body fields that hold a full card number: they enter the fingerprint as a keyed hash (see canonical). */
const CARD_FIELDS = new Set(['card_pan']);

/**
 * JSON with object keys sorted, so that two bodies equal as values hash alike. A card number enters it as
 * its keyed fingerprint (cardFingerprint): the whole number counts, so two cards with the same last four
 * digits are two requests, and a plain hash of it, reversible by trying the few million numbers a known
 * BIN and mask leave, is never stored.
 */
function canonical(value: unknown, pan: (v: string) => string): string {
  if (Array.isArray(value)) return '[' + value.map((v) => canonical(v, pan)).join(',') + ']';
  if (value && typeof value === 'object') {
    const keys = Object.keys(value as object).sort();
    return (
      '{' +
      keys
        .map((k) => {
          const v = (value as Record<string, unknown>)[k];
          const safe = CARD_FIELDS.has(k) && typeof v === 'string' ? `pan:${pan(v)}` : v;
          return JSON.stringify(k) + ':' + canonical(safe, pan);
        })
        .join(',') +
      '}'
    );
  }
  return JSON.stringify(value) ?? 'null';
}

/** The Idempotency-Key header of a request, validated; undefined when absent. */
export function idempotencyKey(ctx: Ctx): string | undefined {
  const raw = ctx.req.headers['idempotency-key'];
  if (raw === undefined) return undefined;
  const key = Array.isArray(raw) ? raw[0] : raw;
  if (key.length === 0) throw new ApiError(400, 'bad_request', 'Idempotency-Key must not be empty', 'Idempotency-Key');
  if (key.length > IDEMPOTENCY_KEY_MAX) {
    throw new ApiError(400, 'bad_request', `Idempotency-Key must be at most ${IDEMPOTENCY_KEY_MAX} characters, got ${key.length}`, 'Idempotency-Key');
  }
  return key;
}

/**
 * Run a create in one group-committed transaction under the request's Idempotency-Key, if any: a replay
 * of the same request answers 200 with the stored body and `"idempotent": true`; the same key with a
 * different request is 409 idempotent_conflict. The record and the created object commit together.
 * `create` returns the status and body of the first answer; `replay` may adjust a stored body (refresh it).
 */
export async function idempotentCreate(
  ctx: Ctx,
  create: (tx: Tx) => { status: number; body: Record<string, unknown> },
  replay?: (tx: Tx, stored: Record<string, unknown>) => Record<string, unknown>,
): Promise<Reply> {
  const auth = ctx.auth!;
  const key = idempotencyKey(ctx);
  // The shop and mode are part of the request: another shop of the same merchant reusing the key gets a
  // conflict, never a replay of an object it must not see.
  const hash =
    key === undefined
      ? null
      : createHash('sha256')
          .update(`${auth.shopId} ${auth.mode} ${ctx.method} ${ctx.route} ${JSON.stringify(ctx.params)}\n${canonical(ctx.body ?? null, (v) => cardFingerprint(ctx.app.store.db, v))}`)
          .digest();
  // The reply is the body's result alone, so it waits only for its own commit to be on disk.
  ctx.seen = {};
  return ctx.app.store.write((tx) => {
    if (key !== undefined) {
      const prior = tx
        .stmt('SELECT shop_id, request_hash, object_id, response FROM idempotency_keys WHERE merchant_id = ? AND mode = ? AND key = ?')
        .get(auth.merchantId, auth.mode, key) as { shop_id: string; request_hash: Buffer; object_id: string | null; response: Buffer } | undefined;
      if (prior) {
        if (!hash!.equals(prior.request_hash)) {
          throw new ApiError(409, 'idempotent_conflict', `Cannot reuse Idempotency-Key "${key}": it was used with a different request`);
        }
        const text = decodeRecord(prior.response, { objectId: prior.object_id, shopId: prior.shop_id, merchantId: auth.merchantId });
        let body = JSON.parse(text) as Record<string, unknown>;
        if (replay) body = replay(tx, body);
        return { status: 200, body: { ...body, idempotent: true } };
      }
    }
    const out = create(tx);
    if (key !== undefined) {
      // Only what a replay needs, compactly: the fingerprint as 32 bytes, the answer with its ids as markers
      // (a whole JSON answer took an overflow page of its own, 4.7 KB a key).
      const json = JSON.stringify(out.body);
      const objectId = objectIdOf(json);
      tx
        .stmt('INSERT INTO idempotency_keys (merchant_id, key, shop_id, mode, request_hash, status, object_id, response, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
        .run(
          auth.merchantId,
          key,
          auth.shopId,
          auth.mode,
          hash,
          out.status,
          objectId,
          encodeRecord(json, { objectId, shopId: auth.shopId, merchantId: auth.merchantId }),
          ctx.app.clocks.real(),
        );
    }
    return { status: out.status, body: out.body };
  }, ctx.seen);
}

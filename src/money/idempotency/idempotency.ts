import type { Store, Tx } from '../../platform/storage/store';
import type { Config } from '../../platform/config';
import type { Clocks } from '../../platform/clock';
import type { Ctx, Reply } from '../../platform/http/types';
import { ApiError } from '../../platform/http/errors';
import { hash } from 'node:crypto';
import { cardFingerprint } from '../../platform/secrets/at-rest';

export const IDEMPOTENCY_KEY_MAX = 64;

const CARD_FIELD = 'card_pan';

/**
 * JSON with sorted keys. A card number enters as its keyed fingerprint: the whole number counts, and a plain hash
 * (reversible from a known BIN and mask) is never stored.
 */
function canonical(value: unknown, pan: (v: string) => string): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${Array.from(value, (v) => canonical(v, pan)).join(',')}]`;
  const keys = Object.keys(value).sort();
  let s = '{';
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    const v = (value as Record<string, unknown>)[k];
    const safe = k === CARD_FIELD && typeof v === 'string' ? `pan:${pan(v)}` : v;
    s += (i > 0 ? ',' : '') + JSON.stringify(k) + ':' + canonical(safe, pan);
  }
  return s + '}';
}

export interface IdempotencyServices {
  readonly store: Pick<Store, 'path' | 'write'>;
  readonly clocks: Pick<Clocks, 'real'>;
  readonly config: Pick<Config, 'retainIdempotencyHours'>;
}

/** Kept as hex: 128 bits tell two requests under one key apart. */
export const FINGERPRINT_BYTES = 16;

/**
 * Under the request's Idempotency-Key, if any: a replay answers 200 with the stored body (`replay` may refresh it)
 * and `"idempotent": true`, a different request 409. The key is claimed in the create's own transaction, under
 * UNIQUE (merchant, mode, key); a record past --retain-idempotency-hours is gone for its key, swept or not.
 */
export async function idempotentCreate(
  ctx: Ctx<IdempotencyServices>,
  create: (tx: Tx) => Promise<{ status: number; body: Record<string, unknown> }>,
  replay?: (tx: Tx, stored: Record<string, unknown>) => Promise<Record<string, unknown>>,
): Promise<Reply> {
  const auth = ctx.auth!;
  const raw = ctx.req.headers['idempotency-key'];
  const key = Array.isArray(raw) ? raw[0] : raw;
  if (key === '') throw new ApiError(400, 'bad_request', 'Idempotency-Key must not be empty', 'Idempotency-Key');
  if (key !== undefined && key.length > IDEMPOTENCY_KEY_MAX) {
    throw new ApiError(400, 'bad_request', `Idempotency-Key must be at most ${IDEMPOTENCY_KEY_MAX} characters, got ${key.length}`, 'Idempotency-Key');
  }
  // Another shop of the merchant reusing the key gets a conflict, never another shop's object.
  const request = (): string => `${auth.shopId} ${auth.mode} ${ctx.method} ${ctx.route} ${JSON.stringify(ctx.params)}\n${canonical(ctx.body ?? null, (v) => cardFingerprint(ctx.app.store.path, v))}`;
  const fingerprint = key === undefined ? null : hash('sha256', request(), 'hex').slice(0, 2 * FINGERPRINT_BYTES);
  return ctx.app.store.write(async (tx) => {
    if (key === undefined) return create(tx);
    const prior = await tx.get<{ seq: number; fingerprint: string; answer: string; created_at: number }>(
      'SELECT seq, fingerprint, answer, created_at FROM idempotency_keys WHERE merchant_id = ? AND mode = ? AND key = ?',
      auth.merchantId,
      auth.mode,
      key,
    );
    if (prior) {
      if (prior.created_at >= ctx.app.clocks.real() - ctx.app.config.retainIdempotencyHours * 3_600_000) {
        if (prior.fingerprint !== fingerprint) {
          throw new ApiError(409, 'idempotent_conflict', `Cannot reuse Idempotency-Key "${key}": it was used with a different request`);
        }
        let body = JSON.parse(prior.answer) as Record<string, unknown>;
        if (replay) body = await replay(tx, body);
        return { status: 200, body: { ...body, idempotent: true } };
      }
      // Past its retention: the key is free again.
      await tx.run('DELETE FROM idempotency_keys WHERE seq = ?', prior.seq);
    }
    const out = await create(tx);
    // The text first sent is the text kept, so a replay is the same bytes.
    const json = JSON.stringify(out.body);
    await tx.run(
      'INSERT INTO idempotency_keys (merchant_id, mode, key, fingerprint, answer, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      auth.merchantId,
      auth.mode,
      key,
      fingerprint,
      json,
      ctx.app.clocks.real(),
    );
    return { status: out.status, body: out.body, json };
  });
}

/** Of the `limit` oldest records, those before `cutoff`, up to the first kept; replays never depend on it (idempotentCreate checks the age). */
export async function purgeIdempotencySlice(tx: Tx, cutoff: number, limit: number): Promise<{ deleted: number; more: boolean }> {
  const rows = await tx.all<{ seq: number; created_at: number }>('SELECT seq, created_at FROM idempotency_keys ORDER BY seq LIMIT ?', limit);
  let deleted = 0;
  while (deleted < rows.length && rows[deleted].created_at < cutoff) deleted++;
  if (deleted > 0) await tx.run('DELETE FROM idempotency_keys WHERE seq <= ?', rows[deleted - 1].seq);
  return { deleted, more: deleted === limit };
}

import type { Tx } from '../db/store';
import type { Ctx, Reply } from '../http/types';
import { ApiError } from '../http/errors';
import { hash } from 'node:crypto';
import { decodeRecord, encodeRecord, FINGERPRINT_BYTES, merchantKey, objectIdOf } from './idempotency-record';
import { cardFingerprint } from '../secrets/at-rest';
import { keyHash, type KeyIndex } from './key-index';

/** Longest accepted Idempotency-Key. */
export const IDEMPOTENCY_KEY_MAX = 64;

/** The body field that holds a full card number: it enters the fingerprint as a keyed hash (see canonical). */
const CARD_FIELD = 'card_pan';

/** Object keys as JSON strings, kept for the few names requests use (bounded: a body's names are the client's). */
const QUOTED_KEYS = new Map<string, string>();
const QUOTED_KEYS_MAX = 1_000;

function quotedKey(k: string): string {
  let q = QUOTED_KEYS.get(k);
  if (q === undefined) {
    q = JSON.stringify(k);
    if (QUOTED_KEYS.size < QUOTED_KEYS_MAX) QUOTED_KEYS.set(k, q);
  }
  return q;
}

/**
 * JSON with object keys sorted, so that two bodies equal as values hash alike. A card number enters it as
 * its keyed fingerprint (cardFingerprint): the whole number counts, so two cards with the same last four
 * digits are two requests, and a plain hash of it, reversible by trying the few million numbers a known
 * BIN and mask leave, is never stored.
 */
function canonical(value: unknown, pan: (v: string) => string): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let s = '[';
    for (let i = 0; i < value.length; i++) s += (i > 0 ? ',' : '') + canonical(value[i], pan);
    return s + ']';
  }
  const keys = Object.keys(value);
  for (let i = 1; i < keys.length; i++) {
    if (keys[i - 1] > keys[i]) {
      keys.sort();
      break;
    }
  }
  let s = '{';
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    const v = (value as Record<string, unknown>)[k];
    const safe = k === CARD_FIELD && typeof v === 'string' ? `pan:${pan(v)}` : v;
    s += (i > 0 ? ',' : '') + quotedKey(k) + ':' + canonical(safe, pan);
  }
  return s + '}';
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

/** Tables whose rows keep the first answer of the request that created them (their `answer` column). */
export type AnswerTable = 'payments' | 'refunds' | 'payouts' | 'tokens' | 'subscriptions';

/** The row a create made that keeps its answer: the table, the row's seq and the object's id. */
export interface AnswerHolder {
  table: AnswerTable;
  seq: number;
  id: string;
}

/** What a create returns: the status and body of its first answer, and the row that keeps it (none for a batch). */
export interface CreateResult {
  status: number;
  body: Record<string, unknown>;
  holder?: AnswerHolder;
  /** The holder's row was written with the answer `keep` made of this very body (no update needed). */
  kept?: boolean;
}

/**
 * Given to a keyed create: the stored form of the answer `body` about object `objectId`, for the create to
 * write with its row instead of having it added by an update after.
 */
export type KeepAnswer = (body: Record<string, unknown>, objectId: string) => Buffer;

interface KeyRecord {
  seq: number;
  merchant_id: Buffer;
  mode: string;
  key: string;
  key_hash: number;
  request_hash: Buffer;
  holder: AnswerTable | null;
  holder_seq: number | null;
  answer: Buffer | null;
  object_id: string | null;
  created_at: number;
}

/** The record of this merchant, mode and key, found through the index (each candidate read and compared). */
async function findRecord(tx: Tx, index: KeyIndex, hash: number, merchant: Buffer, mode: string, key: string): Promise<KeyRecord | undefined> {
  // A copy: the index may change while a read is awaited (an earlier commit's hook forgetting a deleted record).
  for (const seq of [...index.candidates(hash)]) {
    const rec = await tx.get<KeyRecord>(
      'SELECT seq, merchant_id, mode, key, key_hash, request_hash, holder, holder_seq, answer, object_id, created_at FROM idempotency_keys WHERE seq = ?',
      seq,
    );
    if (rec && rec.key === key && rec.mode === mode && rec.merchant_id.equals(merchant)) return rec;
  }
  return undefined;
}

/**
 * The record's stored answer as JSON text, or undefined when no row keeps it any more. Called once the request's
 * fingerprint matched the record's, which holds the shop: the caller's shop is the record's.
 */
async function storedAnswer(tx: Tx, rec: KeyRecord, shopId: string, merchantId: string): Promise<string | undefined> {
  if (rec.holder === null) return decodeRecord(rec.answer!, { objectId: rec.object_id, shopId, merchantId });
  const row = await tx.get<{ id: string; answer: Buffer | null }>(`SELECT id, answer FROM ${rec.holder} WHERE seq = ?`, rec.holder_seq);
  if (!row || row.answer === null) return undefined;
  return decodeRecord(row.answer, { objectId: row.id, shopId, merchantId });
}

/** Forget a record: delete it and clear the answer its holder keeps; the index forgets it once that is committed. */
async function dropRecord(tx: Tx, index: KeyIndex, rec: Pick<KeyRecord, 'seq' | 'key_hash' | 'holder' | 'holder_seq'>): Promise<void> {
  await tx.run('DELETE FROM idempotency_keys WHERE seq = ?', rec.seq);
  if (rec.holder !== null) await tx.run(`UPDATE ${rec.holder} SET answer = NULL WHERE seq = ?`, rec.holder_seq);
  tx.afterCommit(() => index.remove(rec.key_hash, rec.seq));
}

/**
 * Run a create in one group-committed transaction under the request's Idempotency-Key, if any: a replay
 * of the same request answers 200 with the stored body and `"idempotent": true`; the same key with a
 * different request is 409 idempotent_conflict. The record and the created object commit together.
 * `create` returns the status and body of the first answer and the row that keeps it; `replay` may adjust
 * a stored body (refresh it). A record older than the retention (--retain-idempotency-hours) is gone: its key
 * makes a new object, whether or not the retention sweep has deleted it yet.
 */
export async function idempotentCreate(
  ctx: Ctx,
  create: (tx: Tx, keep?: KeepAnswer) => Promise<CreateResult>,
  replay?: (tx: Tx, stored: Record<string, unknown>) => Promise<Record<string, unknown>>,
): Promise<Reply> {
  const auth = ctx.auth!;
  const key = idempotencyKey(ctx);
  // The shop and mode are part of the request: another shop of the same merchant reusing the key gets a
  // conflict, never a replay of an object it must not see. Hex text: a digest as a string is made without the
  // Buffer a binary one needs; the record keeps its first FINGERPRINT_BYTES (unhex in the INSERT).
  const fingerprint =
    key === undefined
      ? null
      : hash('sha256', `${auth.shopId} ${auth.mode} ${ctx.method} ${ctx.route} ${JSON.stringify(ctx.params)}\n${canonical(ctx.body ?? null, (v) => cardFingerprint(ctx.app.store.path, v))}`, 'hex').slice(
          0,
          2 * FINGERPRINT_BYTES,
        );
  const merchant = key === undefined ? null : merchantKey(auth.merchantId);
  const index = ctx.app.keyIndex;
  const slot = key === undefined ? 0 : keyHash(merchant!, auth.mode, key);
  // Right after a start, keyed creates wait until the index holds every record.
  const loading = key === undefined ? null : index.ready();
  if (loading) await loading;
  // The reply is the body's result alone, so it waits only for its own commit to be on disk.
  ctx.seen = {};
  return ctx.app.store.write(async (tx) => {
    if (key !== undefined) {
      const prior = await findRecord(tx, index, slot, merchant!, auth.mode, key);
      if (prior) {
        const live = prior.created_at >= ctx.app.clocks.real() - ctx.app.config.retainIdempotencyHours * 3_600_000;
        if (live && prior.request_hash.toString('hex') !== fingerprint) {
          throw new ApiError(409, 'idempotent_conflict', `Cannot reuse Idempotency-Key "${key}": it was used with a different request`);
        }
        const text = live ? await storedAnswer(tx, prior, auth.shopId, auth.merchantId) : undefined;
        if (text !== undefined) {
          let body = JSON.parse(text) as Record<string, unknown>;
          if (replay) body = await replay(tx, body);
          return { status: 200, body: { ...body, idempotent: true } };
        }
        await dropRecord(tx, index, prior);
      }
    }
    if (key === undefined) {
      const out = await create(tx);
      return { status: out.status, body: out.body };
    }
    // Only what a replay needs, compactly: the merchant and the fingerprint as 16 bytes each, the answer with its
    // ids as markers, kept in the created object's row, a page this transaction writes anyway: with the row when
    // the create writes it through `keep`, else by an update. The text is sent as it is.
    const kept: { body?: Record<string, unknown>; id?: string; json?: string } = {};
    const keep: KeepAnswer = (body, id) => {
      kept.body = body;
      kept.id = id;
      kept.json = JSON.stringify(body);
      return encodeRecord(kept.json, { objectId: id, shopId: auth.shopId, merchantId: auth.merchantId });
    };
    const out = await create(tx, keep);
    const h = out.holder;
    let json: string;
    let answer: Buffer | null = null;
    // The id a record without a holder (a batch) names; a holder's row names its own.
    let objectId: string | null = null;
    if (out.kept && h && kept.body === out.body && kept.id === h.id) {
      json = kept.json!;
    } else {
      json = JSON.stringify(out.body);
      objectId = h ? h.id : objectIdOf(json);
      answer = encodeRecord(json, { objectId, shopId: auth.shopId, merchantId: auth.merchantId });
      if (h) await tx.run(`UPDATE ${h.table} SET answer = ? WHERE seq = ?`, answer, h.seq);
    }
    const { lastInsertRowid } = await tx.run(
      'INSERT INTO idempotency_keys (merchant_id, mode, key, key_hash, request_hash, holder, holder_seq, answer, object_id, created_at) VALUES (?, ?, ?, ?, unhex(?), ?, ?, ?, ?, ?)',
      merchant,
      auth.mode,
      key,
      slot,
      fingerprint,
      h ? h.table : null,
      h ? h.seq : null,
      h ? null : answer,
      h ? null : objectId,
      ctx.app.clocks.real(),
    );
    // Before the commit: a later body of this group with the same key finds the record.
    index.add(slot, Number(lastInsertRowid));
    return { status: out.status, body: out.body, json };
  }, ctx.seen);
}

/**
 * One slice of the retention sweep over idempotency records: of the `limit` oldest records, those created before
 * `cutoff` (real time) are deleted and their answers cleared. Records are in the order they were made, so the
 * sweep stops at the first that is still kept; a replay never depends on it (idempotentCreate checks the age itself).
 */
export async function purgeIdempotencySlice(tx: Tx, index: KeyIndex, cutoff: number, limit: number): Promise<{ deleted: number; more: boolean }> {
  const rows = await tx.all<Pick<KeyRecord, 'seq' | 'key_hash' | 'holder' | 'holder_seq' | 'created_at'>>(
    'SELECT seq, key_hash, holder, holder_seq, created_at FROM idempotency_keys ORDER BY seq LIMIT ?',
    limit,
  );
  let deleted = 0;
  for (const r of rows) {
    if (r.created_at >= cutoff) return { deleted, more: false };
    await dropRecord(tx, index, r);
    deleted++;
  }
  return { deleted, more: rows.length === limit };
}

/**
 * The compact form of a stored first answer. A create's answer repeats its object's id (in URLs, in the object)
 * and the shop's and merchant's ids, which the record keeps in columns of their own, and the field names and
 * fixed pieces every answer of its kind has; each is stored as one byte. JSON.stringify never writes a raw byte
 * below 0x20 (it escapes them inside strings and adds no white space), so those bytes can only be markers, and
 * decoding gives back the exact text first sent.
 */

import { isUuid } from '../util/ids';

/** First byte of a record in this form; a record starting with `{` is plain JSON text (written before it). */
const FORMAT_1 = 0x01;
const OBJECT_ID = '\u0002';
const SHOP_ID = '\u0003';
const MERCHANT_ID = '\u0004';

/**
 * Fixed pieces of create answers, each written as the byte 0x05 + its index. Records in the database depend on
 * this list: never change or reorder an entry; a new list needs a new format byte.
 */
const PHRASES = [
  '","merchant_id":"',
  '","shop_id":"',
  '{"payment":{"id":"',
  '","public_id":"P-',
  '","order_id":"',
  '","currency":"RUB","method":"',
  '","status":"pending","expires_at":"',
  '","created_at":"',
  '","metadata":{',
  '"simulator_outcome":"',
  '","simulator_failure_code":"',
  '"}},"payment_url":"',
  '","mode":"test","simulator":{"outcome":"',
  '","failure_code":"',
  '","actions":{"pay_page":"',
  '/v1/test/payments/',
  '/simulate","clock_advance":"',
  '/v1/test/clock/advance"}}}',
  '/pay/',
  '","status":"',
  '","amount":',
  '{"id":"',
  '"payout":{"id":"',
  '","customer_ref":"',
  'http://',
  '.000Z"',
  '":"',
] as const;
const PHRASE_BASE = 0x05;
/**
 * A phrase's marker, found by its length and fourth character (or last, for shorter ones), which tell every
 * phrase of the list apart: an array index, where a map would hash each matched piece of text first.
 */
function slotOf(p: string): number {
  return p.length * 128 + (p.charCodeAt(p.length > 3 ? 3 : p.length - 1) & 127);
}
const MARKER_AT: string[] = [];
for (let i = 0; i < PHRASES.length; i++) {
  const at = slotOf(PHRASES[i]);
  if (MARKER_AT[at] !== undefined) throw new Error(`idempotency-record: phrases ${i} and ${MARKER_AT[at].charCodeAt(0) - PHRASE_BASE} share a slot`);
  MARKER_AT[at] = String.fromCharCode(PHRASE_BASE + i);
}
const markerOf = (p: string): string => MARKER_AT[slotOf(p)];
// One pass each way. At a position the first alternative that matches wins, so longer phrases come first.
const PHRASE_RE = new RegExp(
  [...PHRASES]
    .sort((a, b) => b.length - a.length)
    .map((p) => p.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'))
    .join('|'),
  'g',
);
const MARKER_RE = /[\u0005-\u001f]/g;

/** The ids a record's text refers to by marker. */
export interface RecordIds {
  objectId: string | null;
  shopId: string;
  merchantId: string;
}

/** The id of the object a create answer is about: the first `"id":"…"` of its text, or null (a batch). */
export function objectIdOf(json: string): string | null {
  const at = json.indexOf('"id":"');
  if (at < 0) return null;
  const end = json.indexOf('"', at + 6);
  const id = json.slice(at + 6, end);
  // Too short to be worth a marker, or holding an escape: keep the text as it is.
  return id.length >= 8 && !id.includes('\\') ? id : null;
}

function swap(text: string, from: string, to: string): string {
  return from.length > 0 ? text.replaceAll(from, to) : text;
}

/** The stored form of an answer's JSON text. */
export function encodeRecord(json: string, ids: RecordIds): Buffer {
  let t = json;
  if (ids.objectId) t = swap(t, ids.objectId, OBJECT_ID);
  t = swap(t, ids.shopId, SHOP_ID);
  t = swap(t, ids.merchantId, MERCHANT_ID);
  t = t.replace(PHRASE_RE, markerOf);
  // Nothing to mark: the text as it is, read back as plain JSON.
  if (t.length === json.length) return Buffer.from(json, 'utf8');
  const out = Buffer.allocUnsafe(1 + Buffer.byteLength(t));
  out[0] = FORMAT_1;
  out.write(t, 1, 'utf8');
  return out;
}

/** The JSON text a record holds, byte for byte as first sent. */
export function decodeRecord(stored: Buffer, ids: RecordIds): string {
  if (stored[0] !== FORMAT_1) return stored.toString('utf8');
  let t = stored.toString('utf8', 1);
  t = t.replace(MARKER_RE, (m) => PHRASES[m.charCodeAt(0) - PHRASE_BASE]);
  t = swap(t, MERCHANT_ID, ids.merchantId);
  t = swap(t, SHOP_ID, ids.shopId);
  if (ids.objectId) t = swap(t, OBJECT_ID, ids.objectId);
  return t;
}

/** Bytes of the SHA-256 fingerprint a record keeps: 128 bits tell two requests under one key apart. */
export const FINGERPRINT_BYTES = 16;

/** Merchants whose record key is held (bounded: past it, keys are made afresh). */
const MERCHANT_KEYS = new Map<string, Buffer>();
const MERCHANT_KEYS_MAX = 10_000;

/**
 * The merchant as a record stores it: a merchant id (a UUID, as every merchant is made) as its 16 bytes, where
 * its text took 36 on every record; an id of another form as its UTF-8 text. Records are many to a page of their
 * b-tree, and a smaller record means fewer pages to rewrite when one fills.
 */
export function merchantKey(merchantId: string): Buffer {
  let k = MERCHANT_KEYS.get(merchantId);
  if (k === undefined) {
    k = isUuid(merchantId) ? Buffer.from(merchantId.replaceAll('-', ''), 'hex') : Buffer.from(merchantId, 'utf8');
    if (MERCHANT_KEYS.size >= MERCHANT_KEYS_MAX) MERCHANT_KEYS.clear();
    MERCHANT_KEYS.set(merchantId, k);
  }
  return k;
}

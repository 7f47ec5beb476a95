/**
 * Frozen readers of idempotency records as schema versions 13 to 15 stored them, for the migrations that
 * convert those records (13 → 14, 14 → 15, 15 → 16) and for nothing else. The server no longer writes this
 * form: a record now keeps its first answer as plain JSON text under a UNIQUE key (schema version 16). Never
 * change these functions: the migrations must read what older versions wrote, byte for byte.
 *
 * The compact form: a create's answer repeated its object's id and the shop's and merchant's ids, which the
 * record kept in columns of its own, and the fixed pieces every answer of its kind has; each was stored as one
 * byte below 0x20, which JSON.stringify never writes raw.
 */

/** First byte of a record in the compact form; a record starting with `{` is plain JSON text. */
const FORMAT_1 = 0x01;
const OBJECT_ID = '\u0002';
const SHOP_ID = '\u0003';
const MERCHANT_ID = '\u0004';

/** Fixed pieces of create answers, each stored as the byte 0x05 + its index. */
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
const MARKER_RE = /[\u0005-\u001f]/g;

/** The ids a compact record's text refers to by marker. */
export interface LegacyRecordIds {
  objectId: string | null;
  shopId: string;
  merchantId: string;
}

/** True when a compact record refers to the shop's id by marker (the shop must be known to read it). */
export function namesShop(stored: Buffer): boolean {
  return stored[0] === FORMAT_1 && stored.includes(SHOP_ID.charCodeAt(0), 1);
}

/** The exact JSON text a record of schema versions 13 to 15 stands for. */
export function decodeLegacyRecord(stored: Buffer, ids: LegacyRecordIds): string {
  if (stored[0] !== FORMAT_1) return stored.toString('utf8');
  let t = stored.toString('utf8', 1);
  t = t.replace(MARKER_RE, (m) => PHRASES[m.charCodeAt(0) - PHRASE_BASE]);
  t = t.replaceAll(MERCHANT_ID, ids.merchantId).replaceAll(SHOP_ID, ids.shopId);
  if (ids.objectId) t = t.replaceAll(OBJECT_ID, ids.objectId);
  return t;
}

/** Bytes of the SHA-256 fingerprint records kept from schema version 14 on. */
export const LEGACY_FINGERPRINT_BYTES = 16;

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A merchant id as versions 14 and 15 stored it: a UUID as its 16 bytes, any other id as its UTF-8 text. */
export function legacyMerchantKey(merchantId: string): Buffer {
  return UUID_RE.test(merchantId) ? Buffer.from(merchantId.replaceAll('-', ''), 'hex') : Buffer.from(merchantId, 'utf8');
}

/** The merchant id a stored merchant key stands for (legacyMerchantKey's inverse). */
export function merchantIdOfLegacyKey(key: Buffer): string {
  if (key.length !== 16) return key.toString('utf8');
  const h = key.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** Version 15's 30-bit FNV-1a hash of merchant key, mode and key (its in-memory index was rebuilt from it). */
export function legacyKeyHash(merchant: Buffer, mode: string, key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < merchant.length; i++) h = Math.imul(h ^ merchant[i], 0x01000193);
  h = Math.imul(h ^ (mode === 'live' ? 1 : 0), 0x01000193);
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return (h >>> 2) & 0x3fffffff;
}

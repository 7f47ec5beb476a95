/**
 * The compact form of a stored first answer. A create's answer repeats its object's id (in URLs, in the object)
 * and the shop's and merchant's ids, which the record keeps in columns of their own; they are stored as one
 * byte each. JSON.stringify never writes a raw byte below 0x20 (it escapes them inside strings and adds no
 * white space), so those bytes can only be markers, and decoding gives back the exact text first sent.
 */

/** First byte of a record in this form; a record starting with `{` is plain JSON text (written before it). */
const FORMAT_1 = 0x01;
const OBJECT_ID = '\u0002';
const SHOP_ID = '\u0003';
const MERCHANT_ID = '\u0004';

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
  return from.length > 0 && text.includes(from) ? text.split(from).join(to) : text;
}

/** The stored form of an answer's JSON text. */
export function encodeRecord(json: string, ids: RecordIds): Buffer {
  let t = json;
  if (ids.objectId) t = swap(t, ids.objectId, OBJECT_ID);
  t = swap(t, ids.shopId, SHOP_ID);
  t = swap(t, ids.merchantId, MERCHANT_ID);
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
  t = swap(t, MERCHANT_ID, ids.merchantId);
  t = swap(t, SHOP_ID, ids.shopId);
  if (ids.objectId) t = swap(t, OBJECT_ID, ids.objectId);
  return t;
}

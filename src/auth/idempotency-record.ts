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
/** The phrases' bytes one after another: phrase k is PHRASE_LEN[k] bytes from PHRASE_AT[k]. */
const PHRASE_TEXT = Buffer.from(PHRASES.join(''), 'latin1');
const PHRASE_LEN = Int32Array.from(PHRASES, (p) => p.length);
const PHRASE_AT = Int32Array.from(PHRASES, (_, k) => PHRASES.slice(0, k).join('').length);
/**
 * The phrases to try at a byte, longest first (at a position the longest that matches wins), found by array index
 * where a map would hash a key at each byte of the text. A byte that starts some phrase has a class (START_CLASS, 0
 * for none). By class and the fourth byte, CANDIDATE_AT[(class - 1) * 256 + fourth] .. the next entry bound the
 * run of CANDIDATE_LIST that lists the phrases of four bytes or more with those first and fourth bytes, then the
 * shorter ones of the class; SHORT_AT bounds the run of the shorter ones alone (tried within three bytes of the end).
 * Flat typed arrays: the scan reads them at almost every quote of the text, and they stay few cache lines.
 */
const START_CLASS = new Uint8Array(256);
const { CANDIDATE_AT, SHORT_AT, CANDIDATE_LIST } = (() => {
  const byLength = PHRASES.map((_, k) => k).sort((a, b) => PHRASE_LEN[b] - PHRASE_LEN[a]);
  const classes: number[][] = [];
  for (const k of byLength) {
    const first = PHRASE_TEXT[PHRASE_AT[k]];
    if (START_CLASS[first] !== 0) continue;
    START_CLASS[first] = classes.length + 1;
    classes.push(byLength.filter((q) => PHRASE_TEXT[PHRASE_AT[q]] === first));
  }
  const list: number[] = [];
  const at: number[] = [];
  const shortAt: number[] = [];
  for (const ofClass of classes) {
    const short = ofClass.filter((q) => PHRASE_LEN[q] < 4);
    for (let fourth = 0; fourth < 256; fourth++) {
      at.push(list.length);
      list.push(...ofClass.filter((q) => PHRASE_LEN[q] >= 4 && PHRASE_TEXT[PHRASE_AT[q] + 3] === fourth), ...short);
    }
  }
  at.push(list.length);
  for (const ofClass of classes) {
    shortAt.push(list.length);
    list.push(...ofClass.filter((q) => PHRASE_LEN[q] < 4));
  }
  shortAt.push(list.length);
  return { CANDIDATE_AT: Int32Array.from(at), SHORT_AT: Int32Array.from(shortAt), CANDIDATE_LIST: Uint8Array.from(list) };
})();
/** Bits of SCAN_FLAGS: the byte may start a phrase; it is the first byte of an id of the answer being encoded. */
const STARTS_PHRASE = 1;
const STARTS_ID = 2;
/** By byte: STARTS_PHRASE from START_CLASS, and STARTS_ID set for the ids' first bytes during one encodeRecord. */
const SCAN_FLAGS = START_CLASS.map((c) => (c !== 0 ? STARTS_PHRASE : 0));
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

/** Scratch space of encodeRecord, kept up to SCRATCH_KEPT bytes: the answer's UTF-8 bytes, the record, the ids' bytes. */
const SCRATCH_KEPT = 256 * 1024;
let textBytes = Buffer.allocUnsafe(16 * 1024);
let recordBytes = Buffer.allocUnsafe(16 * 1024 + 1);
let idBytes = Buffer.allocUnsafe(3 * 3 * 64);
const OBJECT_ID_BYTE = OBJECT_ID.charCodeAt(0);
const SHOP_ID_BYTE = SHOP_ID.charCodeAt(0);
const MERCHANT_ID_BYTE = MERCHANT_ID.charCodeAt(0);

/** True when bytes `from`..`from + len` of `p` (the first already matched) are at `at` in the first `n` bytes of `b`. */
function bytesAt(b: Uint8Array, at: number, n: number, p: Uint8Array, from: number, len: number): boolean {
  if (len === 0 || at + len > n) return false;
  for (let j = 1; j < len; j++) if (b[at + j] !== p[from + j]) return false;
  return true;
}

/**
 * The stored form of an answer's JSON text. One pass over its UTF-8 bytes: at each byte the first id that starts
 * there (the object's, the shop's, the merchant's) becomes its marker, else the longest phrase that does. A
 * phrase is ASCII and an id is whole UTF-8 characters, so a match never starts inside a character of several bytes.
 */
export function encodeRecord(json: string, ids: RecordIds): Buffer {
  // UTF-8 takes at most three bytes for each UTF-16 unit.
  const room = json.length * 3;
  let src = textBytes;
  let out = recordBytes;
  if (room > src.length) {
    src = Buffer.allocUnsafe(room);
    out = Buffer.allocUnsafe(room + 1);
    if (room <= SCRATCH_KEPT) [textBytes, recordBytes] = [src, out];
  }
  const idRoom = 3 * ((ids.objectId?.length ?? 0) + ids.shopId.length + ids.merchantId.length);
  if (idRoom > idBytes.length) idBytes = Buffer.allocUnsafe(idRoom);
  const n = src.write(json, 0, 'utf8');
  const len0 = ids.objectId === null ? 0 : idBytes.write(ids.objectId, 0, 'utf8');
  const len1 = idBytes.write(ids.shopId, len0, 'utf8');
  const len2 = idBytes.write(ids.merchantId, len0 + len1, 'utf8');
  const first0 = len0 > 0 ? idBytes[0] : -1;
  const first1 = len1 > 0 ? idBytes[len0] : -1;
  const first2 = len2 > 0 ? idBytes[len0 + len1] : -1;
  // Most bytes start nothing: one lookup tells, and the ids and phrases are tried only at the others.
  if (first0 >= 0) SCAN_FLAGS[first0] |= STARTS_ID;
  if (first1 >= 0) SCAN_FLAGS[first1] |= STARTS_ID;
  if (first2 >= 0) SCAN_FLAGS[first2] |= STARTS_ID;
  let o = 1;
  let i = 0;
  next: while (i < n) {
    const c = src[i];
    const flags = SCAN_FLAGS[c];
    if (flags === 0) {
      out[o++] = c;
      i++;
      continue;
    }
    if ((flags & STARTS_ID) !== 0) {
      if (c === first0 && bytesAt(src, i, n, idBytes, 0, len0)) {
        out[o++] = OBJECT_ID_BYTE;
        i += len0;
        continue;
      }
      if (c === first1 && bytesAt(src, i, n, idBytes, len0, len1)) {
        out[o++] = SHOP_ID_BYTE;
        i += len1;
        continue;
      }
      if (c === first2 && bytesAt(src, i, n, idBytes, len0 + len1, len2)) {
        out[o++] = MERCHANT_ID_BYTE;
        i += len2;
        continue;
      }
    }
    if ((flags & STARTS_PHRASE) !== 0) {
      const cls = START_CLASS[c] - 1;
      let t: number;
      let end: number;
      if (i + 3 < n) {
        const slot = cls * 256 + src[i + 3];
        t = CANDIDATE_AT[slot];
        end = CANDIDATE_AT[slot + 1];
      } else {
        t = SHORT_AT[cls];
        end = SHORT_AT[cls + 1];
      }
      for (; t < end; t++) {
        const k = CANDIDATE_LIST[t];
        if (bytesAt(src, i, n, PHRASE_TEXT, PHRASE_AT[k], PHRASE_LEN[k])) {
          out[o++] = PHRASE_BASE + k;
          i += PHRASE_LEN[k];
          continue next;
        }
      }
    }
    out[o++] = c;
    i++;
  }
  // Back to the phrases' flags alone (a flag left over would only cost a failed try, never change the output).
  if (first0 >= 0) SCAN_FLAGS[first0] &= STARTS_PHRASE;
  if (first1 >= 0) SCAN_FLAGS[first1] &= STARTS_PHRASE;
  if (first2 >= 0) SCAN_FLAGS[first2] &= STARTS_PHRASE;
  // Nothing to mark: the text as it is, read back as plain JSON.
  if (o === n + 1) return Buffer.from(src.subarray(0, n));
  out[0] = FORMAT_1;
  return Buffer.from(out.subarray(0, o));
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

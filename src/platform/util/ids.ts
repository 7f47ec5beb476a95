import { randomBytes, randomUUID, createHash, createHmac, timingSafeEqual } from 'node:crypto';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** A UUIDv4, the identifier of every resource. */
export function uuid(): string {
  return randomUUID();
}

/** Random bytes for event ids, drawn ahead in one call: a call per id costs more than the rest of the id. */
const EVENT_POOL_BYTES = 4096;
let eventPool = Buffer.alloc(0);
let eventPoolAt = 0;

/**
 * The first 14 characters of every event id stamped `at_ms`: `evt_` and the time. Crockford's alphabet is in
 * ASCII order, so ids sort by time, and the ids of one millisecond lie in [prefix(t), prefix(t + 1)).
 */
export function eventIdPrefix(at_ms: number): string {
  let time = '';
  let t = Math.max(0, Math.floor(at_ms));
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  return `evt_${time}`;
}

/** An event id: `evt_` plus 26 Crockford base32 characters, time-ordered (48-bit ms time, 80 random bits). */
export function eventId(at_ms: number): string {
  if (eventPoolAt + 10 > eventPool.length) {
    eventPool = randomBytes(EVENT_POOL_BYTES);
    eventPoolAt = 0;
  }
  const b = eventPool;
  const i = eventPoolAt;
  eventPoolAt += 10;
  // 80 bits as two 40-bit halves, 8 characters each (40 is a multiple of 5, so the halves do not share a character;
  // a 40-bit number is exact in a double).
  let high = b[i] * 2 ** 32 + (((b[i + 1] << 24) | (b[i + 2] << 16) | (b[i + 3] << 8) | b[i + 4]) >>> 0);
  let low = b[i + 5] * 2 ** 32 + (((b[i + 6] << 24) | (b[i + 7] << 16) | (b[i + 8] << 8) | b[i + 9]) >>> 0);
  let hi = '';
  let lo = '';
  // The time as eventIdPrefix writes it, in the same loop: an id is made without a call.
  let time = '';
  let t = Math.max(0, Math.floor(at_ms));
  for (let k = 0; k < 10; k++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
    if (k >= 8) continue;
    hi = CROCKFORD[high % 32] + hi;
    lo = CROCKFORD[low % 32] + lo;
    high = Math.floor(high / 32);
    low = Math.floor(low / 32);
  }
  return `evt_${time}${hi}${lo}`;
}

/** A secret with a prefix and 32 bytes of entropy, base64url. */
export function secret(prefix: string): string {
  return prefix + randomBytes(32).toString('base64url');
}

/** A webhook secret from an operator (`serve --webhook-secret`, `listen --secret`): as secret('whs_') makes, at least 16 long. */
export const WEBHOOK_SECRET_RE = /^whs_[A-Za-z0-9_-]{16,200}$/;

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True when the text is a UUID (any version), the form every resource id takes. */
export function isUuid(text: string): boolean {
  return UUID_RE.test(text);
}

/** SHA-256 of text or bytes, hex. */
export function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** HMAC-SHA256 keyed by the whole secret string (prefix included, UTF-8), hex. */
export function hmacHex(secret: string, data: string | Buffer): string {
  return createHmac('sha256', secret).update(data).digest('hex');
}

/** Constant-time equality of two strings; different lengths compare unequal without early exit on content. */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a, 'utf8');
  const bb = Buffer.from(b, 'utf8');
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}

import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

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

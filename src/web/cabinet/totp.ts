import { createHmac, randomBytes } from 'node:crypto';

const B32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** Length of one TOTP time step (RFC 6238's default, what every authenticator app uses). */
export const TOTP_STEP_S = 30;
/** Steps either side of now a code is still accepted in: covers a phone clock off by half a minute. */
export const TOTP_WINDOW_STEPS = 1;

/** Bytes as RFC 4648 base32 without padding (the form otpauth:// URIs carry). */
export function base32(bytes: Buffer): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += B32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += B32[(value << (5 - bits)) & 31];
  return out;
}

/** RFC 4648 base32 text (case and padding ignored) as bytes; throws on a character outside the alphabet. */
export function fromBase32(text: string): Buffer {
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const c of text.toUpperCase().replace(/=+$/, '')) {
    const i = B32.indexOf(c);
    if (i < 0) throw new Error(`cannot decode base32: bad character "${c}"`);
    value = (value << 5) | i;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** A new TOTP secret: 20 random bytes (RFC 4226's recommended length for HMAC-SHA1), base32. */
export function newTotpSecret(): string {
  return base32(randomBytes(20));
}

/** The 6-digit HOTP code (RFC 4226) of a base32 secret at a counter. */
export function hotp(secretB32: string, counter: number): string {
  const msg = Buffer.alloc(8);
  msg.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', fromBase32(secretB32)).update(msg).digest();
  const off = mac[mac.length - 1] & 15;
  const bin = ((mac[off] & 0x7f) << 24) | (mac[off + 1] << 16) | (mac[off + 2] << 8) | mac[off + 3];
  return String(bin % 1_000_000).padStart(6, '0');
}

export function totpStep(now_ms: number): number {
  return Math.floor(now_ms / 1000 / TOTP_STEP_S);
}

export function totpCode(secretB32: string, now_ms: number): string {
  return hotp(secretB32, totpStep(now_ms));
}

/** The step a code matches around now, or null; steps at or before `lastStep` are refused, so a seen code cannot sign in again. */
export function matchTotp(secretB32: string, code: string, now_ms: number, lastStep: number): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const now = totpStep(now_ms);
  for (let d = -TOTP_WINDOW_STEPS; d <= TOTP_WINDOW_STEPS; d++) {
    const step = now + d;
    if (step > lastStep && hotp(secretB32, step) === code) return step;
  }
  return null;
}

/** The otpauth:// URI an authenticator app reads from the enrolment QR code. */
export function otpauthUri(secretB32: string, account: string, issuer = 'kopek'): string {
  const label = encodeURIComponent(`${issuer}:${account}`);
  return `otpauth://totp/${label}?secret=${secretB32}&issuer=${encodeURIComponent(issuer)}&algorithm=SHA1&digits=6&period=${TOTP_STEP_S}`;
}

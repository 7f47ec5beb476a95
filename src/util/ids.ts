import { randomBytes, randomUUID } from 'node:crypto';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** A UUIDv4, the identifier of every resource. */
export function uuid(): string {
  return randomUUID();
}

/** An event id: `evt_` plus 26 Crockford base32 characters, time-ordered (48-bit ms time, 80 random bits). */
export function eventId(at_ms: number): string {
  let time = '';
  let t = Math.max(0, Math.floor(at_ms));
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = randomBytes(10);
  let rand = '';
  // 80 bits -> 16 characters of 5 bits each.
  let acc = 0n;
  for (const b of bytes) acc = (acc << 8n) | BigInt(b);
  for (let i = 0; i < 16; i++) {
    rand = CROCKFORD[Number(acc & 31n)] + rand;
    acc >>= 5n;
  }
  return `evt_${time}${rand}`;
}

/** A secret with a prefix and 32 bytes of entropy, base64url. */
export function secret(prefix: string): string {
  return prefix + randomBytes(32).toString('base64url');
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True when the text is a UUID (any version), the form every resource id takes. */
export function isUuid(text: string): boolean {
  return UUID_RE.test(text);
}

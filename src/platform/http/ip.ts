import { isIP } from 'node:net';

/** The eight 16-bit words of an IPv6 address (zone already stripped), or null when it is not one. */
function ipv6Words(address: string): number[] | null {
  if (isIP(address) !== 6) return null;
  let text = address;
  // A dotted IPv4 tail (`::ffff:1.2.3.4`) is two words written differently.
  const dotted = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number);
    text = text.slice(0, dotted.index) + ((a << 8) | b).toString(16) + ':' + ((c << 8) | d).toString(16);
  }
  const [head, tail] = text.split('::');
  const headWords = head ? head.split(':') : [];
  const tailWords = tail === undefined ? [] : tail ? tail.split(':') : [];
  const zeros = tail === undefined ? 0 : 8 - headWords.length - tailWords.length;
  const words = [...headWords, ...Array<string>(zeros).fill('0'), ...tailWords].map((w) => parseInt(w, 16));
  return words.length === 8 && words.every((w) => w >= 0 && w <= 0xffff) ? words : null;
}

/**
 * A client address in the form allow-lists compare (the client address of a request, src/platform/auth/ip-allowlist.ts,
 * the webhooks' URL policy): zone id dropped, lower case, and an IPv4-mapped
 * IPv6 address (`::ffff:1.2.3.4`, `::ffff:102:304`, `0:0:0:0:0:ffff:…`) as plain IPv4.
 */
export function unmapIp(address: string): string {
  const plain = address.replace(/%.*$/, '').toLowerCase();
  const words = ipv6Words(plain);
  if (words && words.slice(0, 5).every((w) => w === 0) && words[5] === 0xffff) {
    return `${words[6] >> 8}.${words[6] & 0xff}.${words[7] >> 8}.${words[7] & 0xff}`;
  }
  return plain;
}

import { BlockList, isIP } from 'node:net';
import { lookup } from 'node:dns/promises';
import { compileAllowList, unmapIp, type AllowList } from '../auth/ip-allowlist';

// Ranges a live webhook must not reach: they lead into the operator's own network or cloud metadata.
const BLOCKED_V4: Array<[string, number, string]> = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local or metadata'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];
const BLOCKED_V6: Array<[string, number, string]> = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['fc00::', 7, 'unique-local'],
  ['fe80::', 10, 'link-local'],
  ['ff00::', 8, 'multicast'],
  ['64:ff9b::', 96, 'NAT64'],
  ['2001:db8::', 32, 'documentation'],
];

const lists = BLOCKED_V4.concat(BLOCKED_V6).map(([addr, bits, why]) => {
  const l = new BlockList();
  l.addSubnet(addr, bits, isIP(addr) === 4 ? 'ipv4' : 'ipv6');
  return { list: l, why };
});

/** Why an address is not public (`loopback`, `private`, …), or null for a public address. */
export function blockedReason(address: string): string | null {
  const a = unmapIp(address);
  const fam = isIP(a);
  if (fam === 0) return 'not an IP address';
  const type = fam === 4 ? 'ipv4' : 'ipv6';
  for (const { list, why } of lists) if (list.check(a, type)) return why;
  return null;
}

/** A checked destination: the address to connect to, and its family. */
export interface Resolved {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address; injectable for tests of the policy. */
export type Resolver = (host: string) => Promise<Array<{ address: string; family: number }>>;

const systemResolver: Resolver = (host) => lookup(host, { all: true, verbatim: true });

/** Live-mode destination policy: https only, and every resolved address public unless the operator allows its range. */
export class UrlPolicy {
  private readonly allow: AllowList;

  constructor(allowRanges: readonly string[], private readonly resolve: Resolver = systemResolver) {
    this.allow = compileAllowList(allowRanges.join(','));
  }

  /** Check a live URL and resolve its host; throws `Error` with the reason; the result is what to connect to. */
  async check(url: URL): Promise<Resolved> {
    if (url.protocol !== 'https:') throw new Error(`refused "${url.origin}": live webhooks need https`);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    let addrs: Array<{ address: string; family: number }>;
    if (isIP(host)) addrs = [{ address: host, family: isIP(host) }];
    else {
      try {
        addrs = await this.resolve(host);
      } catch (err) {
        throw new Error(`cannot resolve "${host}": ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
    }
    if (addrs.length === 0) throw new Error(`cannot resolve "${host}": no addresses`);
    // Every address must pass: a name that also resolves to a private address could be rebound to it.
    for (const a of addrs) {
      const why = blockedReason(a.address);
      if (why && (this.allow.empty || !this.allow.allows(a.address))) {
        throw new Error(`refused "${host}": resolves to ${why} address ${a.address}`);
      }
    }
    const first = addrs[0];
    return { address: unmapIp(first.address), family: isIP(unmapIp(first.address)) === 6 ? 6 : 4 };
  }
}

import { BlockList, isIP } from 'node:net';
import { lookup } from 'node:dns/promises';
import { compileAllowList, unmapIp, type AllowList } from '../auth/ip-allowlist';

// Ranges a webhook must not reach: they lead into the operator's own network or cloud metadata. Test mode
// may reach loopback (a developer's receiver); --webhook-allow opens ranges for both modes.
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
  // Forms that carry an IPv4 address inside (IPv4-compatible ::a.b.c.d, 6to4, NAT64): any of them could
  // lead to a private IPv4 address, so none is taken.
  ['::', 96, 'IPv4-compatible'],
  ['2002::', 16, '6to4'],
  ['64:ff9b::', 96, 'NAT64'],
  ['64:ff9b:1::', 48, 'NAT64 local-use'],
  ['fc00::', 7, 'unique-local'],
  ['fec0::', 10, 'site-local'],
  ['fe80::', 10, 'link-local'],
  ['ff00::', 8, 'multicast'],
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

/** Reasons test mode lets through: a developer's receiver on this machine. */
const TEST_MODE_ALLOWED = new Set(['loopback']);

/**
 * Where a webhook may go. Live: https only, and every resolved address public unless the operator allows
 * its range. Test: http too, and loopback; every other address follows the live rule, so a test key cannot
 * probe the operator's network or a cloud's metadata address through the delivery log.
 */
export class UrlPolicy {
  private readonly allow: AllowList;

  constructor(allowRanges: readonly string[], private readonly resolve: Resolver = systemResolver) {
    this.allow = compileAllowList(allowRanges.join(','));
  }

  /** Check a URL of a mode and resolve its host; throws `Error` with the reason; the result is what to connect to. */
  async check(url: URL, mode: 'test' | 'live' = 'live'): Promise<Resolved> {
    if (mode === 'live' && url.protocol !== 'https:') throw new Error(`refused "${url.origin}": live webhooks need https`);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`refused "${url.origin}": webhooks need http or https`);
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
      if (why && !(mode === 'test' && TEST_MODE_ALLOWED.has(why)) && (this.allow.empty || !this.allow.allows(a.address))) {
        throw new Error(`refused "${host}": resolves to ${why} address ${a.address}`);
      }
    }
    const first = addrs[0];
    return { address: unmapIp(first.address), family: isIP(unmapIp(first.address)) === 6 ? 6 : 4 };
  }
}

import { BlockList, isIP, type LookupFunction } from 'node:net';
import { lookup } from 'node:dns/promises';
import { compileAllowList, type AllowList } from '../../platform/auth/ip-allowlist';
import { unmapIp } from '../../platform/http/server';

// Ranges kopek must not send to on its own (webhooks, a bank's API): they lead into the operator's own network
// or cloud metadata. Test-mode webhooks may reach loopback (a developer's receiver); --webhook-allow opens
// ranges for webhooks of both modes and for the banks' addresses.
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

export interface Resolved {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address; injectable for tests of the policy. */
export type Resolver = (host: string) => Promise<Array<{ address: string; family: number }>>;

const systemResolver: Resolver = (host) => lookup(host, { all: true, verbatim: true });

/** Reasons test-mode webhooks let through: a developer's receiver on this machine. */
export const TEST_MODE_PERMITS: ReadonlySet<string> = new Set(['loopback']);
const NO_PERMITS: ReadonlySet<string> = new Set();

const compiled = new WeakMap<readonly string[], AllowList>();

/** The operator's allowed ranges (`--webhook-allow`) compiled once per list; throws on a bad entry. */
export function allowListOf(ranges: readonly string[]): AllowList {
  let list = compiled.get(ranges);
  if (!list) compiled.set(ranges, (list = compileAllowList(ranges.join(','))));
  return list;
}

/**
 * The one rule of every address kopek sends to on its own (webhooks, a bank's API): why `address` may not be
 * reached, or null. A reserved one may only when its reason is in `permits` or the operator's ranges hold it.
 */
export function refusalOf(address: string, allow: AllowList, permits: ReadonlySet<string> = NO_PERMITS): string | null {
  const a = unmapIp(address);
  const fam = isIP(a);
  let why: string | null = fam === 0 ? 'not an IP address' : null;
  const type = fam === 4 ? 'ipv4' : 'ipv6';
  for (const l of lists) {
    if (why) break;
    if (l.list.check(a, type)) why = l.why;
  }
  if (!why || permits.has(why) || (!allow.empty && allow.allows(address))) return null;
  return why;
}

/**
 * The same rule for a URL given with an IP host, resolving nothing: "private address 10.0.0.1", or null. A host
 * name passes here: it is checked at each call, as its addresses may change.
 */
export function literalRefusal(url: URL, allow: AllowList, permits: ReadonlySet<string> = NO_PERMITS): string | null {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!isIP(host)) return null;
  const why = refusalOf(host, allow, permits);
  return why ? `${why} address ${unmapIp(host)}` : null;
}

/**
 * Where kopek may send: every resolved address public unless the operator allows its range; live webhooks https
 * only; test webhooks http and loopback too, so a test key cannot probe the operator's network through the log.
 */
export class UrlPolicy {
  private readonly allow: AllowList;

  constructor(allowRanges: readonly string[], private readonly resolve: Resolver = systemResolver) {
    this.allow = allowListOf(allowRanges);
  }

  /** A webhook URL of a mode, or a bank's API address (`provider`), resolved to what to connect to; throws the reason. */
  async check(url: URL, mode: 'test' | 'live' | 'provider' = 'live'): Promise<Resolved> {
    if (mode === 'live' && url.protocol !== 'https:') throw new Error(`refused "${url.origin}": live webhooks need https`);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new Error(`refused "${url.origin}": ${mode === 'provider' ? "a bank's API needs" : 'webhooks need'} http or https`);
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const addrs = isIP(host)
      ? [{ address: host, family: isIP(host) }]
      : await this.resolve(host).catch((err: NodeJS.ErrnoException) => Promise.reject(new Error(`cannot resolve "${host}": ${err.code ?? err.message}`)));
    if (addrs.length === 0) throw new Error(`cannot resolve "${host}": no addresses`);
    // Every address must pass: a name that also resolves to a private address could be rebound to it.
    const permits = mode === 'test' ? TEST_MODE_PERMITS : NO_PERMITS;
    for (const a of addrs) {
      const why = refusalOf(a.address, this.allow, permits);
      if (why) throw new Error(`refused "${host}": resolves to ${why} address ${a.address}`);
    }
    const first = unmapIp(addrs[0].address);
    return { address: first, family: isIP(first) === 6 ? 6 : 4 };
  }

  checkProvider(url: URL): Promise<Resolved> {
    return this.check(url, 'provider');
  }
}

/** A `lookup` for node:http(s) that answers with a checked address, so the connection goes where the check looked. */
export function fixedLookup(r: Resolved): LookupFunction {
  // Node may ask for all addresses (happy eyeballs) or one; answer with the checked address either way.
  return ((_host: string, opts: { all?: boolean }, cb: (...a: unknown[]) => void) => {
    if (opts && opts.all) cb(null, [{ address: r.address, family: r.family }]);
    else cb(null, r.address, r.family);
  }) as unknown as LookupFunction;
}

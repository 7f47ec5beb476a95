import { BlockList, isIP } from 'node:net';
import { unmapIp as unmapAddress } from '../http/server';

/**
 * Kept here for the allow-list's users (webhooks' URL policy, tests); it lives with the client address in http/.
 * Bound once: a re-export would look it up through both modules on every call.
 */
export const unmapIp = unmapAddress;

/** A compiled allow-list; empty means any address. */
export interface AllowList {
  readonly empty: boolean;
  allows(address: string): boolean;
}

interface Entry {
  address: string;
  family: 'ipv4' | 'ipv6';
  prefix?: number;
}

/** Parse one entry (IPv4, IPv6, or a CIDR of either; IPv4-mapped IPv6 reads as IPv4), or explain why not. */
function parseEntry(entry: string): Entry | string {
  const [addr, bits, extra] = entry.split('/');
  if (extra !== undefined) return `bad allow-list entry "${entry}": more than one "/"`;
  if (addr.includes('%')) return `bad allow-list entry "${entry}": zone ids are not allowed`;
  const a = unmapIp(addr);
  const family = isIP(a);
  if (family === 0) return `bad allow-list entry "${entry}": not an IP address`;
  const mapped = a !== addr.toLowerCase() && family === 4 && isIP(addr) === 6;
  if (bits === undefined) return { address: a, family: family === 4 ? 'ipv4' : 'ipv6' };
  const max = mapped ? 128 : family === 4 ? 32 : 128;
  const min = mapped ? 96 : 0;
  if (!/^\d{1,3}$/.test(bits) || Number(bits) > max || Number(bits) < min) {
    return `bad allow-list entry "${entry}": prefix must be ${min}..${max}`;
  }
  // A mapped CIDR (::ffff:10.0.0.0/104) is the IPv4 range of its low 32 bits.
  const prefix = mapped ? Number(bits) - 96 : Number(bits);
  return { address: a, family: family === 4 ? 'ipv4' : 'ipv6', prefix };
}

/** Compile a comma list of entries; throws on a bad entry. */
export function compileAllowList(text: string): AllowList {
  const entries = text.split(',').map((s) => s.trim()).filter(Boolean);
  const list = new BlockList();
  for (const entry of entries) {
    const parsed = parseEntry(entry);
    if (typeof parsed === 'string') throw new Error(parsed);
    if (parsed.prefix === undefined) list.addAddress(parsed.address, parsed.family);
    else list.addSubnet(parsed.address, parsed.prefix, parsed.family);
  }
  return {
    empty: entries.length === 0,
    allows(address: string): boolean {
      if (entries.length === 0) return true;
      const a = unmapIp(address);
      const fam = isIP(a);
      if (fam === 0) return false;
      return list.check(a, fam === 4 ? 'ipv4' : 'ipv6');
    },
  };
}

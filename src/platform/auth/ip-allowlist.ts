import { BlockList, isIP } from 'node:net';
import { unmapIp } from '../http/server';

/** A compiled allow-list; empty means any address. */
export interface AllowList {
  readonly empty: boolean;
  allows(address: string): boolean;
}

/** Add one entry (IPv4, IPv6, or a CIDR of either; IPv4-mapped IPv6 reads as IPv4) to `list`; throws on a bad one. */
function addEntry(list: BlockList, entry: string): void {
  const bad = (why: string): Error => new Error(`bad allow-list entry "${entry}": ${why}`);
  const [addr, bits, extra] = entry.split('/');
  if (extra !== undefined) throw bad('more than one "/"');
  if (addr.includes('%')) throw bad('zone ids are not allowed');
  const a = unmapIp(addr);
  const family = isIP(a);
  if (family === 0) throw bad('not an IP address');
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (bits === undefined) return list.addAddress(a, type);
  const mapped = a !== addr.toLowerCase() && family === 4 && isIP(addr) === 6;
  const max = mapped || family === 6 ? 128 : 32;
  const min = mapped ? 96 : 0;
  if (!/^\d{1,3}$/.test(bits) || Number(bits) > max || Number(bits) < min) throw bad(`prefix must be ${min}..${max}`);
  // A mapped CIDR (::ffff:10.0.0.0/104) is the IPv4 range of its low 32 bits.
  list.addSubnet(a, mapped ? Number(bits) - 96 : Number(bits), type);
}

/** Compile a comma list of entries; throws on a bad entry. */
export function compileAllowList(text: string): AllowList {
  const entries = text.split(',').map((s) => s.trim()).filter(Boolean);
  const list = new BlockList();
  for (const entry of entries) addEntry(list, entry);
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

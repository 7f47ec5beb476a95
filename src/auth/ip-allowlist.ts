import { BlockList, isIP } from 'node:net';

/** An IPv4-mapped IPv6 address (`::ffff:1.2.3.4`) as plain IPv4; other addresses unchanged. */
export function unmapIp(address: string): string {
  const m = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  return m ? m[1] : address;
}

/** A compiled allow-list; empty means any address. */
export interface AllowList {
  readonly empty: boolean;
  allows(address: string): boolean;
}

/** Check one entry (IPv4, IPv6, or a CIDR of either); returns an error message or null. */
export function checkEntry(entry: string): string | null {
  const [addr, bits, extra] = entry.split('/');
  if (extra !== undefined) return `bad allow-list entry "${entry}"`;
  const a = unmapIp(addr);
  const family = isIP(a);
  if (family === 0) return `bad allow-list entry "${entry}": not an IP address`;
  if (bits !== undefined) {
    const max = family === 4 ? 32 : 128;
    if (!/^\d{1,3}$/.test(bits) || Number(bits) > max) return `bad allow-list entry "${entry}": prefix must be 0..${max}`;
  }
  return null;
}

/** Compile a comma list of entries; throws on a bad entry. */
export function compileAllowList(text: string): AllowList {
  const entries = text.split(',').map((s) => s.trim()).filter(Boolean);
  const list = new BlockList();
  for (const entry of entries) {
    const problem = checkEntry(entry);
    if (problem) throw new Error(problem);
    const [addr, bits] = entry.split('/');
    const a = unmapIp(addr);
    const type = isIP(a) === 4 ? 'ipv4' : 'ipv6';
    let prefix = bits === undefined ? undefined : Number(bits);
    // A mapped CIDR (::ffff:10.0.0.0/104) means the IPv4 range of the low 32 bits.
    if (a !== addr && prefix !== undefined) prefix = Math.max(0, prefix - 96);
    if (prefix === undefined) list.addAddress(a, type);
    else list.addSubnet(a, prefix, type);
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

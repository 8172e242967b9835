// The names of a DNSBL zone (contract 17, RFC 5782): which address, if any, a question's name asks about. Works
// on the name in wire form (length-prefixed labels, ASCII already lowercased, ending with the root's 0), so the
// DNS listener classifies a query without making a string.

/** What a name inside (or outside) the zone is. */
export const NameKind = {
  /** Not the zone nor a name under it. */
  Outside: 0,
  /** The zone itself. */
  Apex: 1,
  /** `ns.ZONE`, the zone's name server. */
  NameServer: 2,
  /** `d.c.b.a.ZONE`: the IPv4 address is in `out[0]`. */
  Ipv4: 3,
  /** 32 nibbles: the IPv6 address's four words are in `out[0..3]`. */
  Ipv6: 4,
  /** Under the zone, but no address: wrong label count, `256`, `01`, a label that is not a nibble. */
  Malformed: 5,
} as const;
export type NameKind = (typeof NameKind)[keyof typeof NameKind];

/** Labels under the zone at most that can name something (an IPv6 address's 32 nibbles). */
const MAX_ADDRESS_LABELS = 32;
const starts = new Int32Array(MAX_ADDRESS_LABELS + 1);

/** The zone's name in wire form, lowercased: `dnsbl.example` → `\x05dnsbl\x07example\x00`. */
export function wireName(dotted: string): Uint8Array {
  const text = dotted.toLowerCase().replace(/\.$/, "");
  if (text === "") return Uint8Array.of(0);
  const labels = text.split(".");
  const out: number[] = [];
  for (const label of labels) {
    const bytes = new TextEncoder().encode(label);
    if (bytes.length === 0 || bytes.length > 63) throw new RangeError(`"${dotted}" is not a domain name: every label must be 1 to 63 bytes`);
    out.push(bytes.length, ...bytes);
  }
  out.push(0);
  if (out.length > 255) throw new RangeError(`"${dotted}" is not a domain name: longer than 255 bytes`);
  return Uint8Array.from(out);
}

/**
 * Classifies `name[0..end)` (a whole wire name, lowercased, its last byte the root's 0) against `zone` (from
 * wireName). An address is written into `out` (one word for IPv4, four for IPv6).
 */
export function classifyName(name: Uint8Array, end: number, zone: Uint8Array, out: Uint32Array): NameKind {
  const zoneLength = zone.length;
  const zoneStart = end - zoneLength;
  if (zoneStart < 0) return NameKind.Outside;
  for (let i = 0; i < zoneLength; i++) if (name[zoneStart + i] !== zone[i]) return NameKind.Outside;
  // The zone's bytes must start at a label boundary: `xdnsbl.example` is not under `dnsbl.example`.
  let labels = 0;
  let at = 0;
  while (at < zoneStart) {
    if (labels === MAX_ADDRESS_LABELS + 1) return labelsUpTo(name, at, zoneStart) ? NameKind.Malformed : NameKind.Outside;
    starts[labels++] = at;
    at += name[at] + 1;
  }
  if (at !== zoneStart) return NameKind.Outside;
  if (labels === 0) return NameKind.Apex;
  if (labels === 1 && name[0] === 2 && name[1] === 0x6e && name[2] === 0x73) return NameKind.NameServer; // "ns"
  if (labels === 4) return ipv4Of(name, out) ? NameKind.Ipv4 : NameKind.Malformed;
  if (labels === 32) return ipv6Of(name, out) ? NameKind.Ipv6 : NameKind.Malformed;
  return NameKind.Malformed;
}

/** Whether the labels from `at` end exactly at `boundary` (the name is under the zone, with too many labels). */
function labelsUpTo(name: Uint8Array, at: number, boundary: number): boolean {
  while (at < boundary) at += name[at] + 1;
  return at === boundary;
}

/** Reads `d.c.b.a` (the first four labels) into out[0] as a.b.c.d; false unless each is a decimal octet. */
function ipv4Of(name: Uint8Array, out: Uint32Array): boolean {
  let value = 0;
  for (let i = 0; i < 4; i++) {
    const at = starts[i];
    const length = name[at];
    if (length > 3) return false;
    let octet = 0;
    for (let k = 1; k <= length; k++) {
      const digit = name[at + k] - 0x30;
      if (digit < 0 || digit > 9) return false;
      if (k === 1 && digit === 0 && length > 1) return false; // leading zero
      octet = octet * 10 + digit;
    }
    if (octet > 255) return false;
    value += octet * 2 ** (8 * i);
  }
  out[0] = value;
  return true;
}

/** Reads 32 one-nibble labels, least significant first, into out[0..3]; false unless each is a hex digit. */
function ipv6Of(name: Uint8Array, out: Uint32Array): boolean {
  out[0] = out[1] = out[2] = out[3] = 0;
  for (let i = 0; i < 32; i++) {
    const at = starts[i];
    if (name[at] !== 1) return false;
    const c = name[at + 1];
    const nibble = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : -1;
    if (nibble < 0) return false;
    // Label i is nibble i from the end: word 3 - (i >> 3), shift 4 * (i & 7).
    const w = 3 - (i >> 3);
    out[w] = (out[w] | (nibble << (4 * (i & 7)))) >>> 0;
  }
  return true;
}

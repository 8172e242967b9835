// The radix (prefix) trees behind every lookup: IPv4 and IPv6 addresses and networks, each mapped to a small
// integer value (the caller's slot id into its own typed-array columns), held in typed arrays.
//
// Structure (both families, see radix4.ts and radix6.ts):
// - A direct-indexed root table of 2^rootBits int32 bucket heads, indexed by the top rootBits bits of the
//   key. It starts at 2^16 and grows by four (rebuilding the tree) whenever the tree holds more than half as
//   many entries as buckets, up to 2^22 (16 MiB): with under one entry per bucket, a random lookup costs the
//   root slot plus one or two nodes, which is what beats a binary search (20 dependent probes) on 1 M keys.
//   `rootBits` in the options fixes the size instead (small sets: 8 is plenty).
// - Under each bucket, a path-compressed binary trie (PATRICIA) of the prefixes of length >= rootBits in it:
//   a node holds its network, its prefix length (the bit it branches on) and two children; nodes without a
//   value only branch (exactly two children). Lookups skip straight down by the branch bits and compare the
//   key once at the end.
// - Prefixes shorter than rootBits (/0 up to /rootBits-1: big listed networks) live in one more trie whose
//   head is the table's last slot. Longest-prefix match and enclosing prefixes read it after (or before) the
//   bucket's path; walks merge its entries in by network.
// - Nodes live in one Int32Array with a fixed stride (IPv4: key, meta, left, right = 16 bytes, and a /32 keeps
//   its value in `left` as ~value so an exact lookup reads one node; IPv6: four key words, meta, left, right,
//   value = 32 bytes). Freed nodes go on a free list; `compact()` renumbers nodes in walk order so that a
//   bucket's nodes share cache lines. Serialization writes the compacted arrays to one buffer.
// - Order: entries walk ascending by network, then by prefix length (10.0.0.0/8 before 10.0.0.0/24 before
//   10.0.0.0/32), the pre-order of the trie. Values are integers 0..2^31-1; NOT_FOUND (-1) means nothing.

import { type Cidr, type Ip } from "../domain/ip";
import { NOT_FOUND, MAX_VALUE, type RadixOptions } from "./radix-common";
import { RadixTree4, RadixCursor4, type RadixEntry4, type RadixVisitor4 } from "./radix4";
import { RadixTree6, type RadixEntry6, type RadixVisitor6, type Words } from "./radix6";
import { RadixCursor6 } from "./radix6-cursor";

export { NOT_FOUND, MAX_VALUE, RadixTree4, RadixCursor4, RadixTree6, RadixCursor6 };
export type { RadixOptions, RadixEntry4, RadixEntry6, RadixVisitor4, RadixVisitor6, Words };

/** An address or network of either family, as the domain types it. */
export type IpKey = Ip | Cidr;

function lengthOf(key: IpKey): number {
  return "prefixLength" in key ? key.prefixLength : key.version === 4 ? 32 : 128;
}

function addressOf(key: IpKey): Ip {
  return "prefixLength" in key ? key.network : key;
}

/** Both families' trees behind one API that takes the domain's `Ip` and `Cidr` values. */
export class IpRadixTree {
  constructor(
    readonly v4: RadixTree4 = new RadixTree4(),
    readonly v6: RadixTree6 = new RadixTree6(),
  ) {}

  get size(): number {
    return this.v4.size + this.v6.size;
  }

  get byteSize(): number {
    return this.v4.byteSize + this.v6.byteSize;
  }

  /** Inserts or updates an address (as /32 or /128) or a network. */
  set(key: IpKey, value: number): void {
    const ip = addressOf(key);
    if (ip.version === 4) this.v4.set(ip.value, lengthOf(key), value);
    else this.v6.set(ip.words, lengthOf(key), value);
  }

  /** The value stored for exactly this address or network, or NOT_FOUND. */
  get(key: IpKey): number {
    const ip = addressOf(key);
    if ("prefixLength" in key) return ip.version === 4 ? this.v4.getPrefix(ip.value, key.prefixLength) : this.v6.getPrefix(ip.words, key.prefixLength);
    return ip.version === 4 ? this.v4.get(ip.value) : this.v6.get(ip.words);
  }

  delete(key: IpKey): boolean {
    const ip = addressOf(key);
    return ip.version === 4 ? this.v4.delete(ip.value, lengthOf(key)) : this.v6.delete(ip.words, lengthOf(key));
  }

  /** The value of the longest stored prefix containing `ip` (its own entry included), or NOT_FOUND. */
  longestMatch(ip: Ip, maxPrefixLength?: number): number {
    return ip.version === 4 ? this.v4.longestMatch(ip.value, maxPrefixLength) : this.v6.longestMatch(ip.words, maxPrefixLength);
  }

  /** The values of every stored prefix containing `ip`, shortest first (its own entry last, if any). */
  enclosingValues(ip: Ip, maxPrefixLength?: number): number[] {
    const out: number[] = [];
    if (ip.version === 4) this.v4.enclosingValues(ip.value, out, maxPrefixLength);
    else this.v6.enclosingValues(ip.words, out, maxPrefixLength);
    return out;
  }

  compact(): void {
    this.v4.compact();
    this.v6.compact();
  }

  /** Both trees in one buffer: [v4 length as uint32 LE][v4 tree][v6 tree]. */
  serialize(): Uint8Array {
    const a = this.v4.serialize();
    const b = this.v6.serialize();
    const out = new Uint8Array(4 + a.byteLength + b.byteLength);
    new DataView(out.buffer).setUint32(0, a.byteLength, true);
    out.set(a, 4);
    out.set(b, 4 + a.byteLength);
    return out;
  }

  static deserialize(buffer: Uint8Array): IpRadixTree {
    if (buffer.byteLength < 4) throw new RangeError("radix buffer: truncated");
    const length = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength).getUint32(0, true);
    if (4 + length > buffer.byteLength) throw new RangeError("radix buffer: truncated");
    return new IpRadixTree(
      RadixTree4.deserialize(buffer.subarray(4, 4 + length)),
      RadixTree6.deserialize(buffer.subarray(4 + length)),
    );
  }
}

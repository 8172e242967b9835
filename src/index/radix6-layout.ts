// The node layout of the IPv6 radix tree (radix6.ts), shared with its cursor (radix6-cursor.ts).

import type { RadixLayout } from "./radix-base";

// Node layout: eight int32 words per node (32 bytes, two to a cache line).
export const STRIDE = 8;
export const KEY = 0; // four words: the network, host bits zero
export const META = 4; // prefix length | HAS_VALUE | FREE
export const LEFT = 5; // child whose next bit is 0
export const RIGHT = 6; // child whose next bit is 1; on a free node: the next free node
export const VALUE = 7;

/** MASK[len]: the netmask of `len` bits (0..32) within one word, as int32. */
export const MASK = new Int32Array(33);
for (let len = 1; len <= 32; len++) MASK[len] = -1 << (32 - len);

/** The part of a prefix length that falls in word w. */
export function wordBits(prefixLength: number, w: number): number {
  const bits = prefixLength - 32 * w;
  return bits <= 0 ? 0 : bits >= 32 ? 32 : bits;
}

export const LAYOUT: RadixLayout = { stride: STRIDE, meta: META, left: LEFT, right: RIGHT, fullLength: 128, magic: 0x36524941 /* "AIR6" */, separateValues: false };

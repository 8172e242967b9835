// What the IPv4 and IPv6 radix trees share: options, node flags, value checks, growth and the buffer format.

export interface RadixOptions {
  /**
   * Bits of the key that index the direct root table (1..24): 2^rootBits int32 bucket heads. More bits mean
   * shorter paths and a bigger fixed table. Prefixes shorter than this live in a separate small trie.
   */
  rootBits?: number;
  /** Nodes to allocate up front (the arrays grow by half when full). */
  initialCapacity?: number;
}

/** What a lookup returns when nothing is stored. Values are 0..2^31-1, so it never collides with one. */
export const NOT_FOUND = -1;
/** The largest value an entry can hold. */
export const MAX_VALUE = 0x7fffffff;

/** Node META word: prefix length in the low byte, then flags. */
export const LEN_MASK = 0xff;
export const HAS_VALUE = 0x100;
export const FREE = 0x200;

export function checkRootBits(rootBits: number): number {
  if (!Number.isInteger(rootBits) || rootBits < 1 || rootBits > 24) throw new RangeError(`rootBits ${rootBits} is outside 1..24`);
  return rootBits;
}

export function checkValue(value: number): void {
  if (!Number.isInteger(value) || value < 0 || value > MAX_VALUE) throw new RangeError(`radix value ${value} is outside 0..${MAX_VALUE}`);
}

/** A copy of `a` with room for `items` items of `unit` words (half as much again as asked, at least). */
export function growInt32(a: Int32Array, items: number, unit: number): Int32Array {
  const grown = new Int32Array(Math.max(64, Math.ceil(items * 1.5)) * unit);
  grown.set(a);
  return grown;
}

// Buffer format, all little-endian int32 words:
//   magic, format version, rootBits, H, H header words, A, A array lengths, then the A arrays back to back.
const FORMAT_VERSION = 1;

if (new Uint8Array(Uint32Array.of(1).buffer)[0] !== 1) throw new Error("radix serialization assumes a little-endian machine");

export function writeTreeBuffer(magic: number, rootBits: number, header: number[], arrays: Int32Array[]): Uint8Array {
  const preamble = [magic, FORMAT_VERSION, rootBits, header.length, ...header, arrays.length, ...arrays.map((a) => a.length)];
  const total = preamble.length + arrays.reduce((sum, a) => sum + a.length, 0);
  const words = new Int32Array(total);
  words.set(preamble);
  let at = preamble.length;
  for (const a of arrays) {
    words.set(a, at);
    at += a.length;
  }
  return new Uint8Array(words.buffer);
}

export function readTreeBuffer(
  buffer: Uint8Array,
  magic: number,
  arrayCount: number,
): { rootBits: number; header: number[]; arrays: Int32Array[] } {
  if (buffer.byteLength % 4 !== 0 || buffer.byteLength < 16) throw new RangeError("radix buffer: truncated");
  // Int32Array views need 4-byte alignment; copy when the bytes sit at an odd offset.
  const aligned = buffer.byteOffset % 4 === 0 ? buffer : buffer.slice();
  const words = new Int32Array(aligned.buffer, aligned.byteOffset, aligned.byteLength / 4);
  if (words[0] !== (magic | 0)) throw new RangeError("radix buffer: wrong magic (not a tree of this family)");
  if (words[1] !== FORMAT_VERSION) throw new RangeError(`radix buffer: format version ${words[1]} is not supported`);
  const rootBits = checkRootBits(words[2]);
  let at = 3;
  const headerLength = words[at++];
  if (headerLength < 0 || at + headerLength >= words.length) throw new RangeError("radix buffer: truncated");
  const header = Array.from(words.subarray(at, at + headerLength));
  at += headerLength;
  if (words[at++] !== arrayCount) throw new RangeError("radix buffer: wrong number of arrays");
  const lengths = Array.from(words.subarray(at, at + arrayCount));
  at += arrayCount;
  const arrays: Int32Array[] = [];
  for (const length of lengths) {
    if (length < 0 || at + length > words.length) throw new RangeError("radix buffer: truncated");
    arrays.push(words.subarray(at, at + length));
    at += length;
  }
  if (at !== words.length) throw new RangeError("radix buffer: trailing bytes");
  return { rootBits, header, arrays };
}

/**
 * Refuses a deserialized tree whose links point outside its node array (a corrupt or foreign buffer). Written
 * as one tight loop over local typed arrays: it runs over every node at every offline start, so at a million
 * nodes a closure per check costs 100+ ms. A link is valid when it is -1 or 0..top-1, i.e. (link + 1) as an
 * unsigned number is at most `top`. When `leafHoldsValue`, a full-length node keeps its value in its first
 * link word, which is then not a link.
 */
export interface NodeLayout {
  stride: number;
  meta: number;
  left: number;
  right: number;
  maxLength: number;
  leafHoldsValue: boolean;
}

export function checkTreeLinks(roots: Int32Array, nodes: Int32Array, top: number, layout: NodeLayout): void {
  const { stride, meta: metaAt, left: leftAt, right: rightAt, maxLength, leafHoldsValue } = layout;
  for (let i = 0; i < roots.length; i++) {
    if ((roots[i] + 1) >>> 0 > top) throw new RangeError("radix buffer: a root points outside the nodes");
  }
  for (let o = 0, end = top * stride; o < end; o += stride) {
    const len = nodes[o + metaAt] & LEN_MASK;
    if (len > maxLength) throw new RangeError("radix buffer: a node is malformed");
    if (leafHoldsValue && len === maxLength) continue;
    if ((nodes[o + leftAt] + 1) >>> 0 > top || (nodes[o + rightAt] + 1) >>> 0 > top) {
      throw new RangeError("radix buffer: a node is malformed");
    }
  }
}

// The IPv6 radix tree: 128-bit keys (four 32-bit words, no BigInt) with prefix lengths, each entry holding a
// small integer value. See radix.ts for the structure; this file holds the IPv6 node layout and operations.

import { type RadixOptions, NOT_FOUND, HAS_VALUE, LEN_MASK, checkValue } from "./radix-common";
import { RadixTreeBase } from "./radix-base";
import { RadixCursor6 } from "./radix6-cursor";
import { KEY, LAYOUT, LEFT, MASK, META, RIGHT, VALUE, wordBits } from "./radix6-layout";

/** Four unsigned 32-bit words, most significant first (`Ipv6.words`, or any array of four numbers). */
export type Words = ArrayLike<number>;

/** One entry of an IPv6 tree. */
export interface RadixEntry6 {
  network: Uint32Array;
  prefixLength: number;
  value: number;
}

/** Receives entries of a walk; `network` is reused between calls (copy it to keep it). `false` stops. */
export type RadixVisitor6 = (network: Uint32Array, prefixLength: number, value: number) => void | boolean;

export class RadixTree6 extends RadixTreeBase {
  /** The key being looked up, masked, as int32 words (one per tree: lookups do not allocate). */
  private readonly key = new Int32Array(4);

  constructor(options: RadixOptions = {}) {
    super(LAYOUT, options);
  }

  // -------------------------------------------------------------------------------------------------------
  // Lookups

  /** The value stored for exactly `address`/128, or NOT_FOUND. No allocation. */
  get(address: Words): number {
    const nodes = this.nodes;
    const k = this.key;
    const k0 = address[0] | 0;
    const k1 = address[1] | 0;
    const k2 = address[2] | 0;
    const k3 = address[3] | 0;
    k[0] = k0;
    k[1] = k1;
    k[2] = k2;
    k[3] = k3;
    let n = this.roots[address[0] >>> this.shift];
    while (n >= 0) {
      const o = n << 3;
      const len = nodes[o + META] & LEN_MASK;
      if (len === 128) {
        return nodes[o] === k0 && nodes[o + 1] === k1 && nodes[o + 2] === k2 && nodes[o + 3] === k3 ? nodes[o + VALUE] : NOT_FOUND;
      }
      n = nodes[o + LEFT + ((k[len >>> 5] >>> (31 - (len & 31))) & 1)];
    }
    return NOT_FOUND;
  }

  /** The value stored for exactly `network/prefixLength`, or NOT_FOUND. */
  getPrefix(network: Words, prefixLength: number): number {
    const n = this.findNode(network, prefixLength);
    return n < 0 ? NOT_FOUND : this.nodes[(n << 3) + VALUE];
  }

  /** The value of the longest stored prefix (up to `maxPrefixLength`) containing `address`, or NOT_FOUND. */
  longestMatch(address: Words, maxPrefixLength = 128): number {
    const n = this.longestMatchNode(address, maxPrefixLength);
    return n < 0 ? NOT_FOUND : this.nodes[(n << 3) + VALUE];
  }

  longestMatchEntry(address: Words, maxPrefixLength = 128): RadixEntry6 | null {
    const n = this.longestMatchNode(address, maxPrefixLength);
    return n < 0 ? null : { network: this.networkAt(n, new Uint32Array(4)), prefixLength: this.lengthAt(n), value: this.nodes[(n << 3) + VALUE] };
  }

  /** Visits every stored prefix containing `address` (up to `maxPrefixLength`), shortest first. */
  forEachEnclosing(address: Words, visit: RadixVisitor6, maxPrefixLength = 128): void {
    this.loadKey(address, 128);
    const scratch = new Uint32Array(4);
    if (maxPrefixLength >= this.bits) {
      if (!this.visitPath(this.roots[this.shortSlot], this.bits - 1, visit, scratch)) return;
      this.visitPath(this.roots[address[0] >>> this.shift], maxPrefixLength, visit, scratch);
    } else {
      this.visitPath(this.roots[this.shortSlot], maxPrefixLength, visit, scratch);
    }
  }

  /**
   * The values of every stored prefix containing `address`, shortest first, written to `out` (a typed array
   * takes as many as fit, a plain array grows); returns how many were found. No allocation with a typed array.
   */
  enclosingValues(address: Words, out: Int32Array | Uint32Array | number[], maxPrefixLength = 128): number {
    this.loadKey(address, 128);
    let k = 0;
    if (maxPrefixLength >= this.bits) {
      k = this.pathValues(this.roots[this.shortSlot], this.bits - 1, out, k);
      return this.pathValues(this.roots[address[0] >>> this.shift], maxPrefixLength, out, k);
    }
    return this.pathValues(this.roots[this.shortSlot], maxPrefixLength, out, k);
  }

  enclosing(address: Words, maxPrefixLength = 128): RadixEntry6[] {
    const found: RadixEntry6[] = [];
    this.forEachEnclosing(address, (network, prefixLength, value) => void found.push({ network: network.slice(), prefixLength, value }), maxPrefixLength);
    return found;
  }

  // -------------------------------------------------------------------------------------------------------
  // Changes

  /** Inserts or updates `network/prefixLength` (host bits must be zero) with a value 0..2^31-1. */
  set(network: Words, prefixLength: number, value: number): void {
    checkValue(value);
    this.checkKey(network, prefixLength);
    const k = this.key;
    let ref = prefixLength >= this.bits ? ~(network[0] >>> this.shift) : ~this.shortSlot;
    for (;;) {
      const n = this.readRef(ref);
      if (n < 0) {
        this.writeRef(ref, this.newNode(prefixLength, value));
        if (++this.count > this.growAt) this.growRoot();
        return;
      }
      const o = n << 3;
      const meta = this.nodes[o + META];
      const nlen = meta & LEN_MASK;
      let common = this.commonPrefix(o);
      if (common > nlen) common = nlen;
      if (common > prefixLength) common = prefixLength;
      if (common === nlen) {
        if (nlen === prefixLength) {
          this.nodes[o + VALUE] = value;
          if ((meta & HAS_VALUE) === 0) {
            this.nodes[o + META] = meta | HAS_VALUE;
            if (++this.count > this.growAt) this.growRoot();
          }
          return;
        }
        ref = o + LEFT + ((k[nlen >>> 5] >>> (31 - (nlen & 31))) & 1);
        continue;
      }
      const m = this.newNode(prefixLength, value);
      if (common === prefixLength) {
        // The new prefix encloses n: it becomes n's parent.
        const side = (this.nodes[o + (prefixLength >>> 5)] >>> (31 - (prefixLength & 31))) & 1;
        this.nodes[(m << 3) + LEFT + side] = n;
        this.writeRef(ref, m);
      } else {
        const g = this.newNode(common, -1);
        const side = (k[common >>> 5] >>> (31 - (common & 31))) & 1;
        this.nodes[(g << 3) + LEFT + side] = m;
        this.nodes[(g << 3) + LEFT + 1 - side] = n;
        this.writeRef(ref, g);
      }
      if (++this.count > this.growAt) this.growRoot();
      return;
    }
  }

  /** Removes `network/prefixLength`; returns whether it was there. */
  delete(network: Words, prefixLength: number): boolean {
    this.checkKey(network, prefixLength);
    const k = this.key;
    let ref = prefixLength >= this.bits ? ~(network[0] >>> this.shift) : ~this.shortSlot;
    let parentRef = 0;
    let parent = -1;
    let n = this.readRef(ref);
    while (n >= 0) {
      const len = this.nodes[(n << 3) + META] & LEN_MASK;
      if (len >= prefixLength) break;
      parentRef = ref;
      parent = n;
      ref = (n << 3) + LEFT + ((k[len >>> 5] >>> (31 - (len & 31))) & 1);
      n = this.readRef(ref);
    }
    if (n < 0) return false;
    const nodes = this.nodes;
    const o = n << 3;
    const meta = nodes[o + META];
    if ((meta & LEN_MASK) !== prefixLength || !this.keyEquals(o) || (meta & HAS_VALUE) === 0) return false;
    this.count--;
    const left = nodes[o + LEFT];
    const right = nodes[o + RIGHT];
    if (left >= 0 && right >= 0) {
      nodes[o + META] = meta & ~HAS_VALUE;
      return true;
    }
    this.freeNode(n);
    if (left >= 0 || right >= 0) {
      this.writeRef(ref, left >= 0 ? left : right);
      return true;
    }
    this.writeRef(ref, -1);
    if (parent >= 0 && (nodes[(parent << 3) + META] & HAS_VALUE) === 0) {
      const po = parent << 3;
      this.writeRef(parentRef, nodes[po + LEFT] >= 0 ? nodes[po + LEFT] : nodes[po + RIGHT]);
      this.freeNode(parent);
    }
    return true;
  }

  protected growRoot(): void {
    const n = this.count;
    const keys = new Uint32Array(n * 4);
    const lens = new Uint8Array(n);
    const vals = new Int32Array(n);
    const cursor = this.cursor();
    for (let i = 0; cursor.next(); i++) {
      keys.set(cursor.network, i * 4);
      lens[i] = cursor.prefixLength;
      vals[i] = cursor.value;
    }
    this.resetWiderRoot(n);
    for (let i = 0; i < n; i++) this.set(keys.subarray(i * 4, i * 4 + 4), lens[i], vals[i]);
  }

  // -------------------------------------------------------------------------------------------------------
  // Walks (ascending by network, then by prefix length). The tree must not change during a walk.

  walk(visit: RadixVisitor6): boolean {
    return this.walkSubtree(ZERO, 0, visit);
  }

  walkSubtree(network: Words, prefixLength: number, visit: RadixVisitor6): boolean {
    const cursor = this.cursor(network, prefixLength);
    while (cursor.next()) if (visit(cursor.network, cursor.prefixLength, cursor.value) === false) return false;
    return true;
  }

  *entries(network: Words = ZERO, prefixLength = 0): Generator<RadixEntry6> {
    const cursor = this.cursor(network, prefixLength);
    while (cursor.next()) yield { network: cursor.network.slice(), prefixLength: cursor.prefixLength, value: cursor.value };
  }

  cursor(network: Words = ZERO, prefixLength = 0): RadixCursor6 {
    this.checkKey(network, prefixLength);
    const shortNodes: number[] = [];
    let firstBucket = 0;
    let endBucket = 0;
    let startNode = -1;
    if (prefixLength >= this.bits) {
      startNode = this.subtreeTop(this.roots[network[0] >>> this.shift], prefixLength);
    } else {
      firstBucket = network[0] >>> this.shift;
      endBucket = firstBucket + 2 ** (this.bits - prefixLength);
      const top = this.subtreeTop(this.roots[this.shortSlot], prefixLength);
      if (top >= 0) this.collectPreorder(top, shortNodes);
    }
    return new RadixCursor6(this.nodes, this.roots, this.shift, shortNodes, firstBucket, endBucket, startNode);
  }

  // -------------------------------------------------------------------------------------------------------
  // Serialization (compaction and the writing side are in radix-base.ts)

  /** `linksChecked`: the same bytes were deserialized once already (another thread), so their links are not walked again. */
  static deserialize(buffer: Uint8Array, options: { linksChecked?: boolean } = {}): RadixTree6 {
    return RadixTreeBase.load(buffer, LAYOUT, (o) => new RadixTree6(o), options.linksChecked === true);
  }

  /** `deserialize` with its copies made a few MiB a step (an edge's swap, between requests). */
  static deserializeInSteps(buffer: Uint8Array, options: { linksChecked?: boolean } = {}): Generator<void, RadixTree6> {
    return RadixTreeBase.loadInSteps(buffer, LAYOUT, (o) => new RadixTree6(o), options.linksChecked === true);
  }

  // -------------------------------------------------------------------------------------------------------
  // Internals. `this.key` holds the key of the operation in progress.

  /** Loads `words` masked to `prefixLength` into this.key. */
  private loadKey(words: Words, prefixLength: number): void {
    const k = this.key;
    for (let w = 0; w < 4; w++) k[w] = words[w] & MASK[wordBits(prefixLength, w)];
  }

  /** Validates and loads the key; host bits must be zero. */
  private checkKey(network: Words, prefixLength: number): void {
    if (!Number.isInteger(prefixLength) || prefixLength < 0 || prefixLength > 128) {
      throw new RangeError(`IPv6 prefix length ${prefixLength} is outside 0..128`);
    }
    if (network.length !== 4) throw new RangeError("an IPv6 key is four 32-bit words");
    this.loadKey(network, prefixLength);
    for (let w = 0; w < 4; w++) {
      if ((network[w] | 0) !== this.key[w]) throw new RangeError(`host bits set in an IPv6 key /${prefixLength}`);
    }
  }

  private keyEquals(o: number): boolean {
    const k = this.key;
    const nodes = this.nodes;
    return nodes[o] === k[0] && nodes[o + 1] === k[1] && nodes[o + 2] === k[2] && nodes[o + 3] === k[3];
  }

  /** Bits that this.key shares with the key of the node at offset o. */
  private commonPrefix(o: number): number {
    const k = this.key;
    for (let w = 0; w < 4; w++) {
      const x = k[w] ^ this.nodes[o + w];
      if (x !== 0) return 32 * w + Math.clz32(x);
    }
    return 128;
  }

  /** Whether the node at offset o, of length len, is a prefix of this.key. */
  private isPrefixOfKey(o: number, len: number): boolean {
    const k = this.key;
    const nodes = this.nodes;
    for (let w = 0; w < 4; w++) {
      const bits = wordBits(len, w);
      if (bits === 0) return true;
      if ((k[w] & MASK[bits]) !== nodes[o + w]) return false;
    }
    return true;
  }

  private lengthAt(n: number): number {
    return this.nodes[(n << 3) + META] & LEN_MASK;
  }

  private networkAt(n: number, out: Uint32Array): Uint32Array {
    const o = n << 3;
    for (let w = 0; w < 4; w++) out[w] = this.nodes[o + w];
    return out;
  }

  private findNode(network: Words, prefixLength: number): number {
    this.checkKey(network, prefixLength);
    const k = this.key;
    const nodes = this.nodes;
    let n = prefixLength >= this.bits ? this.roots[network[0] >>> this.shift] : this.roots[this.shortSlot];
    while (n >= 0) {
      const o = n << 3;
      const meta = nodes[o + META];
      const len = meta & LEN_MASK;
      if (len >= prefixLength) return len === prefixLength && this.keyEquals(o) && (meta & HAS_VALUE) !== 0 ? n : -1;
      n = nodes[o + LEFT + ((k[len >>> 5] >>> (31 - (len & 31))) & 1)];
    }
    return -1;
  }

  private longestMatchNode(address: Words, maxPrefixLength: number): number {
    this.loadKey(address, 128);
    if (maxPrefixLength >= this.bits) {
      const found = this.deepestOnPath(this.roots[address[0] >>> this.shift], maxPrefixLength);
      if (found >= 0) return found;
    }
    return this.deepestOnPath(this.roots[this.shortSlot], maxPrefixLength);
  }

  private deepestOnPath(n: number, maxLen: number): number {
    const nodes = this.nodes;
    const k = this.key;
    let best = -1;
    while (n >= 0) {
      const o = n << 3;
      const meta = nodes[o + META];
      const len = meta & LEN_MASK;
      if (len > maxLen || !this.isPrefixOfKey(o, len)) break;
      if ((meta & HAS_VALUE) !== 0) best = n;
      if (len === 128) break;
      n = nodes[o + LEFT + ((k[len >>> 5] >>> (31 - (len & 31))) & 1)];
    }
    return best;
  }

  private visitPath(n: number, maxLen: number, visit: RadixVisitor6, scratch: Uint32Array): boolean {
    const nodes = this.nodes;
    const k = this.key;
    while (n >= 0) {
      const o = n << 3;
      const meta = nodes[o + META];
      const len = meta & LEN_MASK;
      if (len > maxLen || !this.isPrefixOfKey(o, len)) break;
      if ((meta & HAS_VALUE) !== 0 && visit(this.networkAt(n, scratch), len, nodes[o + VALUE]) === false) return false;
      if (len === 128) break;
      n = nodes[o + LEFT + ((k[len >>> 5] >>> (31 - (len & 31))) & 1)];
    }
    return true;
  }

  private pathValues(n: number, maxLen: number, out: Int32Array | Uint32Array | number[], k: number): number {
    const nodes = this.nodes;
    const key = this.key;
    const room = Array.isArray(out) ? Infinity : out.length;
    while (n >= 0) {
      const o = n << 3;
      const meta = nodes[o + META];
      const len = meta & LEN_MASK;
      if (len > maxLen || !this.isPrefixOfKey(o, len)) break;
      if ((meta & HAS_VALUE) !== 0) {
        if (k < room) out[k] = nodes[o + VALUE];
        k++;
      }
      if (len === 128) break;
      n = nodes[o + LEFT + ((key[len >>> 5] >>> (31 - (len & 31))) & 1)];
    }
    return k;
  }

  /** The highest node under head n inside this.key/prefixLength, or -1. */
  private subtreeTop(n: number, prefixLength: number): number {
    const nodes = this.nodes;
    const k = this.key;
    while (n >= 0) {
      const o = n << 3;
      const len = nodes[o + META] & LEN_MASK;
      if (len >= prefixLength) {
        for (let w = 0; w < 4; w++) if ((nodes[o + w] & MASK[wordBits(prefixLength, w)]) !== k[w]) return -1;
        return n;
      }
      n = nodes[o + LEFT + ((k[len >>> 5] >>> (31 - (len & 31))) & 1)];
    }
    return -1;
  }

  private collectPreorder(n: number, out: number[]): void {
    const nodes = this.nodes;
    const stack = [n];
    while (stack.length > 0) {
      const m = stack.pop() as number;
      const o = m << 3;
      if ((nodes[o + META] & HAS_VALUE) !== 0) out.push(m);
      if (nodes[o + RIGHT] >= 0) stack.push(nodes[o + RIGHT]);
      if (nodes[o + LEFT] >= 0) stack.push(nodes[o + LEFT]);
    }
  }

  private newNode(prefixLength: number, value: number): number {
    const n = this.allocNode();
    const o = n << 3;
    const nodes = this.nodes;
    const k = this.key;
    for (let w = 0; w < 4; w++) nodes[o + w] = k[w] & MASK[wordBits(prefixLength, w)];
    nodes[o + META] = prefixLength | (value >= 0 ? HAS_VALUE : 0);
    nodes[o + LEFT] = -1;
    nodes[o + RIGHT] = -1;
    nodes[o + VALUE] = value >= 0 ? value : 0;
    return n;
  }
}

const ZERO = new Uint32Array(4);


// The IPv4 radix tree: 32-bit keys with prefix lengths, each entry holding a small integer value.
// See radix.ts for the structure; this file holds the IPv4 node layout and its operations.

import { type RadixOptions, NOT_FOUND, HAS_VALUE, LEN_MASK, checkValue } from "./radix-common";
import { type RadixLayout, RadixTreeBase } from "./radix-base";

/** One entry of an IPv4 tree. */
export interface RadixEntry4 {
  /** The network address as an unsigned 32-bit number. */
  network: number;
  prefixLength: number;
  value: number;
}

/** Receives entries of a walk; returning `false` stops the walk. */
export type RadixVisitor4 = (network: number, prefixLength: number, value: number) => void | boolean;

// Node layout: four int32 words per node.
const STRIDE = 4;
const KEY = 0; // the network, host bits zero (int32 view of the unsigned value)
const META = 1; // prefix length | HAS_VALUE | FREE
const LEFT = 2; // child whose next bit is 0; on a /32 node: ~value (negative, so never taken for a child)
const RIGHT = 3; // child whose next bit is 1; on a free node: the next free node

/** MASK[len]: the netmask of a prefix length, as int32. */
const MASK = new Int32Array(33);
for (let len = 1; len <= 32; len++) MASK[len] = -1 << (32 - len);

const LAYOUT: RadixLayout = { stride: STRIDE, meta: META, left: LEFT, right: RIGHT, fullLength: 32, magic: 0x34524941 /* "AIR4" */, separateValues: true };

// Automatic root size: start at 2^16 buckets and grow by four whenever the tree holds more than half as many
// entries as buckets, up to 2^22 (16 MiB): at most about one entry per bucket keeps a lookup at two or three
// cache misses.
export class RadixTree4 extends RadixTreeBase {
  constructor(options: RadixOptions = {}) {
    super(LAYOUT, options);
  }

  // -------------------------------------------------------------------------------------------------------
  // Lookups

  /**
   * The value stored for exactly `address`/32, or NOT_FOUND. No allocation: the lookup hot path. A negative
   * address (the -1 of a failed `tryParseIpv4Value`) finds nothing.
   */
  get(address: number): number {
    if (address < 0) return NOT_FOUND;
    const nodes = this.nodes;
    const key = address | 0;
    let n = this.roots[address >>> this.shift];
    while (n >= 0) {
      const o = n << 2;
      const len = nodes[o + META] & LEN_MASK;
      if (len === 32) return nodes[o + KEY] === key ? ~nodes[o + LEFT] : NOT_FOUND;
      n = nodes[o + LEFT + ((key >>> (31 - len)) & 1)];
    }
    return NOT_FOUND;
  }

  /** The value stored for exactly `network/prefixLength`, or NOT_FOUND. */
  getPrefix(network: number, prefixLength: number): number {
    const n = this.findNode(network, prefixLength);
    return n < 0 ? NOT_FOUND : this.valueAt(n);
  }

  /** The value of the longest stored prefix (up to `maxPrefixLength`) containing `address`, or NOT_FOUND. */
  longestMatch(address: number, maxPrefixLength = 32): number {
    const n = this.longestMatchNode(address, maxPrefixLength);
    return n < 0 ? NOT_FOUND : this.valueAt(n);
  }

  /** The longest stored prefix containing `address`, or null. */
  longestMatchEntry(address: number, maxPrefixLength = 32): RadixEntry4 | null {
    const n = this.longestMatchNode(address, maxPrefixLength);
    return n < 0 ? null : this.entryAt(n);
  }

  /**
   * Visits every stored prefix containing `address` (up to `maxPrefixLength`), shortest first. The address's
   * own /32 entry counts when `maxPrefixLength` is 32.
   */
  forEachEnclosing(address: number, visit: RadixVisitor4, maxPrefixLength = 32): void {
    if (maxPrefixLength >= this.bits) {
      if (!this.visitPath(this.roots[this.shortSlot], address, this.bits - 1, visit)) return;
      this.visitPath(this.roots[address >>> this.shift], address, maxPrefixLength, visit);
    } else {
      this.visitPath(this.roots[this.shortSlot], address, maxPrefixLength, visit);
    }
  }

  /**
   * The values of every stored prefix containing `address`, shortest first, written to `out` (a typed array
   * takes as many as fit, a plain array grows); returns how many were found. No allocation with a typed array.
   */
  enclosingValues(address: number, out: Int32Array | Uint32Array | number[], maxPrefixLength = 32): number {
    let k = 0;
    if (maxPrefixLength >= this.bits) {
      k = this.pathValues(this.roots[this.shortSlot], address, this.bits - 1, out, k);
      return this.pathValues(this.roots[address >>> this.shift], address, maxPrefixLength, out, k);
    }
    return this.pathValues(this.roots[this.shortSlot], address, maxPrefixLength, out, k);
  }

  /** Every stored prefix containing `address`, shortest first. */
  enclosing(address: number, maxPrefixLength = 32): RadixEntry4[] {
    const found: RadixEntry4[] = [];
    this.forEachEnclosing(address, (network, prefixLength, value) => void found.push({ network, prefixLength, value }), maxPrefixLength);
    return found;
  }

  // -------------------------------------------------------------------------------------------------------
  // Changes

  /** Inserts or updates `network/prefixLength` (host bits must be zero) with a value 0..2^31-1. */
  set(network: number, prefixLength: number, value: number): void {
    checkValue(value);
    const key = this.checkKey(network, prefixLength);
    let ref = prefixLength >= this.bits ? ~(network >>> this.shift) : ~this.shortSlot;
    for (;;) {
      const n = this.readRef(ref);
      if (n < 0) {
        this.writeRef(ref, this.newNode(key, prefixLength, value));
        if (++this.count > this.growAt) this.growRoot();
        return;
      }
      const o = n << 2;
      const nkey = this.nodes[o + KEY];
      const meta = this.nodes[o + META];
      const nlen = meta & LEN_MASK;
      let common = Math.clz32(key ^ nkey);
      if (common > nlen) common = nlen;
      if (common > prefixLength) common = prefixLength;
      if (common === nlen) {
        if (nlen === prefixLength) {
          this.setValueAt(n, value);
          if ((meta & HAS_VALUE) === 0) {
            this.nodes[o + META] = meta | HAS_VALUE;
            if (++this.count > this.growAt) this.growRoot();
          }
          return;
        }
        ref = o + LEFT + ((key >>> (31 - nlen)) & 1);
        continue;
      }
      // The new prefix and node n part ways at bit `common`.
      const m = this.newNode(key, prefixLength, value);
      if (common === prefixLength) {
        // The new prefix encloses n: it becomes n's parent.
        this.nodes[(m << 2) + LEFT + ((nkey >>> (31 - prefixLength)) & 1)] = n;
        this.writeRef(ref, m);
      } else {
        const g = this.newNode(key & MASK[common], common, -1);
        const side = (key >>> (31 - common)) & 1;
        this.nodes[(g << 2) + LEFT + side] = m;
        this.nodes[(g << 2) + LEFT + 1 - side] = n;
        this.writeRef(ref, g);
      }
      if (++this.count > this.growAt) this.growRoot();
      return;
    }
  }

  /** Removes `network/prefixLength`; returns whether it was there. */
  delete(network: number, prefixLength: number): boolean {
    const key = this.checkKey(network, prefixLength);
    let ref = prefixLength >= this.bits ? ~(network >>> this.shift) : ~this.shortSlot;
    let parentRef = 0;
    let parent = -1;
    let n = this.readRef(ref);
    while (n >= 0) {
      const len = this.nodes[(n << 2) + META] & LEN_MASK;
      if (len >= prefixLength) break;
      parentRef = ref;
      parent = n;
      ref = (n << 2) + LEFT + ((key >>> (31 - len)) & 1);
      n = this.readRef(ref);
    }
    if (n < 0) return false;
    const nodes = this.nodes;
    const o = n << 2;
    const meta = nodes[o + META];
    if ((meta & LEN_MASK) !== prefixLength || nodes[o + KEY] !== key || (meta & HAS_VALUE) === 0) return false;
    this.count--;
    const left = prefixLength === 32 ? -1 : nodes[o + LEFT];
    const right = prefixLength === 32 ? -1 : nodes[o + RIGHT];
    if (left >= 0 && right >= 0) {
      nodes[o + META] = meta & ~HAS_VALUE; // stays as a branching (glue) node
      return true;
    }
    this.freeNode(n);
    if (left >= 0 || right >= 0) {
      this.writeRef(ref, left >= 0 ? left : right);
      return true;
    }
    this.writeRef(ref, -1);
    // A glue parent always had two children; left with one, it goes too.
    if (parent >= 0 && (nodes[(parent << 2) + META] & HAS_VALUE) === 0) {
      const po = parent << 2;
      const other = nodes[po + LEFT] >= 0 ? nodes[po + LEFT] : nodes[po + RIGHT];
      this.writeRef(parentRef, other);
      this.freeNode(parent);
    }
    return true;
  }

  /** Rebuilds the tree over the widest root table, so buckets stay shallow as the tree grows. */
  protected growRoot(): void {
    const n = this.count;
    const keys = new Uint32Array(n);
    const lens = new Uint8Array(n);
    const vals = new Int32Array(n);
    const cursor = this.cursor();
    for (let i = 0; cursor.next(); i++) {
      keys[i] = cursor.network;
      lens[i] = cursor.prefixLength;
      vals[i] = cursor.value;
    }
    this.resetWiderRoot(n);
    for (let i = 0; i < n; i++) this.set(keys[i], lens[i], vals[i]);
  }

  // -------------------------------------------------------------------------------------------------------
  // Walks (ascending by network, then by prefix length). The tree must not change during a walk.

  /** Visits every entry in ascending order; returns false when the visitor stopped it. */
  walk(visit: RadixVisitor4): boolean {
    return this.walkSubtree(0, 0, visit);
  }

  /** Visits every entry inside `network/prefixLength` (itself included) in ascending order. */
  walkSubtree(network: number, prefixLength: number, visit: RadixVisitor4): boolean {
    const cursor = this.cursor(network, prefixLength);
    while (cursor.next()) if (visit(cursor.network, cursor.prefixLength, cursor.value) === false) return false;
    return true;
  }

  /** The entries inside `network/prefixLength` (default: all), ascending, one object each. */
  *entries(network = 0, prefixLength = 0): Generator<RadixEntry4> {
    const cursor = this.cursor(network, prefixLength);
    while (cursor.next()) yield { network: cursor.network, prefixLength: cursor.prefixLength, value: cursor.value };
  }

  /** A pull-style walk over the entries inside `network/prefixLength`, for streaming without a generator. */
  cursor(network = 0, prefixLength = 0): RadixCursor4 {
    this.checkKey(network, prefixLength);
    const shortNodes: number[] = [];
    let firstBucket = 0;
    let endBucket = 0;
    let startNode = -1;
    if (prefixLength >= this.bits) {
      startNode = this.subtreeTop(this.roots[network >>> this.shift], network, prefixLength);
    } else {
      firstBucket = network >>> this.shift;
      endBucket = firstBucket + 2 ** (this.bits - prefixLength);
      const top = this.subtreeTop(this.roots[this.shortSlot], network, prefixLength);
      if (top >= 0) this.collectPreorder(top, shortNodes);
    }
    return new RadixCursor4(this, this.nodes, this.roots, this.shift, shortNodes, firstBucket, endBucket, startNode);
  }

  // -------------------------------------------------------------------------------------------------------
  // Serialization (compaction and the writing side are in radix-base.ts)

  /** `linksChecked`: the same bytes were deserialized once already (another thread), so their links are not walked again. */
  static deserialize(buffer: Uint8Array, options: { linksChecked?: boolean } = {}): RadixTree4 {
    return RadixTreeBase.load(buffer, LAYOUT, (o) => new RadixTree4(o), options.linksChecked === true);
  }

  /** `deserialize` with its copies made a few MiB a step (an edge's swap, between requests). */
  static deserializeInSteps(buffer: Uint8Array, options: { linksChecked?: boolean } = {}): Generator<void, RadixTree4> {
    return RadixTreeBase.loadInSteps(buffer, LAYOUT, (o) => new RadixTree4(o), options.linksChecked === true);
  }

  // -------------------------------------------------------------------------------------------------------
  // Internals

  /** @internal the value of node n (which has one). */
  valueAt(n: number): number {
    const o = n << 2;
    return (this.nodes[o + META] & LEN_MASK) === 32 ? ~this.nodes[o + LEFT] : this.values[n];
  }

  private entryAt(n: number): RadixEntry4 {
    const o = n << 2;
    return { network: this.nodes[o + KEY] >>> 0, prefixLength: this.nodes[o + META] & LEN_MASK, value: this.valueAt(n) };
  }

  private setValueAt(n: number, value: number): void {
    const o = n << 2;
    if ((this.nodes[o + META] & LEN_MASK) === 32) this.nodes[o + LEFT] = ~value;
    else this.values[n] = value;
  }

  private checkKey(network: number, prefixLength: number): number {
    if (!Number.isInteger(prefixLength) || prefixLength < 0 || prefixLength > 32) {
      throw new RangeError(`IPv4 prefix length ${prefixLength} is outside 0..32`);
    }
    if (!Number.isInteger(network) || network < 0 || network > 0xffffffff) throw new RangeError(`not an IPv4 value: ${network}`);
    const key = network | 0;
    if ((key & MASK[prefixLength]) !== key) throw new RangeError(`host bits set in ${network}/${prefixLength}`);
    return key;
  }

  private findNode(network: number, prefixLength: number): number {
    const key = this.checkKey(network, prefixLength);
    const nodes = this.nodes;
    let n = prefixLength >= this.bits ? this.roots[network >>> this.shift] : this.roots[this.shortSlot];
    while (n >= 0) {
      const o = n << 2;
      const meta = nodes[o + META];
      const len = meta & LEN_MASK;
      if (len >= prefixLength) {
        return len === prefixLength && nodes[o + KEY] === key && (meta & HAS_VALUE) !== 0 ? n : -1;
      }
      n = nodes[o + LEFT + ((key >>> (31 - len)) & 1)];
    }
    return -1;
  }

  private longestMatchNode(address: number, maxPrefixLength: number): number {
    const key = address | 0;
    if (maxPrefixLength >= this.bits) {
      const found = this.deepestOnPath(this.roots[address >>> this.shift], key, maxPrefixLength);
      if (found >= 0) return found;
    }
    return this.deepestOnPath(this.roots[this.shortSlot], key, maxPrefixLength);
  }

  /** The deepest node with a value on the path of `key`, no longer than maxLen, from head n. */
  private deepestOnPath(n: number, key: number, maxLen: number): number {
    const nodes = this.nodes;
    let best = -1;
    while (n >= 0) {
      const o = n << 2;
      const meta = nodes[o + META];
      const len = meta & LEN_MASK;
      if (len > maxLen || (key & MASK[len]) !== nodes[o + KEY]) break;
      if ((meta & HAS_VALUE) !== 0) best = n;
      if (len === 32) break;
      n = nodes[o + LEFT + ((key >>> (31 - len)) & 1)];
    }
    return best;
  }

  /** Visits the nodes with a value on the path of `address`; false when the visitor stopped. */
  private visitPath(n: number, address: number, maxLen: number, visit: RadixVisitor4): boolean {
    const nodes = this.nodes;
    const key = address | 0;
    while (n >= 0) {
      const o = n << 2;
      const meta = nodes[o + META];
      const len = meta & LEN_MASK;
      if (len > maxLen || (key & MASK[len]) !== nodes[o + KEY]) break;
      if ((meta & HAS_VALUE) !== 0 && visit(nodes[o + KEY] >>> 0, len, this.valueAt(n)) === false) return false;
      if (len === 32) break;
      n = nodes[o + LEFT + ((key >>> (31 - len)) & 1)];
    }
    return true;
  }

  private pathValues(n: number, address: number, maxLen: number, out: Int32Array | Uint32Array | number[], k: number): number {
    const nodes = this.nodes;
    const key = address | 0;
    const room = Array.isArray(out) ? Infinity : out.length;
    while (n >= 0) {
      const o = n << 2;
      const meta = nodes[o + META];
      const len = meta & LEN_MASK;
      if (len > maxLen || (key & MASK[len]) !== nodes[o + KEY]) break;
      if ((meta & HAS_VALUE) !== 0) {
        if (k < room) out[k] = len === 32 ? ~nodes[o + LEFT] : this.values[n];
        k++;
      }
      if (len === 32) break;
      n = nodes[o + LEFT + ((key >>> (31 - len)) & 1)];
    }
    return k;
  }

  /** The highest node under head n lying inside network/prefixLength, or -1. */
  private subtreeTop(n: number, network: number, prefixLength: number): number {
    const nodes = this.nodes;
    const key = network | 0;
    while (n >= 0) {
      const o = n << 2;
      const len = nodes[o + META] & LEN_MASK;
      if (len >= prefixLength) return (nodes[o + KEY] & MASK[prefixLength]) === key ? n : -1;
      n = nodes[o + LEFT + ((key >>> (31 - len)) & 1)];
    }
    return -1;
  }

  private collectPreorder(n: number, out: number[]): void {
    const nodes = this.nodes;
    const stack = [n];
    while (stack.length > 0) {
      const m = stack.pop() as number;
      const o = m << 2;
      const meta = nodes[o + META];
      if ((meta & HAS_VALUE) !== 0) out.push(m);
      if ((meta & LEN_MASK) < 32) {
        if (nodes[o + RIGHT] >= 0) stack.push(nodes[o + RIGHT]);
        if (nodes[o + LEFT] >= 0) stack.push(nodes[o + LEFT]);
      }
    }
  }

  private newNode(key: number, prefixLength: number, value: number): number {
    const n = this.allocNode();
    const o = n << 2;
    const nodes = this.nodes;
    nodes[o + KEY] = key;
    nodes[o + META] = prefixLength | (value >= 0 ? HAS_VALUE : 0);
    nodes[o + LEFT] = -1;
    nodes[o + RIGHT] = -1;
    if (value >= 0) this.setValueAt(n, value);
    return n;
  }
}

/**
 * A pull-style walk: `while (cursor.next()) use(cursor.network, cursor.prefixLength, cursor.value)`.
 * Pre-order of each bucket's trie, with the short-prefix trie's entries merged in by network.
 */
export class RadixCursor4 {
  network = 0;
  prefixLength = 0;
  value = 0;
  private readonly stack = new Int32Array(72);
  private sp = 0;
  private shortIndex = 0;

  /** @internal */
  constructor(
    private readonly tree: RadixTree4,
    private readonly nodes: Int32Array,
    private readonly roots: Int32Array,
    private readonly shift: number,
    private readonly shortNodes: number[],
    private bucket: number,
    private readonly endBucket: number,
    startNode: number,
  ) {
    if (startNode >= 0) this.stack[this.sp++] = startNode;
  }

  next(): boolean {
    const nodes = this.nodes;
    const stack = this.stack;
    for (;;) {
      if (this.sp > 0) {
        const n = stack[--this.sp];
        const o = n << 2;
        const meta = nodes[o + META];
        const len = meta & LEN_MASK;
        if (len < 32) {
          if (nodes[o + RIGHT] >= 0) stack[this.sp++] = nodes[o + RIGHT];
          if (nodes[o + LEFT] >= 0) stack[this.sp++] = nodes[o + LEFT];
        }
        if ((meta & HAS_VALUE) === 0) continue;
        this.network = nodes[o + KEY] >>> 0;
        this.prefixLength = len;
        this.value = len === 32 ? ~nodes[o + LEFT] : this.tree.valueAt(n);
        return true;
      }
      while (this.bucket < this.endBucket && this.roots[this.bucket] < 0) this.bucket++;
      const bucketStart = this.bucket < this.endBucket ? this.bucket * 2 ** this.shift : Infinity;
      if (this.shortIndex < this.shortNodes.length) {
        const n = this.shortNodes[this.shortIndex];
        const network = nodes[(n << 2) + KEY] >>> 0;
        if (network <= bucketStart) {
          this.shortIndex++;
          this.network = network;
          this.prefixLength = nodes[(n << 2) + META] & LEN_MASK;
          this.value = this.tree.valueAt(n);
          return true;
        }
      }
      if (this.bucket >= this.endBucket) return false;
      stack[this.sp++] = this.roots[this.bucket++];
    }
  }
}

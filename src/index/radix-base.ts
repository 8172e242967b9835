// What the IPv4 and IPv6 radix trees share off the lookup path: the arrays and counters, the free list of nodes,
// the root table that grows with the tree, compaction and serialization. Each tree keeps its own node layout
// and its own lookups, inserts and cursors (radix4.ts, radix6.ts), specialized for its key width: those are
// the hot paths and were measured. The layout differs only in words per node and where a value lives; the
// base reads it from a RadixLayout.

import { allAtOnce } from "../domain/steps";
import { type RadixOptions, FREE, LEN_MASK, checkRootBits, checkTreeLinks, growInt32, readTreeBuffer, writeTreeBuffer } from "./radix-common";

export interface RadixLayout {
  /** Int32 words per node. */
  stride: number;
  /** Word offsets of the prefix length (with flags) and of the two children. */
  meta: number;
  left: number;
  right: number;
  /** 32 or 128: a node of this length is a leaf (no children). */
  fullLength: number;
  /** Serialization tag. */
  magic: number;
  /**
   * IPv4: values of shorter prefixes live in a separate array and a leaf keeps ~value in `left`. IPv6: every
   * node has a value word, so there is no separate array.
   */
  separateValues: boolean;
}

const AUTO_ROOT_BITS_MIN = 16;
/** The one size an automatic root table grows to (16 MiB of Int32 heads). */
export const AUTO_ROOT_BITS_MAX = 22;

/**
 * The size above which a root table of `rootBits` grows, straight to AUTO_ROOT_BITS_MAX: rebuilt at 2^15
 * entries that takes a few milliseconds, where growing by two bits at a time rebuilt it again at 2^17 and 2^19
 * entries, holding the event loop 45-190 ms at a million (issue 29).
 */
export function rootGrowthThreshold(rootBits: number): number {
  return rootBits >= AUTO_ROOT_BITS_MAX ? Infinity : 2 ** (AUTO_ROOT_BITS_MIN - 1);
}

export abstract class RadixTreeBase {
  protected bits: number;
  protected shift: number;
  protected shortSlot: number;
  /** The size above which the root table grows (Infinity when rootBits was fixed). */
  protected growAt: number;
  /** Bucket heads by the top `rootBits` bits, then the head of the trie of shorter prefixes. */
  protected roots: Int32Array;
  protected nodes: Int32Array;
  /** Values of nodes, when the layout keeps them apart (IPv4); empty otherwise. */
  protected values: Int32Array;
  protected top = 0;
  protected freeHead = -1;
  protected freeCount = 0;
  protected count = 0;

  protected constructor(
    protected readonly layout: RadixLayout,
    options: RadixOptions,
  ) {
    this.bits = checkRootBits(options.rootBits ?? AUTO_ROOT_BITS_MIN);
    this.shift = 32 - this.bits;
    this.shortSlot = 2 ** this.bits;
    this.growAt = options.rootBits === undefined ? rootGrowthThreshold(this.bits) : Infinity;
    this.roots = new Int32Array(this.shortSlot + 1).fill(-1);
    const capacity = Math.max(16, options.initialCapacity ?? 1024);
    this.nodes = new Int32Array(capacity * layout.stride);
    this.values = new Int32Array(layout.separateValues ? capacity : 0);
  }

  /** Bits of the direct root table; grows with the tree unless the options fixed it. */
  get rootBits(): number {
    return this.bits;
  }

  /** Number of entries (addresses and prefixes with a value). */
  get size(): number {
    return this.count;
  }

  /** Bytes held by the tree's arrays (allocated, including spare capacity). */
  get byteSize(): number {
    return this.roots.byteLength + this.nodes.byteLength + this.values.byteLength;
  }

  /** Removes every entry. */
  clear(): void {
    this.roots.fill(-1);
    this.top = 0;
    this.freeHead = -1;
    this.freeCount = 0;
    this.count = 0;
  }

  /** A link: a node word (ref ≥ 0) or a root slot (~ref). */
  protected readRef(ref: number): number {
    return ref >= 0 ? this.nodes[ref] : this.roots[~ref];
  }

  protected writeRef(ref: number, n: number): void {
    if (ref >= 0) this.nodes[ref] = n;
    else this.roots[~ref] = n;
  }

  /** Rebuilds the tree over the widest root table (AUTO_ROOT_BITS_MAX), its entries put back. */
  protected abstract growRoot(): void;

  /** The number of a node to fill: a freed one, or a new one at the end (the arrays grow as needed). */
  protected allocNode(): number {
    const { stride, right } = this.layout;
    if (this.freeHead >= 0) {
      const n = this.freeHead;
      this.freeHead = this.nodes[n * stride + right];
      this.freeCount--;
      return n;
    }
    if ((this.top + 1) * stride > this.nodes.length) this.nodes = growInt32(this.nodes, this.top, stride);
    if (this.layout.separateValues && this.top === this.values.length) this.values = growInt32(this.values, this.top, 1);
    return this.top++;
  }

  protected freeNode(n: number): void {
    const o = n * this.layout.stride;
    this.nodes[o + this.layout.meta] = FREE;
    this.nodes[o + this.layout.left] = -1;
    this.nodes[o + this.layout.right] = this.freeHead;
    this.freeHead = n;
    this.freeCount++;
  }

  /**
   * Empties the tree onto the widest root table, sized for `entries`: the first half of growing the root table.
   * The subclass, which walked its entries out before calling this, puts them back.
   */
  protected resetWiderRoot(entries: number): void {
    this.bits = AUTO_ROOT_BITS_MAX;
    this.shift = 32 - this.bits;
    this.shortSlot = 2 ** this.bits;
    this.growAt = rootGrowthThreshold(this.bits);
    this.roots = new Int32Array(this.shortSlot + 1).fill(-1);
    const capacity = Math.ceil(entries * 2.2);
    this.nodes = new Int32Array(capacity * this.layout.stride);
    if (this.layout.separateValues) this.values = new Int32Array(capacity);
    this.top = 0;
    this.freeHead = -1;
    this.freeCount = 0;
    this.count = 0;
  }

  // -------------------------------------------------------------------------------------------------------
  // Compaction: nodes renumbered in pre-order, so a walk reads memory forward and freed nodes are dropped.

  /** Renumbers the nodes in walk order and drops freed ones (after many deletes, or before serializing). */
  compact(): void {
    const c = this.compacted();
    this.roots = c.roots;
    this.nodes = c.nodes;
    this.values = c.values;
    this.top = c.top;
    this.freeHead = -1;
    this.freeCount = 0;
  }

  private compacted(): { roots: Int32Array; nodes: Int32Array; values: Int32Array; top: number } {
    const { stride, meta, left, right, fullLength, separateValues } = this.layout;
    const live = this.top - this.freeCount;
    const roots = new Int32Array(this.roots.length).fill(-1);
    const nodes = new Int32Array(Math.max(16, live) * stride);
    const values = new Int32Array(separateValues ? Math.max(16, live) : 0);
    const old = this.nodes;
    // Pending work: an old node, and the word in the new arrays that must point at its new number. A path
    // holds at most fullLength + 1 nodes, each leaving one sibling pending.
    const pendingNode = new Int32Array(2 * fullLength + 8);
    const pendingRef = new Int32Array(2 * fullLength + 8);
    let next = 0;
    for (let i = -1; i < this.shortSlot; i++) {
      const slot = i < 0 ? this.shortSlot : i;
      if (this.roots[slot] < 0) continue;
      let sp = 0;
      pendingNode[sp] = this.roots[slot];
      pendingRef[sp++] = ~slot;
      while (sp > 0) {
        const m = pendingNode[--sp];
        const ref = pendingRef[sp];
        const n = next++;
        if (ref >= 0) nodes[ref] = n;
        else roots[~ref] = n;
        const o = m * stride;
        const on = n * stride;
        nodes.set(old.subarray(o, o + stride), on);
        // A leaf keeps its words as they are (IPv4 holds ~value in `left`); others get their links anew.
        if ((old[o + meta] & LEN_MASK) === fullLength) continue;
        if (separateValues) values[n] = this.values[m];
        nodes[on + left] = -1;
        nodes[on + right] = -1;
        if (old[o + right] >= 0) {
          pendingNode[sp] = old[o + right];
          pendingRef[sp++] = on + right;
        }
        if (old[o + left] >= 0) {
          pendingNode[sp] = old[o + left];
          pendingRef[sp++] = on + left;
        }
      }
    }
    return { roots, nodes, values, top: next };
  }

  // -------------------------------------------------------------------------------------------------------
  // Serialization: one byte buffer (little-endian int32 words) holding the compacted arrays as they are.

  /**
   * The tree in one buffer; the subclass's `deserialize` reads it back. A tree with no freed nodes is written as
   * it is (a copy of its arrays: the periodic index file of a running server must not stall it for a re-walk);
   * one with freed nodes is compacted first (see compact()), which also renumbers the nodes in walk order.
   */
  serialize(): Uint8Array {
    const c = this.freeCount === 0 ? { roots: this.roots, nodes: this.nodes, values: this.values, top: this.top } : this.compacted();
    const { stride, separateValues, magic } = this.layout;
    const fixedRoot = this.growAt === Infinity && this.bits < AUTO_ROOT_BITS_MAX ? 1 : 0;
    const arrays = [c.roots, c.nodes.subarray(0, c.top * stride)];
    if (separateValues) arrays.push(c.values.subarray(0, c.top));
    return writeTreeBuffer(magic, this.bits, [this.count, c.top, fixedRoot], arrays);
  }

  /** Reads what `serialize` wrote into `make({ rootBits, initialCapacity })`, a new empty tree of the subclass. */
  protected static load<T extends RadixTreeBase>(buffer: Uint8Array, layout: RadixLayout, make: (options: RadixOptions) => T, linksChecked = false): T {
    return allAtOnce(RadixTreeBase.loadInSteps(buffer, layout, make, linksChecked));
  }

  /**
   * `load`, its arrays copied LOAD_STEP_ELEMENTS at a time with a yield between: a tree of a million addresses is
   * tens of MiB, and one copy held an edge's event loop 100-120 ms at a swap (loaded machine). The buffer must not
   * change between steps.
   */
  protected static *loadInSteps<T extends RadixTreeBase>(buffer: Uint8Array, layout: RadixLayout, make: (options: RadixOptions) => T, linksChecked = false): Generator<void, T> {
    const { rootBits, header, arrays } = readTreeBuffer(buffer, layout.magic, layout.separateValues ? 3 : 2);
    const [count, top, fixedRoot] = header;
    const tree = make({ rootBits, initialCapacity: top });
    tree.growAt = fixedRoot === 1 ? Infinity : rootGrowthThreshold(rootBits);
    if (arrays[0].length !== tree.roots.length || arrays[1].length !== top * layout.stride || (layout.separateValues && arrays[2].length !== top)) {
      throw new RangeError("radix buffer: array sizes do not match the header");
    }
    yield;
    yield* copyInSteps(tree.roots, arrays[0]);
    yield* copyInSteps(tree.nodes, arrays[1]);
    if (layout.separateValues) yield* copyInSteps(tree.values, arrays[2]);
    tree.top = top;
    tree.count = count;
    if (!linksChecked)
      checkTreeLinks(tree.roots, tree.nodes, top, {
      stride: layout.stride,
      meta: layout.meta,
      left: layout.left,
      right: layout.right,
      maxLength: layout.fullLength,
      leafHoldsValue: layout.separateValues,
    });
    // A file written when the root grew by two bits at a time: grown now, while loading, not at a later insert.
    if (tree.count > tree.growAt) tree.growRoot();
    return tree;
  }
}

/** Elements of a tree's array copied between two yields of loadInSteps: 4 MiB of Int32, about a millisecond. */
const LOAD_STEP_ELEMENTS = 1 << 20;

function* copyInSteps(into: Int32Array, from: Int32Array): Generator<void, void> {
  for (let at = 0; at < from.length; at += LOAD_STEP_ELEMENTS) {
    into.set(from.subarray(at, at + LOAD_STEP_ELEMENTS), at);
    if (at + LOAD_STEP_ELEMENTS < from.length) yield;
  }
}

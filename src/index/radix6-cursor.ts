// A pull-style walk over an IPv6 radix tree (radix6.ts): pre-order of each bucket's trie, with the short-prefix
// trie's entries merged in by network.

import { HAS_VALUE, LEN_MASK } from "./radix-common";
import { LEFT, META, RIGHT, VALUE } from "./radix6-layout";

/** A pull-style walk over an IPv6 tree; `network` is reused between steps (copy it to keep it). */
export class RadixCursor6 {
  readonly network = new Uint32Array(4);
  prefixLength = 0;
  value = 0;
  private readonly stack = new Int32Array(264);
  private sp = 0;
  private shortIndex = 0;

  /** @internal */
  constructor(
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
        const o = n << 3;
        if (nodes[o + RIGHT] >= 0) stack[this.sp++] = nodes[o + RIGHT];
        if (nodes[o + LEFT] >= 0) stack[this.sp++] = nodes[o + LEFT];
        if ((nodes[o + META] & HAS_VALUE) === 0) continue;
        this.load(o);
        return true;
      }
      while (this.bucket < this.endBucket && this.roots[this.bucket] < 0) this.bucket++;
      const bucketStart = this.bucket < this.endBucket ? this.bucket * 2 ** this.shift : Infinity;
      if (this.shortIndex < this.shortNodes.length) {
        const o = this.shortNodes[this.shortIndex] << 3;
        // A short prefix has only its first word set; it sorts before the bucket it starts.
        if (nodes[o] >>> 0 <= bucketStart) {
          this.shortIndex++;
          this.load(o);
          return true;
        }
      }
      if (this.bucket >= this.endBucket) return false;
      stack[this.sp++] = this.roots[this.bucket++];
    }
  }

  private load(o: number): void {
    const nodes = this.nodes;
    this.network[0] = nodes[o];
    this.network[1] = nodes[o + 1];
    this.network[2] = nodes[o + 2];
    this.network[3] = nodes[o + 3];
    this.prefixLength = nodes[o + META] & LEN_MASK;
    this.value = nodes[o + VALUE];
  }
}

// The listed IPv4 networks flattened for lookups (contract 12): the address space cut into intervals, each with
// the slot of the narrowest listed network covering it (or none), and a direct table by the top 16 bits that
// narrows each lookup to the few intervals of its /16. A longest-prefix match through the radix tree walks the
// trie of short prefixes (every /8../21 network lives there) on each lookup of an unreported address; this
// answers the same in one table read and one or two probes. Rebuilt from the tree when the networks change
// (listed networks change with feeds, not with every report).

import { NOT_FOUND } from "./radix-common";
import type { RadixTree4 } from "./radix4";

const BUCKET_BITS = 16;
const BUCKETS = 1 << BUCKET_BITS;

export class NetworkIntervals4 {
  private constructor(
    /** Interval i covers [starts[i], starts[i+1]-1]; starts[0] is 0. */
    private readonly starts: Uint32Array,
    /** The slot of the narrowest network covering interval i, or NOT_FOUND. */
    private readonly slots: Int32Array,
    /** bucket[k]: the interval holding address k << 16; bucket[BUCKETS]: the last interval. */
    private readonly bucket: Int32Array,
  ) {}

  /** From the network entries (prefix shorter than /32) of `tree`; its /32 entries are left out. */
  static fromTree(tree: RadixTree4): NetworkIntervals4 {
    const starts: number[] = [0];
    const slots: number[] = [NOT_FOUND];
    const point = (at: number, slot: number) => {
      if (at > 0xffffffff) return;
      if (starts[starts.length - 1] === at) {
        slots[slots.length - 1] = slot;
        // The overwrite may make it equal to the interval before: merge them.
        if (starts.length > 1 && slots[slots.length - 2] === slot) {
          starts.pop();
          slots.pop();
        }
        return;
      }
      if (slots[slots.length - 1] === slot) return;
      starts.push(at);
      slots.push(slot);
    };
    // The walk visits networks ascending by address, a network before those inside it: CIDRs nest or are
    // apart, so the networks open at any point form a stack, the innermost on top.
    const openEnds: number[] = [];
    const openSlots: number[] = [];
    const close = (before: number) => {
      while (openEnds.length > 0 && openEnds[openEnds.length - 1] < before) {
        const end = openEnds.pop() as number;
        openSlots.pop();
        point(end + 1, openSlots.length > 0 ? openSlots[openSlots.length - 1] : NOT_FOUND);
      }
    };
    tree.walk((key, prefixLength, slot) => {
      if (prefixLength === 32) return;
      const network = key >>> 0;
      close(network);
      point(network, slot);
      openEnds.push(network + 2 ** (32 - prefixLength) - 1);
      openSlots.push(slot);
    });
    close(2 ** 32);
    const startArray = Uint32Array.from(starts);
    const slotArray = Int32Array.from(slots);
    const bucket = new Int32Array(BUCKETS + 1);
    let i = 0;
    for (let k = 0; k < BUCKETS; k++) {
      const first = k * BUCKETS;
      while (i + 1 < startArray.length && startArray[i + 1] <= first) i++;
      bucket[k] = i;
    }
    bucket[BUCKETS] = startArray.length - 1;
    return new NetworkIntervals4(startArray, slotArray, bucket);
  }

  /** The slot of the narrowest listed network containing `address`, or NOT_FOUND. */
  lookup(address: number): number {
    const k = address >>> BUCKET_BITS;
    let lo = this.bucket[k];
    let hi = this.bucket[k + 1];
    const starts = this.starts;
    // The last interval starting at or before the address, between the intervals holding this /16's first
    // address and the next /16's.
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (starts[mid] <= address) lo = mid;
      else hi = mid - 1;
    }
    return this.slots[lo];
  }

  get intervals(): number {
    return this.starts.length;
  }
}

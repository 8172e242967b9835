// Groups of numbered slots, each group a circular doubly linked list kept in two typed arrays, so a group costs
// one map entry and a slot eight bytes, and the garbage collector has nothing per slot to visit. A slot joins at
// the end of its group and leaves from anywhere in constant time; a group lists its slots in the order they
// joined. A slot is in at most one group at a time.

import { grownTo } from "./typed-arrays";

export class SlotGroups<K> {
  private next: Int32Array;
  private prev: Int32Array;
  /** The first slot of each group (its last is prev[first]). */
  private readonly firsts = new Map<K, number>();

  constructor(capacity: number) {
    this.next = new Int32Array(capacity);
    this.prev = new Int32Array(capacity);
  }

  /** Makes room for slots up to `capacity` - 1. */
  grow(capacity: number): void {
    this.next = grownTo(this.next, capacity);
    this.prev = grownTo(this.prev, capacity);
  }

  /** The number of groups. */
  get groupCount(): number {
    return this.firsts.size;
  }

  /** The group's first slot (the one that joined first), or -1 when the group is empty. */
  first(key: K): number {
    return this.firsts.get(key) ?? -1;
  }

  /** The slot after `slot` in its group; after the last comes the first again. */
  following(slot: number): number {
    return this.next[slot];
  }

  append(key: K, slot: number): void {
    const first = this.firsts.get(key);
    if (first === undefined) {
      this.firsts.set(key, slot);
      this.next[slot] = slot;
      this.prev[slot] = slot;
      return;
    }
    const last = this.prev[first];
    this.next[last] = slot;
    this.prev[slot] = last;
    this.next[slot] = first;
    this.prev[first] = slot;
  }

  /** Takes `slot` out of the group `key` (which must hold it); an emptied group is dropped. */
  remove(key: K, slot: number): void {
    const n = this.next[slot];
    if (n === slot) {
      this.firsts.delete(key);
      return;
    }
    const p = this.prev[slot];
    this.next[p] = n;
    this.prev[n] = p;
    if (this.firsts.get(key) === slot) this.firsts.set(key, n);
  }

  /** How many slots the group holds, counted up to `atMost` (nothing allocated). */
  sizeOf(key: K, atMost: number): number {
    const first = this.firsts.get(key);
    if (first === undefined) return 0;
    let n = 1;
    for (let s = this.next[first]; s !== first && n < atMost; s = this.next[s]) n++;
    return n;
  }
}

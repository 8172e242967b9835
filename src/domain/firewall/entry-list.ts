// The entries of a pulled blocklist, kept compactly so that the next sync can tell what changed: IPv4 entries as
// numbers (address * 64 + prefix length) in a typed array, ascending, IPv6 entries as the appliance's text. A
// million IPv4 entries take 8 MB; the difference of two lists is one merge.

import type { ChunkWriter } from "../blocklist/chunk-writer";
import { grownTo } from "../typed-arrays";
import type { EntrySink } from "./blocklist-body";

export class EntryList implements EntrySink {
  private keys4 = new Float64Array(1024);
  private count4 = 0;
  private sorted = true;
  readonly ipv6Entries = new Set<string>();

  ipv4(value: number, prefixLength: number): void {
    const key = value * 64 + prefixLength;
    if (this.count4 === this.keys4.length) this.keys4 = grownTo(this.keys4, this.keys4.length * 2);
    if (this.count4 > 0 && key <= this.keys4[this.count4 - 1]) this.sorted = false;
    this.keys4[this.count4++] = key;
  }

  ipv6(text: string): void {
    this.ipv6Entries.add(text);
  }

  get size(): number {
    return this.count4 + this.ipv6Entries.size;
  }

  /** The IPv4 keys, ascending (sorted here if they did not come so; the appliance sends them so). */
  ipv4Keys(): Float64Array {
    if (!this.sorted) {
      const unique = Float64Array.from(new Set(this.keys4.subarray(0, this.count4))).sort();
      this.keys4 = unique;
      this.count4 = unique.length;
      this.sorted = true;
    }
    return this.keys4.subarray(0, this.count4);
  }
}

/** Writes an IPv4 key as nft and ipset take it: `a.b.c.d` or `a.b.c.d/n`. */
export function writeIpv4Key(w: ChunkWriter, key: number): void {
  const prefixLength = key % 64;
  w.ipv4((key - prefixLength) / 64);
  if (prefixLength !== 32) {
    w.byte(47);
    w.uint(prefixLength);
  }
}

/**
 * The IPv4 entries as the fewest intervals: neighbours (an address or network that begins where the previous
 * one ends) joined, as nft's interval sets take them (`a.b.c.d-e.f.g.h`). Each element costs nft and the kernel
 * the same whatever it spans, so runs of neighbours (scanners in one hosting range) cost one element each.
 */
export interface Ipv4Ranges {
  firsts: Uint32Array;
  lasts: Uint32Array;
  count: number;
}

export function ipv4Ranges(list: EntryList): Ipv4Ranges {
  const keys = list.ipv4Keys();
  const firsts = new Uint32Array(keys.length);
  const lasts = new Uint32Array(keys.length);
  let count = 0;
  for (const key of keys) {
    const prefixLength = key % 64;
    const first = (key - prefixLength) / 64;
    const last = first + 2 ** (32 - prefixLength) - 1;
    // Neighbours join; so do overlaps, which the appliance never sends (a covered address is left out) but which
    // nft would refuse.
    if (count > 0 && first <= lasts[count - 1] + 1) lasts[count - 1] = Math.max(lasts[count - 1], last);
    else {
      firsts[count] = first;
      lasts[count] = last;
      count++;
    }
  }
  return { firsts, lasts, count };
}

/** Writes an interval as nft takes it: `a.b.c.d` for one address, else `a.b.c.d-e.f.g.h`. */
export function writeIpv4Range(w: ChunkWriter, first: number, last: number): void {
  w.ipv4(first);
  if (last !== first) {
    w.byte(45); // "-"
    w.ipv4(last);
  }
}

/** The intervals of `b` that `a` does not have, and those of `a` that `b` does not (each as [first, last]). */
export function rangeDifference(a: Ipv4Ranges, b: Ipv4Ranges): { added: [number, number][]; removed: [number, number][] } {
  const added: [number, number][] = [];
  const removed: [number, number][] = [];
  let i = 0;
  let j = 0;
  while (i < a.count || j < b.count) {
    if (j >= b.count || (i < a.count && (a.firsts[i] < b.firsts[j] || (a.firsts[i] === b.firsts[j] && a.lasts[i] !== b.lasts[j])))) {
      removed.push([a.firsts[i], a.lasts[i]]);
      // The same first with another last: the new interval is added in its turn.
      if (j < b.count && a.firsts[i] === b.firsts[j]) {
        added.push([b.firsts[j], b.lasts[j]]);
        j++;
      }
      i++;
    } else if (i >= a.count || b.firsts[j] < a.firsts[i]) {
      added.push([b.firsts[j], b.lasts[j]]);
      j++;
    } else {
      i++;
      j++;
    }
  }
  return { added, removed };
}

export interface EntryDifference {
  added4: number[];
  removed4: number[];
  added6: string[];
  removed6: string[];
}

export const changesOf = (d: EntryDifference): { added: number; removed: number } => ({
  added: d.added4.length + d.added6.length,
  removed: d.removed4.length + d.removed6.length,
});

/** What `next` adds to `held` and what it drops from it. */
export function entryDifference(held: EntryList, next: EntryList): EntryDifference {
  const a = held.ipv4Keys();
  const b = next.ipv4Keys();
  const added4: number[] = [];
  const removed4: number[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i] < b[j])) removed4.push(a[i++]);
    else if (i >= a.length || b[j] < a[i]) added4.push(b[j++]);
    else {
      i++;
      j++;
    }
  }
  const added6: string[] = [];
  const removed6: string[] = [];
  for (const e of next.ipv6Entries) if (!held.ipv6Entries.has(e)) added6.push(e);
  for (const e of held.ipv6Entries) if (!next.ipv6Entries.has(e)) removed6.push(e);
  return { added4, removed4, added6, removed6 };
}

// Which address each slot of the reputation index holds: the way back from a slot to its address, which the trees
// only give by a walk of everything (60-80 ms at 1 M addresses). Made on first need by one walk, then kept
// current by the index, so that finding the addresses whose oldest report passed retention is a scan of a typed
// array (a few milliseconds at 1 M) instead of a walk, and lists can drop them at once.

import { type Ip, ipFromWords, ipv4FromNumber } from "../domain/ip";
import { grownTo } from "../domain/typed-arrays";

const NONE = 0;

export class SlotAddresses {
  /** Per slot: 4 or 6 when it holds an address, 0 when it is free or holds a network. */
  private family: Uint8Array;
  /** Per slot, four words: an IPv4 address in the first, an IPv6 address in all four. */
  private words: Uint32Array;

  constructor(capacity: number) {
    this.family = new Uint8Array(capacity);
    this.words = new Uint32Array(capacity * 4);
  }

  /** Bytes of its arrays (for the index's memory gauge). */
  get byteSize(): number {
    return this.family.byteLength + this.words.byteLength;
  }

  set(slot: number, ip: Ip): void {
    if (ip.version === 4) this.setIpv4(slot, ip.value);
    else this.setIpv6(slot, ip.words);
  }

  setIpv4(slot: number, value: number): void {
    this.family[slot] = 4;
    this.words[slot * 4] = value;
  }

  setIpv6(slot: number, words: ArrayLike<number>): void {
    this.family[slot] = 6;
    this.words.set(words, slot * 4);
  }

  clear(slot: number): void {
    this.family[slot] = NONE;
  }

  holdsAddress(slot: number): boolean {
    return this.family[slot] !== NONE;
  }

  /** The address slot `slot` holds (the caller checked holdsAddress). */
  addressAt(slot: number): Ip {
    return this.family[slot] === 4 ? ipv4FromNumber(this.words[slot * 4]) : ipFromWords(this.words.subarray(slot * 4, slot * 4 + 4));
  }

  grow(capacity: number): void {
    this.family = grownTo(this.family, capacity);
    this.words = grownTo(this.words, capacity * 4);
  }
}

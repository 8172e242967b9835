// A set of IPv4/IPv6 networks (CIDRs) with an id each, answering "which networks contain this address" through
// the radix trees: used for the allowlist and, later, listed networks of feeds.

import { emitIpv4Outside, emitIpv6Outside, type Ipv4BlockSink } from "../domain/aggregate";
import type { Cidr, Ip } from "../domain/ip";
import { NOT_FOUND } from "./radix-common";
import { RadixTree4 } from "./radix4";
import { RadixTree6 } from "./radix6";

export class CidrSet {
  private v4 = new RadixTree4({ rootBits: 8 });
  private v6 = new RadixTree6();

  get size(): number {
    return this.v4.size + this.v6.size;
  }

  add(cidr: Cidr, id: number): void {
    if (cidr.version === 4) this.v4.set((cidr.network as { value: number }).value, cidr.prefixLength, id);
    else this.v6.set((cidr.network as { words: Uint32Array }).words, cidr.prefixLength, id);
  }

  delete(cidr: Cidr): boolean {
    if (cidr.version === 4) return this.v4.delete((cidr.network as { value: number }).value, cidr.prefixLength);
    return this.v6.delete((cidr.network as { words: Uint32Array }).words, cidr.prefixLength);
  }

  clear(): void {
    this.v4.clear();
    this.v6.clear();
  }

  /** The id of the most specific network containing `ip`, or -1. */
  match(ip: Ip): number {
    return ip.version === 4 ? this.v4.longestMatch(ip.value) : this.v6.longestMatch(ip.words);
  }

  contains(ip: Ip): boolean {
    return this.match(ip) !== NOT_FOUND;
  }

  containsV4(value: number): boolean {
    return this.v4.longestMatch(value) !== NOT_FOUND;
  }

  containsV6(words: ArrayLike<number>): boolean {
    return this.v6.longestMatch(words) !== NOT_FOUND;
  }

  /**
   * Emits the blocks of `network`/`prefixLength` that no network of the set touches, ascending: the network
   * itself when none does, nothing when one holds all of it, else the blocks around the ones inside it.
   */
  eachBlockOutsideV4(network: number, prefixLength: number, emit: Ipv4BlockSink): void {
    if (this.v4.size === 0) return emit(network, prefixLength);
    if (this.v4.longestMatch(network, prefixLength) !== NOT_FOUND) return;
    // An address the set does not hold is outside it whole.
    if (prefixLength === 32) return emit(network, 32);
    emitIpv4Outside(network, prefixLength, (visit) => void this.v4.walkSubtree(network, prefixLength, visit), emit);
  }

  /** eachBlockOutsideV4 for IPv6 (a block's words may be a scratch array: copy them to keep them). */
  eachBlockOutsideV6(network: ArrayLike<number>, prefixLength: number, emit: (network: ArrayLike<number>, prefixLength: number) => void): void {
    if (this.v6.size === 0) return emit(network, prefixLength);
    if (this.v6.longestMatch(network, prefixLength) !== NOT_FOUND) return;
    if (prefixLength === 128) return emit(network, 128);
    emitIpv6Outside(network, prefixLength, (visit) => void this.v6.walkSubtree(network, prefixLength, visit), emit);
  }
}

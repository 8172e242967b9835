// A set of IPv4/IPv6 networks (CIDRs) with an id each, answering "which networks contain this address" through
// the radix trees: used for the allowlist and, later, listed networks of feeds.

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
}

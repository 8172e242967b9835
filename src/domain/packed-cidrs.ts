// A list's CIDRs packed in one Uint32Array, five words each (IP version and prefix length, then the network's
// words): what a feed list parsed on a worker thread hands to the event loop's thread (issue 29). A million
// entries are 20 MB in one buffer instead of three to four million small objects the collector walks on every
// full collection; each CIDR is made as an object only when a step of the change reads it.

import { type Cidr, formatIpv6, type Ip, ipv4FromNumber } from "./ip";

const WORDS = 5;

/** A sequence of CIDRs read by index: an array of them, or PackedCidrs. */
export interface CidrSequence {
  readonly length: number;
  at(index: number): Cidr | undefined;
}

export class PackedCidrs implements CidrSequence {
  private constructor(
    /** WORDS words an entry: `version << 8 | prefixLength`, then the IPv4 value or the four IPv6 words. */
    readonly words: Uint32Array,
    readonly length: number,
  ) {}

  static pack(cidrs: readonly Cidr[]): PackedCidrs {
    const words = new Uint32Array(cidrs.length * WORDS);
    for (let i = 0; i < cidrs.length; i++) {
      const c = cidrs[i]!;
      const o = i * WORDS;
      words[o] = (c.version << 8) | c.prefixLength;
      if (c.network.version === 4) words[o + 1] = c.network.value;
      else words.set(c.network.words, o + 1);
    }
    return new PackedCidrs(words, cidrs.length);
  }

  /** The packed words as another thread sent them (`words.buffer` transferred). */
  static fromWords(words: Uint32Array): PackedCidrs {
    if (words.length % WORDS !== 0) throw new RangeError(`packed CIDRs hold ${WORDS} words each, got ${words.length} words`);
    return new PackedCidrs(words, words.length / WORDS);
  }

  at(index: number): Cidr | undefined {
    if (!Number.isInteger(index) || index < 0 || index >= this.length) return undefined;
    const o = index * WORDS;
    const head = this.words[o]!;
    let network: Ip;
    if (head >>> 8 === 4) network = ipv4FromNumber(this.words[o + 1]!);
    else {
      const words = this.words.slice(o + 1, o + 1 + 4);
      network = { version: 6, words, text: formatIpv6(words) };
    }
    const prefixLength = head & 0xff;
    // As tryParseCidr makes them: the network as parsed (host bits zero), its text with the prefix length.
    return { version: network.version, network, prefixLength, text: `${network.text}/${prefixLength}` };
  }
}

// The radix trees against simple reference models (a Map keyed by fixed-width hex text, whose sorted keys are
// the expected walk order) over many random inserts, deletes and lookups, for IPv4 and IPv6.

import { describe, expect, test } from "bun:test";
import { IpRadixTree, NOT_FOUND, RadixTree4, RadixTree6 } from "../../../src/index/radix";
import { parseCidr, parseIp } from "../../../src/domain/ip";
import { rngUnit as rng } from "../../support/random";

const mask4 = (len: number) => (len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0);
const hex8 = (v: number) => v.toString(16).padStart(8, "0");
const hex32 = (w: ArrayLike<number>) => Array.from({ length: 4 }, (_, i) => hex8(w[i] >>> 0)).join("");

function mask6(w: ArrayLike<number>, len: number): Uint32Array {
  const out = new Uint32Array(4);
  for (let i = 0; i < 4; i++) out[i] = (w[i] & mask4(Math.min(32, Math.max(0, len - 32 * i)))) >>> 0;
  return out;
}

/** The radix trees' shared API, over keys of one family (a number for IPv4, four words for IPv6). */
interface Tree<K> {
  readonly size: number;
  readonly rootBits: number;
  readonly byteSize: number;
  set(network: K, prefixLength: number, value: number): void;
  delete(network: K, prefixLength: number): boolean;
  get(address: K): number;
  getPrefix(network: K, prefixLength: number): number;
  longestMatch(address: K, maxPrefixLength?: number): number;
  enclosing(address: K, maxPrefixLength?: number): { network: K; prefixLength: number; value: number }[];
  enclosingValues(address: K, out: number[], maxPrefixLength?: number): number;
  walk(visit: (network: K, prefixLength: number, value: number) => void | boolean): boolean;
  walkSubtree(network: K, prefixLength: number, visit: (network: K, prefixLength: number, value: number) => void | boolean): boolean;
  entries(network?: K, prefixLength?: number): Iterable<{ network: K; prefixLength: number; value: number }>;
  serialize(): Uint8Array;
  compact(): void;
}

/** What the tests need of a family: its tree, its keys, and random keys that nest and collide. */
interface Family<K> {
  name: string;
  full: number;
  rootBitsToTry: (number | undefined)[];
  make(options?: { rootBits?: number; initialCapacity?: number }): Tree<K>;
  deserialize(buffer: Uint8Array): Tree<K>;
  randomPrefix(r: () => number): [K, number];
  mask(k: K, len: number): K;
  hex(k: K): string;
  /** An address near `k`: nearby host bits, so lookups land inside and outside stored prefixes. */
  near(k: K, r: () => number): K;
  /** `n` distinct random addresses for the root growth test. */
  spread(r: () => number, n: number): K[];
  /** The first network of a walk-stopping test, i-th of 100 disjoint /8s (or /32s). */
  disjoint(i: number): [K, number];
}

const IPV4: Family<number> = {
  name: "IPv4",
  full: 32,
  rootBitsToTry: [1, 4, 8, 16, undefined],
  make: (options) => new RadixTree4(options) as unknown as Tree<number>,
  deserialize: (b) => RadixTree4.deserialize(b) as unknown as Tree<number>,
  /** Keys clustered in a few regions so prefixes nest and collide; lengths mostly /32. */
  randomPrefix(r) {
    const regions = [0x00000000, 0x0a000000, 0x7f000000, 0xc0a80000, 0xfffff000, 0xcb007100];
    const base = regions[Math.floor(r() * regions.length)];
    const address = (base + Math.floor(r() * 0x2000) * (r() < 0.5 ? 1 : 0x101)) >>> 0;
    const len = r() < 0.6 ? 32 : Math.floor(r() * 33);
    return [(address & mask4(len)) >>> 0, len];
  },
  mask: (k, len) => (k & mask4(len)) >>> 0,
  hex: hex8,
  near: (k, r) => (k + Math.floor(r() * 300)) >>> 0,
  spread(r, n) {
    const keys = new Set<number>();
    while (keys.size < n) keys.add(Math.floor(r() * 0x100000000));
    return [...keys];
  },
  disjoint: (i) => [i * 0x01000000, 8],
};

const IPV6: Family<Uint32Array> = {
  name: "IPv6",
  full: 128,
  rootBitsToTry: [1, 6, 16, undefined],
  make: (options) => new RadixTree6(options) as unknown as Tree<Uint32Array>,
  deserialize: (b) => RadixTree6.deserialize(b) as unknown as Tree<Uint32Array>,
  randomPrefix(r) {
    const regions = [
      [0x20010db8, 0, 0, 0],
      [0x2a010000, 0x12340000, 0, 0],
      [0, 0, 0, 0],
      [0xfe800000, 0, 0, 0],
      [0xffffffff, 0xffffffff, 0xffffffff, 0xffff0000],
    ];
    const w = Uint32Array.from(regions[Math.floor(r() * regions.length)]);
    // Vary a few bits in each word so that branching happens at every depth.
    for (let i = 0; i < 4; i++) if (r() < 0.5) w[i] = (w[i] ^ Math.floor(r() * 16) * (r() < 0.5 ? 1 : 0x1000)) >>> 0;
    const len = r() < 0.6 ? 128 : Math.floor(r() * 129);
    return [mask6(w, len), len];
  },
  mask: mask6,
  hex: hex32,
  near(k, r) {
    const probe = Uint32Array.from(k);
    if (r() < 0.5) probe[3] = (probe[3] + Math.floor(r() * 20)) >>> 0;
    return probe;
  },
  spread: (r, n) => Array.from({ length: n }, (_, i) => Uint32Array.of(0x20010000 + Math.floor(r() * 0x10000), Math.floor(r() * 2 ** 32), 0, i)),
  disjoint: (i) => [Uint32Array.of(0x20010db8, i << 16, 0, 0), 48],
};

/** A reference model: a Map keyed by fixed-width hex and length, whose sorted keys are the walk order. */
class Reference<K> {
  readonly map = new Map<string, number>();
  constructor(private readonly family: Family<K>) {}
  private key(k: K, len: number) {
    return `${this.family.hex(k)}/${String(len).padStart(3, "0")}`;
  }
  set(k: K, len: number, v: number) {
    this.map.set(this.key(k, len), v);
  }
  delete(k: K, len: number) {
    return this.map.delete(this.key(k, len));
  }
  get(k: K, len: number) {
    return this.map.get(this.key(k, len)) ?? NOT_FOUND;
  }
  enclosing(address: K, maxLen = this.family.full): Array<[string, number, number]> {
    const out: Array<[string, number, number]> = [];
    for (let l = 0; l <= maxLen; l++) {
      const n = this.family.mask(address, l);
      const v = this.map.get(this.key(n, l));
      if (v !== undefined) out.push([this.family.hex(n), l, v]);
    }
    return out;
  }
  sorted(): Array<[string, number, number]> {
    return [...this.map.keys()].sort().map((k) => {
      const [h, l] = k.split("/");
      return [h, Number(l), this.map.get(k) as number];
    });
  }
}

function collect<K>(family: Family<K>, tree: Tree<K>, network?: K, len = 0): Array<[string, number, number]> {
  const out: Array<[string, number, number]> = [];
  tree.walkSubtree(network ?? parseHex(family, "0".repeat(family.full / 4)), len, (n, l, v) => void out.push([family.hex(n), l, v]));
  return out;
}

describe.each([IPV4, IPV6] as Family<unknown>[])("$name radix tree against a reference map", (family) => {
  for (const rootBits of family.rootBitsToTry) {
    test(`random inserts, updates, deletes and lookups (rootBits ${rootBits ?? "auto"})`, () => {
      const r = rng(family.full * 100 + (rootBits ?? 99));
      const tree = family.make({ rootBits, initialCapacity: 4 });
      const ref = new Reference(family);
      for (let step = 0; step < (family.full === 32 ? 6000 : 4000); step++) {
        const [n, l] = family.randomPrefix(r);
        const op = r();
        if (op < 0.55) {
          const v = Math.floor(r() * 0x7fffffff);
          tree.set(n, l, v);
          ref.set(n, l, v);
        } else if (op < 0.8) {
          expect(tree.delete(n, l)).toBe(ref.delete(n, l));
        } else {
          expect(tree.getPrefix(n, l)).toBe(ref.get(n, l));
        }
        if (l === family.full) expect(tree.get(n)).toBe(ref.get(n, family.full));
        expect(tree.size).toBe(ref.map.size);
        if (step % 500 === 0) expect(collect(family, tree)).toEqual(ref.sorted());
      }
      // Every stored entry is found; longest-prefix and enclosing prefixes agree on random addresses.
      for (const [h, l, v] of ref.sorted()) expect(tree.getPrefix(parseHex(family, h), l)).toBe(v);
      for (let i = 0; i < 2000; i++) {
        const probe = family.near(family.randomPrefix(r)[0], r);
        const maxLen = r() < 0.7 ? family.full : Math.floor(r() * (family.full + 1));
        const expected = ref.enclosing(probe, maxLen);
        expect(tree.enclosing(probe, maxLen).map((e) => [family.hex(e.network), e.prefixLength, e.value])).toEqual(expected);
        expect(tree.longestMatch(probe, maxLen)).toBe(expected.length ? expected[expected.length - 1][2] : NOT_FOUND);
        expect(tree.get(probe)).toBe(ref.get(probe, family.full));
        const out: number[] = [];
        expect(tree.enclosingValues(probe, out, maxLen)).toBe(expected.length);
        expect(out).toEqual(expected.map((e) => e[2]));
      }
      expect(collect(family, tree)).toEqual(ref.sorted());
      const copy = family.deserialize(tree.serialize());
      expect(copy.size).toBe(ref.map.size);
      expect(collect(family, copy)).toEqual(ref.sorted());
    });
  }

  test("a subtree walk lists exactly the entries inside the network, in order", () => {
    const r = rng(7);
    for (const rootBits of [4, 16]) {
      const tree = family.make({ rootBits });
      const ref = new Reference(family);
      for (let i = 0; i < 3000; i++) {
        const [n, l] = family.randomPrefix(r);
        tree.set(n, l, i);
        ref.set(n, l, i);
      }
      const all = ref.sorted();
      for (let i = 0; i < 300; i++) {
        const [address] = family.randomPrefix(r);
        const len = Math.floor(r() * (family.full + 1));
        const net = family.mask(address, len);
        const prefix = family.hex(net);
        const expected = all.filter(([h, l]) => l >= len && family.hex(family.mask(parseHex(family, h), len)) === prefix);
        expect(collect(family, tree, net, len)).toEqual(expected);
        expect([...tree.entries(net, len)].map((e) => [family.hex(e.network), e.prefixLength, e.value])).toEqual(expected);
      }
    }
  });

  test("deleted nodes are reused: insert-delete cycles do not grow the tree", () => {
    const tree = family.make({ rootBits: 4 });
    const r = rng(9);
    const prefixes = Array.from({ length: 2000 }, () => family.randomPrefix(r));
    const fill = () => prefixes.forEach(([n, l], i) => tree.set(n, l, i));
    fill();
    const bytes = tree.byteSize;
    for (let cycle = 0; cycle < 5; cycle++) {
      for (const [n, l] of prefixes) tree.delete(n, l);
      expect(tree.size).toBe(0);
      expect(collect(family, tree)).toEqual([]);
      fill();
    }
    expect(tree.byteSize).toBe(bytes);
  });

  test("a walk stops when the visitor returns false", () => {
    const tree = family.make({ rootBits: 8 });
    for (let i = 0; i < 100; i++) tree.set(...family.disjoint(i), i);
    let seen = 0;
    expect(tree.walk(() => ++seen < 10)).toBe(false);
    expect(seen).toBe(10);
  });

  test("serialization round-trips, compacted, and the copy is independent", () => {
    const r = rng(11);
    const tree = family.make({ rootBits: 8 });
    const ref = new Reference(family);
    for (let i = 0; i < 4000; i++) {
      const [n, l] = family.randomPrefix(r);
      if (r() < 0.2) {
        tree.delete(n, l);
        ref.delete(n, l);
      } else {
        tree.set(n, l, i);
        ref.set(n, l, i);
      }
    }
    const buffer = tree.serialize();
    const copy = family.deserialize(buffer);
    expect(copy.size).toBe(ref.map.size);
    expect(copy.rootBits).toBe(8);
    expect(collect(family, copy)).toEqual(ref.sorted());
    // An odd byte offset (a buffer sliced out of a bigger file) reads the same.
    const shifted = new Uint8Array(buffer.byteLength + 1);
    shifted.set(buffer, 1);
    expect(collect(family, family.deserialize(shifted.subarray(1)))).toEqual(ref.sorted());
    const [fresh] = family.disjoint(7);
    const address = family.mask(fresh, family.full);
    copy.set(address, family.full, 5);
    expect(tree.get(address)).toBe(ref.get(address, family.full));
    // compact() in place keeps every entry.
    tree.compact();
    expect(collect(family, tree)).toEqual(ref.sorted());
    const other = family === (IPV4 as unknown) ? RadixTree6 : RadixTree4;
    expect(() => other.deserialize(buffer)).toThrow(/magic/);
    expect(() => family.deserialize(buffer.subarray(0, buffer.byteLength - 4))).toThrow(RangeError);
  });

  test("the root table grows with the tree, keeping every entry", () => {
    const tree = family.make();
    expect(tree.rootBits).toBe(16);
    const keys = family.spread(rng(3), 40000);
    keys.forEach((k, i) => tree.set(k, family.full, i));
    expect(tree.rootBits).toBe(22);
    keys.forEach((k, i) => expect(tree.get(k)).toBe(i));
    const round = family.deserialize(tree.serialize());
    expect(round.rootBits).toBe(22);
    expect(round.size).toBe(40000);
  });

  test("grown past 2^15 entries, straight to the widest root, it answers every lookup and walk as before", () => {
    const r = rng(11);
    const tree = family.make();
    const ref = new Reference(family);
    const put = (k: unknown, l: number, v: number) => {
      tree.set(k, l, v);
      ref.set(k, l, v);
    };
    // Nested prefixes of every length (the short trie too), then addresses across the threshold of 2^15.
    for (let i = 0; i < 3000; i++) put(...family.randomPrefix(r), i);
    const spread = family.spread(r, 2 ** 15 + 2000 - ref.map.size);
    let grewAt = -1;
    spread.forEach((k, i) => {
      put(k, family.full, 10_000 + i);
      if (grewAt < 0 && tree.rootBits !== 16) grewAt = tree.size;
    });
    expect(grewAt).toBe(2 ** 15 + 1);
    expect(tree.rootBits).toBe(22);
    // Changes after the growth: deletes and more nested prefixes.
    for (let i = 0; i < 2000; i++) {
      const [n, l] = family.randomPrefix(r);
      if (i % 3 === 0) expect(tree.delete(n, l)).toBe(ref.delete(n, l));
      else put(n, l, 50_000 + i);
    }
    expect(tree.size).toBe(ref.map.size);
    for (const [h, l, v] of ref.sorted()) expect(tree.getPrefix(parseHex(family, h), l)).toBe(v);
    for (let i = 0; i < 3000; i++) {
      const probe = family.near(i % 2 === 0 ? family.randomPrefix(r)[0] : spread[i % spread.length], r);
      const expected = ref.enclosing(probe);
      expect(tree.enclosing(probe).map((e) => [family.hex(e.network), e.prefixLength, e.value])).toEqual(expected);
      expect(tree.longestMatch(probe)).toBe(expected.length ? expected[expected.length - 1][2] : NOT_FOUND);
    }
    const all = ref.sorted();
    expect(collect(family, tree)).toEqual(all);
    // Subtree walks, shorter and longer than the root's 22 bits.
    for (let i = 0; i < 40; i++) {
      const [n, l] = family.randomPrefix(r);
      const inside = all.filter(([h, hl]) => hl >= l && family.hex(family.mask(parseHex(family, h), l)) === family.hex(n));
      expect(collect(family, tree, n, l)).toEqual(inside);
    }
    const round = family.deserialize(tree.serialize());
    expect(round.rootBits).toBe(22);
    expect(collect(family, round)).toEqual(all);
  });

  test("a file of a root grown by two bits at a time is grown to the widest root as it is read", () => {
    const tree = family.make({ rootBits: 18 });
    const keys = family.spread(rng(5), 2 ** 15 + 100);
    keys.forEach((k, i) => tree.set(k, family.full, i));
    const buffer = tree.serialize();
    // Header words: magic, version, rootBits, header length, count, top, fixedRoot; a root fixed at 18 written
    // as an automatic one, as files were when the root grew from 16 to 18, 20 and 22 bits.
    const words = new Int32Array(buffer.buffer, buffer.byteOffset, buffer.byteLength / 4);
    expect([words[2], words[6]]).toEqual([18, 1]);
    words[6] = 0;
    const read = family.deserialize(buffer);
    expect(read.rootBits).toBe(22);
    expect(read.size).toBe(keys.length);
    keys.forEach((k, i) => expect(read.get(k)).toBe(i));
    expect(collect(family, read).length).toBe(keys.length);
  });
});

function parseHex<K>(family: Family<K>, h: string): K {
  if (family.full === 32) return Number.parseInt(h, 16) as K;
  return Uint32Array.from({ length: 4 }, (_, j) => Number.parseInt(h.slice(8 * j, 8 * j + 8), 16)) as K;
}

describe("IPv4 specifics", () => {
  test("a network holding the address found by longest match after the root table grew", () => {
    const tree = new RadixTree4();
    const keys = IPV4.spread(rng(3), 40000);
    keys.forEach((k, i) => tree.set(k, 32, i));
    tree.set(0x0a000000, 8, 7);
    let probe = 0x0a0b0c0d;
    while (keys.includes(probe)) probe++;
    expect(tree.longestMatch(probe)).toBe(7);
  });

  test("enclosingValues into a short typed array fills what fits and counts all", () => {
    const tree = new RadixTree4({ rootBits: 8 });
    tree.set(0x0a000000, 8, 1);
    tree.set(0x0a010000, 16, 2);
    tree.set(0x0a010203, 32, 3);
    const out = new Int32Array(2);
    expect(tree.enclosingValues(0x0a010203, out)).toBe(3);
    expect(Array.from(out)).toEqual([1, 2]);
  });

  test("refuses keys with host bits, lengths out of range and values out of range", () => {
    const tree = new RadixTree4({ rootBits: 8 });
    expect(() => tree.set(0x0a000001, 8, 1)).toThrow(/host bits/);
    expect(() => tree.set(0, 33, 1)).toThrow(/prefix length/);
    expect(() => tree.set(0, 32, -1)).toThrow(/value/);
    expect(() => tree.set(0, 32, 2 ** 31)).toThrow(/value/);
    tree.set(0xffffffff, 32, 0x7fffffff);
    expect(tree.get(0xffffffff)).toBe(0x7fffffff);
    expect(tree.get(-1)).toBe(NOT_FOUND); // the "not an address" of tryParseIpv4Value never matches 255.255.255.255
  });
});

describe("IpRadixTree: both families through the domain types", () => {
  test("addresses and networks of both families, longest match and enclosing values", () => {
    const tree = new IpRadixTree();
    tree.set(parseCidr("10.0.0.0/8"), 1);
    tree.set(parseCidr("10.1.0.0/16"), 2);
    tree.set(parseIp("10.1.2.3"), 3);
    tree.set(parseCidr("2001:db8::/32"), 4);
    tree.set(parseIp("2001:db8::1"), 5);
    expect(tree.size).toBe(5);
    expect(tree.get(parseIp("10.1.2.3"))).toBe(3);
    expect(tree.get(parseCidr("10.1.0.0/16"))).toBe(2);
    expect(tree.get(parseIp("10.1.2.4"))).toBe(NOT_FOUND);
    expect(tree.longestMatch(parseIp("10.1.2.4"))).toBe(2);
    expect(tree.longestMatch(parseIp("10.200.0.1"))).toBe(1);
    expect(tree.longestMatch(parseIp("11.0.0.1"))).toBe(NOT_FOUND);
    expect(tree.enclosingValues(parseIp("10.1.2.3"))).toEqual([1, 2, 3]);
    expect(tree.enclosingValues(parseIp("2001:db8::1"))).toEqual([4, 5]);
    expect(tree.enclosingValues(parseIp("2001:db8::2"))).toEqual([4]);
    expect(tree.delete(parseCidr("10.1.0.0/16"))).toBe(true);
    expect(tree.enclosingValues(parseIp("10.1.2.3"))).toEqual([1, 3]);
    const copy = IpRadixTree.deserialize(tree.serialize());
    expect(copy.size).toBe(4);
    expect(copy.enclosingValues(parseIp("2001:db8::1"))).toEqual([4, 5]);
    expect(copy.get(parseIp("10.1.2.3"))).toBe(3);
  });
});

describe("deserialize refuses a corrupt buffer", () => {
  // The words of a serialized tree: preamble (magic, version, rootBits, header length, header..., array count,
  // array lengths...), then the roots, then the nodes.
  function corrupt(buffer: Uint8Array, change: (roots: Int32Array, nodes: Int32Array) => void): Uint8Array {
    const copy = new Uint8Array(buffer);
    const words = new Int32Array(copy.buffer);
    const arraysAt = 4 + words[3];
    const lengths = Array.from({ length: words[arraysAt] }, (_, i) => words[arraysAt + 1 + i]);
    const rootsAt = arraysAt + 1 + lengths.length;
    change(words.subarray(rootsAt, rootsAt + lengths[0]), words.subarray(rootsAt + lengths[0], rootsAt + lengths[0] + lengths[1]));
    return copy;
  }

  // metaWord: where a node's prefix length sits in its words (radix4.ts / radix6.ts node layouts).
  test.each([
    ["IPv4", 1, () => {
      const t = new RadixTree4();
      for (let i = 0; i < 100; i++) t.set(i * 65536 + 7, 32, i);
      t.set(0x0a000000, 8, 1000);
      return { buffer: t.serialize(), load: (b: Uint8Array) => RadixTree4.deserialize(b) };
    }],
    ["IPv6", 4, () => {
      const t = new RadixTree6();
      for (let i = 0; i < 100; i++) t.set([0x20010db8, i, 0, 1], 128, i);
      t.set([0x20010db8, 0, 0, 0], 32, 1000);
      return { buffer: t.serialize(), load: (b: Uint8Array) => RadixTree6.deserialize(b) };
    }],
  ] as const)("%s: a root outside the nodes, or a prefix longer than the address", (_name, metaWord, make) => {
    const { buffer, load } = make();
    expect(() => load(buffer)).not.toThrow();
    const badRoot = corrupt(buffer, (roots, nodes) => {
      roots[roots.findIndex((r) => r >= 0)] = nodes.length;
    });
    expect(() => load(badRoot)).toThrow(RangeError);
    const badLength = corrupt(buffer, (_roots, nodes) => {
      nodes[metaWord] = (nodes[metaWord] & ~0xff) | 200;
    });
    expect(() => load(badLength)).toThrow(RangeError);
  });
});

describe("deserializeInSteps", () => {
  test("a tree of 300,000 addresses loads over several steps into the same tree as deserialize", () => {
    const tree = new RadixTree4();
    const next = rng(29);
    const addresses: number[] = [];
    for (let i = 0; i < 300_000; i++) {
      const address = Math.floor(next() * 2 ** 32) >>> 0;
      addresses.push(address);
      tree.set(address, 32, i);
    }
    const buffer = tree.serialize();
    const steps = RadixTree4.deserializeInSteps(buffer);
    let yields = 0;
    let result = steps.next();
    while (!result.done) {
      yields++;
      result = steps.next();
    }
    const stepped = result.value;
    // One yield after the allocation, then one a 2^20 words of the node array (four words a node, over 300,000 nodes).
    expect(yields).toBeGreaterThanOrEqual(2);
    expect(stepped.size).toBe(tree.size);
    expect(stepped.serialize()).toEqual(buffer);
    for (let i = 0; i < addresses.length; i += 997) expect(stepped.get(addresses[i])).toBe(tree.get(addresses[i]));
  });
});

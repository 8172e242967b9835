// The radix trees against simple reference models (a Map keyed by fixed-width hex text, whose sorted keys are
// the expected walk order) over many random inserts, deletes and lookups, for IPv4 and IPv6.

import { describe, expect, test } from "bun:test";
import { IpRadixTree, NOT_FOUND, RadixTree4, RadixTree6 } from "../../../src/index/radix";
import { parseCidr, parseIp } from "../../../src/domain/ip";
import { rngUnit as rng } from "../../support/random";

const mask4 = (len: number) => (len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0);
const hex8 = (v: number) => v.toString(16).padStart(8, "0");
const key4 = (network: number, len: number) => `${hex8(network)}/${String(len).padStart(3, "0")}`;

/** Keys clustered in a few regions so prefixes nest and collide; lengths mostly /32. */
function randomPrefix4(r: () => number): [number, number] {
  const regions = [0x00000000, 0x0a000000, 0x7f000000, 0xc0a80000, 0xfffff000, 0xcb007100];
  const base = regions[Math.floor(r() * regions.length)];
  const address = (base + Math.floor(r() * 0x2000) * (r() < 0.5 ? 1 : 0x101)) >>> 0;
  const len = r() < 0.6 ? 32 : Math.floor(r() * 33);
  return [(address & mask4(len)) >>> 0, len];
}

class Reference4 {
  readonly map = new Map<string, number>();
  set(n: number, l: number, v: number) {
    this.map.set(key4(n, l), v);
  }
  delete(n: number, l: number) {
    return this.map.delete(key4(n, l));
  }
  get(n: number, l: number) {
    return this.map.get(key4(n, l)) ?? NOT_FOUND;
  }
  enclosing(address: number, maxLen = 32): Array<[number, number, number]> {
    const out: Array<[number, number, number]> = [];
    for (let l = 0; l <= maxLen; l++) {
      const n = (address & mask4(l)) >>> 0;
      const v = this.map.get(key4(n, l));
      if (v !== undefined) out.push([n, l, v]);
    }
    return out;
  }
  sorted(): Array<[number, number, number]> {
    return [...this.map.keys()].sort().map((k) => {
      const [h, l] = k.split("/");
      return [parseInt(h, 16), Number(l), this.map.get(k) as number];
    });
  }
}

function collect4(tree: RadixTree4, network = 0, len = 0): Array<[number, number, number]> {
  const out: Array<[number, number, number]> = [];
  tree.walkSubtree(network, len, (n, l, v) => void out.push([n, l, v]));
  return out;
}

describe("RadixTree4 against a reference map", () => {
  for (const rootBits of [1, 4, 8, 16, undefined]) {
    test(`random inserts, updates, deletes and lookups (rootBits ${rootBits ?? "auto"})`, () => {
      const r = rng(1000 + (rootBits ?? 99));
      const tree = new RadixTree4({ rootBits, initialCapacity: 4 });
      const ref = new Reference4();
      for (let step = 0; step < 6000; step++) {
        const [n, l] = randomPrefix4(r);
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
        if (l === 32 && op > 0.5) expect(tree.get(n)).toBe(ref.get(n, 32));
        expect(tree.size).toBe(ref.map.size);
        if (step % 500 === 0) expect(collect4(tree)).toEqual(ref.sorted());
      }
      // Every stored entry is found; longest-prefix and enclosing prefixes agree on random addresses.
      for (const [n, l, v] of ref.sorted()) expect(tree.getPrefix(n, l)).toBe(v);
      for (let i = 0; i < 3000; i++) {
        const [address] = randomPrefix4(r);
        const probe = (address + Math.floor(r() * 300)) >>> 0;
        const maxLen = r() < 0.7 ? 32 : Math.floor(r() * 33);
        const expected = ref.enclosing(probe, maxLen);
        expect(tree.enclosing(probe, maxLen).map((e) => [e.network, e.prefixLength, e.value])).toEqual(expected);
        expect(tree.longestMatch(probe, maxLen)).toBe(expected.length ? expected[expected.length - 1][2] : NOT_FOUND);
        expect(tree.get(probe)).toBe(ref.get(probe, 32));
        const out = new Int32Array(2);
        const found = tree.enclosingValues(probe, out, maxLen);
        expect(found).toBe(expected.length);
        expect(Array.from(out.subarray(0, Math.min(2, found)))).toEqual(expected.slice(0, 2).map((e) => e[2]));
      }
      expect(collect4(tree)).toEqual(ref.sorted());
    });
  }

  test("a subtree walk lists exactly the entries inside the network, in order", () => {
    const r = rng(7);
    for (const rootBits of [4, 16]) {
      const tree = new RadixTree4({ rootBits });
      const ref = new Reference4();
      for (let i = 0; i < 3000; i++) {
        const [n, l] = randomPrefix4(r);
        tree.set(n, l, i);
        ref.set(n, l, i);
      }
      const all = ref.sorted();
      for (let i = 0; i < 300; i++) {
        const [address] = randomPrefix4(r);
        const len = Math.floor(r() * 33);
        const net = (address & mask4(len)) >>> 0;
        const expected = all.filter(([n, l]) => l >= len && ((n & mask4(len)) >>> 0) === net);
        expect(collect4(tree, net, len)).toEqual(expected);
        expect([...tree.entries(net, len)].map((e) => [e.network, e.prefixLength, e.value])).toEqual(expected);
      }
    }
  });

  test("deleted nodes are reused: insert-delete cycles do not grow the tree", () => {
    const tree = new RadixTree4({ rootBits: 4 });
    const r = rng(9);
    const prefixes = Array.from({ length: 2000 }, () => randomPrefix4(r));
    const fill = () => prefixes.forEach(([n, l], i) => tree.set(n, l, i));
    fill();
    const bytes = tree.byteSize;
    for (let cycle = 0; cycle < 5; cycle++) {
      for (const [n, l] of prefixes) tree.delete(n, l);
      expect(tree.size).toBe(0);
      expect(collect4(tree)).toEqual([]);
      fill();
    }
    expect(tree.byteSize).toBe(bytes);
    const six = new RadixTree6({ rootBits: 4 });
    const prefixes6 = Array.from({ length: 2000 }, () => randomPrefix6(r));
    prefixes6.forEach(([n, l], i) => six.set(n, l, i));
    const bytes6 = six.byteSize;
    for (let cycle = 0; cycle < 5; cycle++) {
      for (const [n, l] of prefixes6) six.delete(n, l);
      expect(six.size).toBe(0);
      prefixes6.forEach(([n, l], i) => six.set(n, l, i));
    }
    expect(six.byteSize).toBe(bytes6);
  });

  test("a walk stops when the visitor returns false", () => {
    const tree = new RadixTree4({ rootBits: 8 });
    for (let i = 0; i < 100; i++) tree.set(i * 0x01000000, 8, i);
    let seen = 0;
    expect(tree.walk(() => ++seen < 10)).toBe(false);
    expect(seen).toBe(10);
  });

  test("serialization round-trips, compacted, and the copy is independent", () => {
    const r = rng(11);
    const tree = new RadixTree4({ rootBits: 8 });
    const ref = new Reference4();
    for (let i = 0; i < 4000; i++) {
      const [n, l] = randomPrefix4(r);
      if (r() < 0.2) {
        tree.delete(n, l);
        ref.delete(n, l);
      } else {
        tree.set(n, l, i);
        ref.set(n, l, i);
      }
    }
    const buffer = tree.serialize();
    const copy = RadixTree4.deserialize(buffer);
    expect(copy.size).toBe(ref.map.size);
    expect(copy.rootBits).toBe(8);
    expect(collect4(copy)).toEqual(ref.sorted());
    // An odd byte offset (a buffer sliced out of a bigger file) reads the same.
    const shifted = new Uint8Array(buffer.byteLength + 1);
    shifted.set(buffer, 1);
    expect(collect4(RadixTree4.deserialize(shifted.subarray(1)))).toEqual(ref.sorted());
    copy.set(0x01020304, 32, 5);
    expect(tree.get(0x01020304)).toBe(ref.get(0x01020304, 32));
    // compact() in place keeps every entry.
    tree.compact();
    expect(collect4(tree)).toEqual(ref.sorted());
    expect(() => RadixTree6.deserialize(buffer)).toThrow(/magic/);
    expect(() => RadixTree4.deserialize(buffer.subarray(0, buffer.byteLength - 4))).toThrow(RangeError);
  });

  test("the root table grows with the tree, keeping every entry", () => {
    const tree = new RadixTree4();
    expect(tree.rootBits).toBe(16);
    const r = rng(3);
    const keys = new Set<number>();
    while (keys.size < 40000) keys.add(Math.floor(r() * 0x100000000));
    let i = 0;
    for (const k of keys) tree.set(k, 32, i++);
    tree.set(0x0a000000, 8, 7);
    expect(tree.rootBits).toBe(18);
    i = 0;
    for (const k of keys) expect(tree.get(k)).toBe(i++);
    let probe = 0x0a0b0c0d;
    while (keys.has(probe)) probe++;
    expect(tree.longestMatch(probe)).toBe(7);
    const round = RadixTree4.deserialize(tree.serialize());
    expect(round.rootBits).toBe(18);
    expect(round.size).toBe(40001);
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

// ---------------------------------------------------------------------------------------------------------
// IPv6

const hex32 = (w: ArrayLike<number>) => Array.from({ length: 4 }, (_, i) => hex8(w[i] >>> 0)).join("");
const key6 = (w: ArrayLike<number>, len: number) => `${hex32(w)}/${String(len).padStart(3, "0")}`;

function mask6(w: ArrayLike<number>, len: number): Uint32Array {
  const out = new Uint32Array(4);
  for (let i = 0; i < 4; i++) out[i] = (w[i] & mask4(Math.min(32, Math.max(0, len - 32 * i)))) >>> 0;
  return out;
}

function randomPrefix6(r: () => number): [Uint32Array, number] {
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
}

class Reference6 {
  readonly map = new Map<string, number>();
  enclosing(address: Uint32Array, maxLen = 128): Array<[string, number, number]> {
    const out: Array<[string, number, number]> = [];
    for (let l = 0; l <= maxLen; l++) {
      const n = mask6(address, l);
      const v = this.map.get(key6(n, l));
      if (v !== undefined) out.push([hex32(n), l, v]);
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

function collect6(tree: RadixTree6, network: ArrayLike<number> = [0, 0, 0, 0], len = 0): Array<[string, number, number]> {
  const out: Array<[string, number, number]> = [];
  tree.walkSubtree(network, len, (n, l, v) => void out.push([hex32(n), l, v]));
  return out;
}

describe("RadixTree6 against a reference map", () => {
  for (const rootBits of [1, 6, 16, undefined]) {
    test(`random inserts, updates, deletes and lookups (rootBits ${rootBits ?? "auto"})`, () => {
      const r = rng(2000 + (rootBits ?? 99));
      const tree = new RadixTree6({ rootBits, initialCapacity: 4 });
      const ref = new Reference6();
      for (let step = 0; step < 4000; step++) {
        const [n, l] = randomPrefix6(r);
        const op = r();
        if (op < 0.55) {
          const v = Math.floor(r() * 0x7fffffff);
          tree.set(n, l, v);
          ref.map.set(key6(n, l), v);
        } else if (op < 0.8) {
          expect(tree.delete(n, l)).toBe(ref.map.delete(key6(n, l)));
        } else {
          expect(tree.getPrefix(n, l)).toBe(ref.map.get(key6(n, l)) ?? NOT_FOUND);
        }
        if (l === 128) expect(tree.get(n)).toBe(ref.map.get(key6(n, 128)) ?? NOT_FOUND);
        expect(tree.size).toBe(ref.map.size);
        if (step % 500 === 0) expect(collect6(tree)).toEqual(ref.sorted());
      }
      for (let i = 0; i < 1200; i++) {
        const [probe] = randomPrefix6(r);
        if (r() < 0.5) probe[3] = (probe[3] + Math.floor(r() * 20)) >>> 0;
        const maxLen = r() < 0.7 ? 128 : Math.floor(r() * 129);
        const expected = ref.enclosing(probe, maxLen);
        expect(tree.enclosing(probe, maxLen).map((e) => [hex32(e.network), e.prefixLength, e.value])).toEqual(expected);
        expect(tree.longestMatch(probe, maxLen)).toBe(expected.length ? expected[expected.length - 1][2] : NOT_FOUND);
        expect(tree.get(probe)).toBe(ref.map.get(key6(probe, 128)) ?? NOT_FOUND);
        const out: number[] = [];
        expect(tree.enclosingValues(probe, out, maxLen)).toBe(expected.length);
        expect(out).toEqual(expected.map((e) => e[2]));
      }
      expect(collect6(tree)).toEqual(ref.sorted());
      const all = ref.sorted();
      const allWords = all.map(([h]) => Uint32Array.from({ length: 4 }, (_, j) => parseInt(h.slice(8 * j, 8 * j + 8), 16)));
      for (let i = 0; i < 150; i++) {
        const [address] = randomPrefix6(r);
        const len = Math.floor(r() * 129);
        const net = hex32(mask6(address, len));
        const expected = all.filter(([, l], j) => l >= len && hex32(mask6(allWords[j], len)) === net);
        expect(collect6(tree, mask6(address, len), len)).toEqual(expected);
      }
      const copy = RadixTree6.deserialize(tree.serialize());
      expect(copy.size).toBe(ref.map.size);
      expect(collect6(copy)).toEqual(ref.sorted());
    });
  }

  test("the root table grows with the tree, keeping every entry", () => {
    const tree = new RadixTree6();
    const r = rng(5);
    const keys: Uint32Array[] = [];
    for (let i = 0; i < 40000; i++) keys.push(Uint32Array.of(0x20010000 + Math.floor(r() * 0x10000), Math.floor(r() * 2 ** 32), 0, i));
    keys.forEach((k, i) => tree.set(k, 128, i));
    expect(tree.rootBits).toBe(18);
    keys.forEach((k, i) => expect(tree.get(k)).toBe(i));
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

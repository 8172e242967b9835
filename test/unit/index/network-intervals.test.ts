// The flattened IPv4 networks answer exactly what a longest-prefix match over the networks answers: checked
// against the radix tree's own longestMatch (with the /32 entries left out) on random nested networks.

import { describe, expect, test } from "bun:test";
import { NetworkIntervals4 } from "../../../src/index/network-intervals";
import { NOT_FOUND } from "../../../src/index/radix-common";
import { RadixTree4 } from "../../../src/index/radix4";
import { rng } from "../../support/random";

function build(entries: [number, number][]): { tree: RadixTree4; networksOnly: RadixTree4 } {
  const tree = new RadixTree4();
  const networksOnly = new RadixTree4();
  entries.forEach(([network, len], slot) => {
    tree.set(network, len, slot);
    if (len < 32) networksOnly.set(network, len, slot);
  });
  return { tree, networksOnly };
}

const mask = (len: number) => (len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0);

describe("NetworkIntervals4", () => {
  test("no networks: nothing is found", () => {
    const { tree } = build([[0x0a000001, 32]]);
    expect(NetworkIntervals4.fromTree(tree).lookup(0x0a000001)).toBe(NOT_FOUND);
  });

  test("nested and adjacent networks, the edges of the address space", () => {
    const { tree } = build([
      [0, 1],
      [0x0a000000, 8],
      [0x0a010000, 16],
      [0x0a010100, 24],
      [0x0a010200, 24],
      [0xffffff00, 24],
      [0x0a010105, 32],
    ]);
    const iv = NetworkIntervals4.fromTree(tree);
    expect(iv.lookup(0)).toBe(0);
    expect(iv.lookup(0x09ffffff)).toBe(0);
    expect(iv.lookup(0x0a000000)).toBe(1);
    expect(iv.lookup(0x0a0100ff)).toBe(2);
    expect(iv.lookup(0x0a010105)).toBe(3);
    expect(iv.lookup(0x0a0102ff)).toBe(4);
    expect(iv.lookup(0x0a010300)).toBe(2);
    expect(iv.lookup(0x0a020000)).toBe(1);
    expect(iv.lookup(0x0b000000)).toBe(0);
    expect(iv.lookup(0x80000000)).toBe(NOT_FOUND);
    expect(iv.lookup(0xffffff00)).toBe(5);
    expect(iv.lookup(0xffffffff)).toBe(5);
  });

  test.each([1, 2, 3, 4])("agrees with the tree's longest match on random nested networks (seed %d)", (seed) => {
    const next = rng(seed);
    const entries: [number, number][] = [];
    const seen = new Set<string>();
    for (let i = 0; i < 3000; i++) {
      // Clustered networks, so that many nest.
      const len = [8, 12, 16, 20, 22, 24, 26, 28, 31, 32][next() % 10];
      const base = (0x0a000000 + (next() % 0x00ffffff)) >>> 0;
      const network = (base & mask(len)) >>> 0;
      if (seen.has(`${network}/${len}`)) continue;
      seen.add(`${network}/${len}`);
      entries.push([network, len]);
    }
    const { tree, networksOnly } = build(entries);
    const iv = NetworkIntervals4.fromTree(tree);
    for (let q = 0; q < 20000; q++) {
      const address = q % 2 === 0 ? (0x0a000000 + (next() % 0x01000000)) >>> 0 : next() >>> 0;
      expect(iv.lookup(address)).toBe(networksOnly.longestMatch(address));
    }
  });
});

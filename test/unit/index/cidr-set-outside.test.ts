// CidrSet.eachBlockOutside: a network less the set's networks that touch it, against a brute-force count over
// every address: the blocks are aligned, ascending, disjoint, inside the network, and hold exactly the addresses
// of the network that no network of the set holds; IPv4 and IPv6 (a /116 across the last word).

import { expect, test } from "bun:test";
import { formatIpv4, parseCidr } from "../../../src/domain/ip";
import { CidrSet } from "../../../src/index/cidr-set";
import { rng } from "../../support/random";

test.each([1, 2, 3, 4, 5, 6])("IPv4, seed %p: the blocks are the network's addresses outside the set, in maximal aligned blocks", (seed) => {
  const next = rng(seed);
  const base = 0x0a000000 + (next() % 256) * 4096; // a /20 of 10.0.0.0/8
  const set = new CidrSet();
  const holes: [number, number][] = [];
  for (let k = 0, n = next() % 12; k < n; k++) {
    const len = 21 + (next() % 12);
    const hole = (base + (next() % 4096)) & (-1 << (32 - len));
    set.add(parseCidr(`${formatIpv4(hole >>> 0)}/${len}`), k);
    holes.push([hole >>> 0, (hole >>> 0) + 2 ** (32 - len) - 1]);
  }
  const blocks: [number, number][] = [];
  set.eachBlockOutsideV4(base, 20, (network, len) => {
    expect(network % 2 ** (32 - len)).toBe(0);
    blocks.push([network, len]);
  });
  const outside = (a: number) => !holes.some(([s, e]) => a >= s && a <= e);
  const covered = new Set<number>();
  let previousEnd = base - 1;
  for (const [network, len] of blocks) {
    expect(network).toBeGreaterThan(previousEnd);
    previousEnd = network + 2 ** (32 - len) - 1;
    for (let a = network; a <= previousEnd; a++) covered.add(a);
  }
  for (let a = base; a < base + 4096; a++) expect(covered.has(a)).toBe(outside(a));
  expect(covered.size).toBe([...Array(4096).keys()].filter((i) => outside(base + i)).length);
});

test("IPv4: no network of the set touches it: the network itself; one holds all of it: nothing", () => {
  const set = new CidrSet();
  set.add(parseCidr("192.0.2.0/24"), 1);
  const blocks = (cidr: string) => {
    const c = parseCidr(cidr);
    const out: string[] = [];
    set.eachBlockOutsideV4((c.network as { value: number }).value, c.prefixLength, (n, len) => out.push(`${formatIpv4(n)}/${len}`));
    return out;
  };
  expect(blocks("198.51.100.0/24")).toEqual(["198.51.100.0/24"]);
  expect(blocks("192.0.2.128/25")).toEqual([]);
  expect(blocks("192.0.0.0/22")).toEqual(["192.0.0.0/23", "192.0.3.0/24"]);
  set.add(parseCidr("203.0.113.7/32"), 2);
  expect(blocks("203.0.113.0/24")).toEqual(["203.0.113.0/30", "203.0.113.4/31", "203.0.113.6/32", "203.0.113.8/29", "203.0.113.16/28", "203.0.113.32/27", "203.0.113.64/26", "203.0.113.128/25"]);
});

test.each([7, 8, 9])("IPv6, seed %p: the same rule over a /116 (the last word's low 12 bits)", (seed) => {
  const next = rng(seed);
  const prefix = "2001:db8:0:0:0:0:";
  const base = 0x12340000 + (next() % 16) * 4096;
  const words = (low: number) => Uint32Array.of(0x20010db8, 0, 0, low >>> 0);
  const hex = (low: number) => `${prefix}${(low >>> 16).toString(16)}:${(low & 0xffff).toString(16)}`;
  const set = new CidrSet();
  const holes: [number, number][] = [];
  for (let k = 0, n = next() % 12; k < n; k++) {
    const len = 117 + (next() % 12);
    const hole = (base + (next() % 4096)) & (-1 << (128 - len));
    set.add(parseCidr(`${hex(hole)}/${len}`), k);
    holes.push([hole >>> 0, (hole >>> 0) + 2 ** (128 - len) - 1]);
  }
  const covered = new Set<number>();
  let previousEnd = base - 1;
  set.eachBlockOutsideV6(words(base), 116, (network, len) => {
    expect([network[0], network[1], network[2]]).toEqual([0x20010db8, 0, 0]);
    const low = network[3];
    expect(low % 2 ** (128 - len)).toBe(0);
    expect(low).toBeGreaterThan(previousEnd);
    previousEnd = low + 2 ** (128 - len) - 1;
    for (let a = low; a <= previousEnd; a++) covered.add(a);
  });
  const outside = (a: number) => !holes.some(([s, e]) => a >= s && a <= e);
  for (let a = base; a < base + 4096; a++) expect(covered.has(a)).toBe(outside(a));
});

// CIDR aggregation against a brute-force reference: in a small universe of 4,096 addresses, the reference
// marks every covered address, then lists every aligned block that is fully covered while its parent is not
// (the maximal blocks, which are the unique smallest cover). IPv4 and IPv6, random sets of addresses and CIDRs.

import { describe, expect, test } from "bun:test";
import {
  Ipv4CidrAggregator,
  Ipv6CidrAggregator,
  aggregateCidrs,
  aggregateSortedIpv4,
  emitIpv4Range,
} from "../../../src/domain/aggregate";
import { type Cidr, type Ip, compareIp, formatIpv4, formatIpv6, parseCidr, parseIp } from "../../../src/domain/ip";
import { rng } from "../../support/random";

const UNIVERSE_BITS = 12;
const UNIVERSE = 1 << UNIVERSE_BITS;

/** Random items (offsets into the universe): single addresses and blocks, as [first, prefixBitsOfBlock]. */
function randomItems(r: () => number): Array<[number, number]> {
  const items: Array<[number, number]> = [];
  const density = r() % 4;
  const count = [20, 300, 1500, 3500][density];
  for (let i = 0; i < count; i++) {
    const hostBits = r() % 10 === 0 ? r() % 9 : 0; // mostly addresses, some blocks up to 256
    const first = Math.floor((r() % UNIVERSE) / 2 ** hostBits) * 2 ** hostBits;
    items.push([first, hostBits]);
  }
  return items.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
}

/** The maximal fully covered aligned blocks of the universe, as [offset, hostBits], ascending. */
function bruteForce(items: Array<[number, number]>): Array<[number, number]> {
  const covered = new Uint8Array(UNIVERSE);
  for (const [first, hostBits] of items) covered.fill(1, first, first + 2 ** hostBits);
  const sums = new Int32Array(UNIVERSE + 1); // sums[i]: covered addresses below offset i
  for (let i = 0; i < UNIVERSE; i++) sums[i + 1] = sums[i] + covered[i];
  const full = (start: number, hostBits: number) => sums[start + 2 ** hostBits] - sums[start] === 2 ** hostBits;
  const blocks: Array<[number, number]> = [];
  for (let hostBits = 0; hostBits <= UNIVERSE_BITS; hostBits++) {
    for (let start = 0; start < UNIVERSE; start += 2 ** hostBits) {
      if (!full(start, hostBits)) continue;
      const parentStart = Math.floor(start / 2 ** (hostBits + 1)) * 2 ** (hostBits + 1);
      // The whole universe is the biggest block the reference considers (the sets never leave it).
      if (hostBits < UNIVERSE_BITS && full(parentStart, hostBits + 1)) continue;
      blocks.push([start, hostBits]);
    }
  }
  return blocks.sort((a, b) => a[0] - b[0]);
}

describe("IPv4 aggregation against the brute-force reference", () => {
  test("200 random sets of addresses and CIDRs", () => {
    const r = rng(1);
    for (let round = 0; round < 200; round++) {
      // Universes anywhere, including the very bottom and the very top of the address space.
      const base = round === 0 ? 0 : round === 1 ? 2 ** 32 - UNIVERSE : (r() >>> UNIVERSE_BITS) * UNIVERSE;
      const items = randomItems(r);
      const expected = bruteForce(items).map(([o, h]) => `${formatIpv4(base + o)}/${32 - h}`);

      const viaAggregator: string[] = [];
      const aggregator = new Ipv4CidrAggregator((network, len) => void viaAggregator.push(`${formatIpv4(network)}/${len}`));
      for (const [first, hostBits] of items) aggregator.add(base + first, base + first + 2 ** hostBits - 1);
      aggregator.finish();
      expect(viaAggregator).toEqual(expected);

      const domainItems: Array<Ip | Cidr> = items.map(([first, hostBits]) =>
        hostBits === 0 ? parseIp(formatIpv4(base + first)) : parseCidr(`${formatIpv4(base + first)}/${32 - hostBits}`),
      );
      expect([...aggregateCidrs(domainItems)].map((c) => c.text)).toEqual(expected);

      const addresses = items.filter(([, h]) => h === 0).map(([o]) => base + o);
      const viaSorted: string[] = [];
      aggregateSortedIpv4(addresses, (network, len) => void viaSorted.push(`${formatIpv4(network)}/${len}`));
      expect(viaSorted).toEqual(bruteForce(items.filter(([, h]) => h === 0)).map(([o, h]) => `${formatIpv4(base + o)}/${32 - h}`));
    }
  });

  const ranges: Array<[string, number, number, string[]]> = [
    ["the whole space", 0, 2 ** 32 - 1, ["0.0.0.0/0"]],
    ["the top address", 2 ** 32 - 1, 2 ** 32 - 1, ["255.255.255.255/32"]],
    ["the bottom address", 0, 0, ["0.0.0.0/32"]],
    ["the upper half", 2 ** 31, 2 ** 32 - 1, ["128.0.0.0/1"]],
    ["all but the first", 1, 2 ** 32 - 1, [
      "0.0.0.1/32", "0.0.0.2/31", "0.0.0.4/30", "0.0.0.8/29", "0.0.0.16/28", "0.0.0.32/27", "0.0.0.64/26",
      "0.0.0.128/25", "0.0.1.0/24", "0.0.2.0/23", "0.0.4.0/22", "0.0.8.0/21", "0.0.16.0/20", "0.0.32.0/19",
      "0.0.64.0/18", "0.0.128.0/17", "0.1.0.0/16", "0.2.0.0/15", "0.4.0.0/14", "0.8.0.0/13", "0.16.0.0/12",
      "0.32.0.0/11", "0.64.0.0/10", "0.128.0.0/9", "1.0.0.0/8", "2.0.0.0/7", "4.0.0.0/6", "8.0.0.0/5",
      "16.0.0.0/4", "32.0.0.0/3", "64.0.0.0/2", "128.0.0.0/1",
    ]],
    ["10.0.0.1 to 10.0.0.6", 0x0a000001, 0x0a000006, ["10.0.0.1/32", "10.0.0.2/31", "10.0.0.4/31", "10.0.0.6/32"]],
  ];
  test.each(ranges)("%s", (_name, first, last, expected) => {
    const out: string[] = [];
    emitIpv4Range(first, last, (network, len) => void out.push(`${formatIpv4(network)}/${len}`));
    expect(out).toEqual(expected);
  });

  test("refuses ranges out of order", () => {
    const aggregator = new Ipv4CidrAggregator(() => {});
    aggregator.add(10);
    expect(() => aggregator.add(9)).toThrow(RangeError);
    expect(() => aggregateSortedIpv4([5, 3], () => {})).toThrow(RangeError);
  });
});

// ---------------------------------------------------------------------------------------------------------

function addToWords(base: bigint, offset: number): Uint32Array {
  const v = base + BigInt(offset);
  return Uint32Array.from({ length: 4 }, (_, i) => Number((v >> BigInt(96 - 32 * i)) & 0xffffffffn));
}

describe("IPv6 aggregation against the brute-force reference", () => {
  test("120 random sets of addresses and CIDRs", () => {
    const r = rng(2);
    for (let round = 0; round < 120; round++) {
      const random128 = (BigInt(r()) << 96n) | (BigInt(r()) << 64n) | (BigInt(r()) << 32n) | BigInt(r());
      const base =
        round === 0 ? 0n : round === 1 ? (1n << 128n) - BigInt(UNIVERSE) : (random128 >> BigInt(UNIVERSE_BITS)) << BigInt(UNIVERSE_BITS);
      const items = randomItems(r);
      const expected = bruteForce(items).map(([o, h]) => `${formatIpv6(addToWords(base, o))}/${128 - h}`);

      const out: string[] = [];
      const aggregator = new Ipv6CidrAggregator((network, len) => void out.push(`${formatIpv6(network)}/${len}`));
      for (const [first, hostBits] of items) aggregator.add(addToWords(base, first), addToWords(base, first + 2 ** hostBits - 1));
      aggregator.finish();
      expect(out).toEqual(expected);

      const domainItems: Array<Ip | Cidr> = items.map(([first, hostBits]) => parseCidr(`${formatIpv6(addToWords(base, first))}/${128 - hostBits}`));
      // aggregateCidrs keeps blocks in ::ffff:0:0/96 as IPv6, so compare texts only outside that range.
      if (domainItems.every((c) => c.version === 6)) expect([...aggregateCidrs(domainItems)].map((c) => c.text)).toEqual(expected);
    }
  });

  const ranges: Array<[string, bigint, bigint, string[]]> = [
    ["the whole space", 0n, (1n << 128n) - 1n, ["::/0"]],
    ["the top address", (1n << 128n) - 1n, (1n << 128n) - 1n, ["ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"]],
    ["across a word boundary", (1n << 32n) - 2n, (1n << 32n) + 1n, ["::ffff:fffe/127", "::1:0:0/127"]],
    ["across the middle", (1n << 64n) - 1n, 1n << 64n, ["::ffff:ffff:ffff:ffff/128", "0:0:0:1::/128"]],
    ["a /64 and the next /64", 0x20010db8000000000000000000000000n, 0x20010db8000000010000000000000000n + 0xffffffffffffffffn, ["2001:db8::/63"]],
  ];
  test.each(ranges)("%s", (_name, first, last, expected) => {
    const out: string[] = [];
    const aggregator = new Ipv6CidrAggregator((network, len) => void out.push(`${formatIpv6(network)}/${len}`));
    aggregator.add(addToWords(first, 0), addToWords(last, 0));
    aggregator.finish();
    expect(out).toEqual(expected);
  });
});

describe("aggregateCidrs over both families", () => {
  test("IPv4 then IPv6, with overlaps and duplicates, yields blocks as soon as they are known", () => {
    const items = ["10.0.0.0", "10.0.0.1", "10.0.0.0/31", "10.0.0.2", "10.0.0.3", "10.0.0.9", "10.0.1.0/24", "2001:db8::", "2001:db8::1", "2001:db8::2"].map(
      (t) => (t.includes("/") ? parseCidr(t) : parseIp(t)),
    );
    const generator = aggregateCidrs(items);
    expect(generator.next().value?.text).toBe("10.0.0.0/30"); // closed by the gap before 10.0.1.0
    expect([...generator].map((c) => c.text)).toEqual(["10.0.0.9/32", "10.0.1.0/24", "2001:db8::/127", "2001:db8::2/128"]);
  });

  test("refuses IPv4 after IPv6 and descending input", () => {
    expect(() => [...aggregateCidrs([parseIp("::1"), parseIp("1.2.3.4")])]).toThrow(RangeError);
    expect(() => [...aggregateCidrs([parseIp("1.2.3.5"), parseIp("1.2.3.4")])]).toThrow(RangeError);
    expect(() => [...aggregateCidrs([parseIp("::2"), parseIp("::1")])]).toThrow(RangeError);
  });

  test("the output of a random set sorted by compareIp is sorted and disjoint", () => {
    const r = rng(3);
    const items = Array.from({ length: 500 }, () => parseIp(formatIpv4(0x0a000000 + (r() % 2048)))).sort(compareIp);
    const blocks = [...aggregateCidrs(items)];
    for (let i = 1; i < blocks.length; i++) expect(compareIp(blocks[i - 1].network, blocks[i].network)).toBeLessThan(0);
  });
});

import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Ip, NormalizedIp } from "../../../src/domain/ip";
import { RangeTable, searchV4, searchV6, v4Buckets } from "../../../src/index/range-table";
import { type AsnRange, type CountryRange, flattenRanges, writeRangeTable } from "../../../src/index/range-table-writer";

const v4 = (value: number): Ip => ({ version: 4, value: value >>> 0, text: "" as NormalizedIp });
const v6 = (value: bigint): Ip => ({
  version: 6,
  words: Uint32Array.of(Number(value >> 96n), Number((value >> 64n) & 0xffffffffn), Number((value >> 32n) & 0xffffffffn), Number(value & 0xffffffffn)),
  text: "" as NormalizedIp,
});
const dotted = (text: string): bigint => BigInt(text.split(".").reduce((a, o) => a * 256 + Number(o), 0));
const MAX_V6 = (1n << 128n) - 1n;

/** Reference answer: the last row (in source order) whose inclusive range holds the address. */
function reference<T extends { start: bigint; end: bigint }>(rows: T[], x: bigint): T | null {
  let hit: T | null = null;
  for (const row of rows) if (row.start <= x && x <= row.end) hit = row;
  return hit;
}

/** A small deterministic generator, so a failing property run can be replayed. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("range table lookups", () => {
  const countryV4: CountryRange[] = [
    { start: dotted("1.0.0.0"), end: dotted("1.0.0.255"), code: "AU" },
    { start: dotted("8.8.8.0"), end: dotted("8.8.8.255"), code: "US" },
    { start: dotted("10.0.0.0"), end: dotted("10.255.255.255"), code: "DE" },
    // Nested after its parent, as ip-location-db writes them: the later, narrower row wins inside it.
    { start: dotted("10.1.0.0"), end: dotted("10.1.0.255"), code: "FR" },
    { start: dotted("255.255.255.0"), end: dotted("255.255.255.255"), code: "JP" },
  ];
  const asnV4: AsnRange[] = [
    { start: 0n, end: dotted("0.0.0.255"), asn: 1, org: "Zero, Inc." },
    { start: dotted("8.8.8.0"), end: dotted("8.8.8.255"), asn: 15169, org: "Google LLC" },
    { start: dotted("8.8.9.0"), end: dotted("8.8.9.255"), asn: 15169, org: "Google LLC" },
    { start: dotted("9.0.0.0"), end: dotted("9.0.0.0"), asn: 64500, org: null },
  ];
  const countryV6: CountryRange[] = [
    { start: 0x20014860n << 96n, end: (0x20014861n << 96n) - 1n, code: "US" },
    // Not on a /64 boundary: the reason IPv6 keeps 128-bit starts.
    { start: (0x2a000000n << 96n) + 5n, end: (0x2a000000n << 96n) + 9n, code: "NL" },
    { start: MAX_V6, end: MAX_V6, code: "SE" },
  ];
  const asnV6: AsnRange[] = [{ start: 0x20014860n << 96n, end: (0x20014861n << 96n) - 1n, asn: 15169, org: "Google LLC" }];
  const table = RangeTable.fromBytes(
    writeRangeTable({ source: "test", countryDataTime: 1000, asnDataTime: 2000, countryV4, asnV4, countryV6, asnV6 }),
  );

  test.each([
    ["0.0.0.0", null, 1, "Zero, Inc."],
    ["0.0.0.255", null, 1, "Zero, Inc."],
    ["0.0.1.0", null, null, null],
    ["0.255.255.255", null, null, null],
    ["1.0.0.0", "AU", null, null],
    ["1.0.0.255", "AU", null, null],
    ["1.0.1.0", null, null, null],
    ["8.8.8.8", "US", 15169, "Google LLC"],
    ["8.8.9.9", null, 15169, "Google LLC"],
    ["9.0.0.0", null, 64500, null],
    ["9.0.0.1", null, null, null],
    ["10.0.255.255", "DE", null, null],
    ["10.1.0.0", "FR", null, null],
    ["10.1.0.255", "FR", null, null],
    ["10.1.1.0", "DE", null, null],
    ["10.255.255.255", "DE", null, null],
    ["255.255.254.255", null, null, null],
    ["255.255.255.255", "JP", null, null],
  ])("IPv4 %s → %p, AS %p, %p", (address, countryCode, asn, org) => {
    expect(table.lookup(v4(Number(dotted(address))))).toEqual({ countryCode, asn, org });
  });

  test.each([
    ["::", 0n, null, null],
    ["2001:4860::", 0x20014860n << 96n, "US", 15169],
    ["2001:4860:4860::8888", (0x20014860n << 96n) + (0x4860n << 64n) + 0x8888n, "US", 15169],
    ["2001:4860:ffff:…:ffff", (0x20014861n << 96n) - 1n, "US", 15169],
    ["2001:4861::", 0x20014861n << 96n, null, null],
    ["2a00::4", (0x2a000000n << 96n) + 4n, null, null],
    ["2a00::5", (0x2a000000n << 96n) + 5n, "NL", null],
    ["2a00::9", (0x2a000000n << 96n) + 9n, "NL", null],
    ["2a00::a", (0x2a000000n << 96n) + 10n, null, null],
    ["ffff:…:fffe", MAX_V6 - 1n, null, null],
    ["ffff:…:ffff", MAX_V6, "SE", null],
  ])("IPv6 %s → %p, AS %p", (_label, value, countryCode, asn) => {
    const hit = table.lookup(v6(value));
    expect(hit.countryCode).toBe(countryCode);
    expect(hit.asn).toBe(asn);
  });

  test("header carries the data times and the source", () => {
    expect(table.countryDataTime).toBe(1000);
    expect(table.asnDataTime).toBe(2000);
    expect(table.source).toBe("test");
    expect(table.has("country", 4) && table.has("country", 6) && table.has("asn", 4) && table.has("asn", 6)).toBe(true);
  });

  test("an organization name is decoded once and shared", () => {
    const record = table.asnRecord(v4(Number(dotted("8.8.8.8"))));
    expect(table.orgAt(record)).toBe("Google LLC");
    expect(table.orgAt(record)).toBe(table.orgAt(table.asnRecord(v4(Number(dotted("8.8.9.1"))))));
  });

  test("a table may carry only some kinds and families", () => {
    const only = RangeTable.fromBytes(writeRangeTable({ source: "asn v6 only", asnV6 }));
    expect(only.has("asn", 6)).toBe(true);
    expect(only.has("asn", 4)).toBe(false);
    expect(only.has("country", 4)).toBe(false);
    expect(only.lookup(v4(0x08080808))).toEqual({ countryCode: null, asn: null, org: null });
    expect(only.lookup(v6(0x20014860n << 96n)).asn).toBe(15169);
  });

  test("bytes that are not 8-byte aligned are copied, not rejected", () => {
    const bytes = writeRangeTable({ source: "x", countryV4 });
    const shifted = new Uint8Array(bytes.length + 3);
    shifted.set(bytes, 3);
    expect(RangeTable.fromBytes(shifted.subarray(3)).lookup(v4(Number(dotted("8.8.8.8")))).countryCode).toBe("US");
  });
});

describe("range table format checks", () => {
  const good = writeRangeTable({ source: "x", countryV4: [{ start: 5n, end: 9n, code: "US" }] });
  const damaged = (edit: (b: Uint8Array) => void) => {
    const b = good.slice();
    edit(b);
    return () => RangeTable.fromBytes(b);
  };

  test.each([
    ["wrong magic", (b: Uint8Array) => (b[0] = 0x58), "not an abuse-intel range table"],
    ["unknown version", (b: Uint8Array) => (b[4] = 9), "version 9"],
    ["section beyond the end", (b: Uint8Array) => new DataView(b.buffer).setUint32(24 + 2 * 8, 1 << 30, true), "out of bounds"],
    ["a value beyond the code list", (b: Uint8Array) => {
      const view = new DataView(b.buffer);
      const valuesAt = view.getUint32(24 + 3 * 8, true);
      view.setUint16(valuesAt + 2, 7, true);
    }, "out of range"],
  ])("%s is refused", (_name, edit, message) => {
    expect(damaged(edit)).toThrow(message);
  });

  test("a truncated buffer is refused", () => {
    expect(() => RangeTable.fromBytes(good.subarray(0, 40))).toThrow();
  });

  test("the same content always gives the same bytes", () => {
    expect(writeRangeTable({ source: "x", countryV4: [{ start: 5n, end: 9n, code: "US" }] })).toEqual(good);
  });
});

describe("flattening overlapping ranges", () => {
  test.each([
    ["disjoint", [[0, 4, 1], [6, 9, 2]], [[0, 4, 1], [6, 9, 2]]],
    ["adjacent equal values merge", [[0, 4, 1], [5, 9, 1]], [[0, 9, 1]]],
    ["child inside parent splits it", [[0, 9, 1], [3, 5, 2]], [[0, 2, 1], [3, 5, 2], [6, 9, 1]]],
    ["same start, later and narrower wins", [[0, 9, 1], [0, 3, 2]], [[0, 3, 2], [4, 9, 1]]],
    ["partial overlap: later wins its part", [[0, 5, 1], [3, 9, 2]], [[0, 2, 1], [3, 9, 2]]],
    ["children tiling the rest of a parent", [[0, 9, 1], [2, 3, 2], [4, 5, 3], [6, 9, 1]], [[0, 1, 1], [2, 3, 2], [4, 5, 3], [6, 9, 1]]],
    ["unsorted input is sorted first", [[6, 9, 2], [0, 4, 1]], [[0, 4, 1], [6, 9, 2]]],
    ["unsorted: a later wider row covers an earlier narrower one", [[3, 5, 2], [0, 9, 1]], [[0, 9, 1]]],
    ["unsorted: later rows win in file order", [[5, 9, 1], [0, 6, 2], [8, 8, 3]], [[0, 6, 2], [7, 7, 1], [8, 8, 3], [9, 9, 1]]],
  ])("%s", (_name, rows, expected) => {
    const segs = flattenRanges(rows.map(([s, e, v]) => ({ start: BigInt(s), end: BigInt(e), value: v })));
    expect(segs.map((s) => [Number(s.start), Number(s.end), s.value])).toEqual(expected);
  });

  test("an end below its start is an error", () => {
    expect(() => flattenRanges([{ start: 5n, end: 4n, value: 1 }])).toThrow("below its start");
  });
});

describe("property: lookups agree with a linear scan of the source rows", () => {
  const codes = ["US", "DE", "FR", "JP", "BR"];

  // Odd seeds give rows in random order (the sweep path), even seeds rows sorted by start (the painting path).
  test.each([1, 2, 3, 4, 5, 6])("IPv4, seed %d", (seed) => {
    const rnd = random(seed);
    // A small space packs the ranges densely, so overlaps, nesting, gaps and neighbours all occur.
    const space = 1 + Math.floor(rnd() * 5000);
    const base = Math.floor(rnd() * (2 ** 32 - space));
    const rows: CountryRange[] = [];
    const asnRows: AsnRange[] = [];
    for (let i = 0; i < 300; i++) {
      const s = base + Math.floor(rnd() * space);
      const e = Math.min(base + space - 1, s + Math.floor(rnd() * rnd() * 200));
      rows.push({ start: BigInt(s), end: BigInt(e), code: codes[Math.floor(rnd() * codes.length)] });
      asnRows.push({ start: BigInt(s), end: BigInt(e), asn: Math.floor(rnd() * 4), org: rnd() < 0.5 ? `Org ${i % 7}` : null });
    }
    if (seed % 2 === 0) {
      const byStart = (a: { start: bigint }, b: { start: bigint }) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0);
      rows.sort(byStart);
      asnRows.sort(byStart);
    }
    const table = RangeTable.fromBytes(writeRangeTable({ source: "p", countryV4: rows, asnV4: asnRows }));
    for (let x = base - 3; x < base + space + 3; x++) {
      if (x < 0 || x > 0xffffffff) continue;
      const hit = table.lookup(v4(x));
      expect(hit.countryCode).toBe(reference(rows, BigInt(x))?.code ?? null);
      const a = reference(asnRows, BigInt(x));
      expect([hit.asn, hit.org]).toEqual([a?.asn ?? null, a?.org ?? null]);
    }
  });

  test.each([11, 12, 13, 14])("IPv6, seed %d", (seed) => {
    const rnd = random(seed);
    const base = (BigInt(Math.floor(rnd() * 2 ** 32)) << 96n) | (BigInt(Math.floor(rnd() * 2 ** 32)) << 40n);
    // Offsets straddle word boundaries (2^32, 2^64) so every word of the comparison gets exercised.
    const offsets = [0n, 1n, 2n ** 32n - 2n, 2n ** 32n, 2n ** 64n - 1n, 2n ** 64n, 2n ** 64n + 2n ** 32n, 3n * 2n ** 64n];
    const pick = () => offsets[Math.floor(rnd() * offsets.length)] + BigInt(Math.floor(rnd() * 4));
    const rows: CountryRange[] = [];
    for (let i = 0; i < 200; i++) {
      const s = base + pick();
      const e = s + (rnd() < 0.5 ? BigInt(Math.floor(rnd() * 3)) : pick());
      rows.push({ start: s, end: e, code: codes[Math.floor(rnd() * codes.length)] });
    }
    if (seed % 2 === 0) rows.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
    const table = RangeTable.fromBytes(writeRangeTable({ source: "p", countryV6: rows }));
    const probes = new Set<bigint>();
    for (const r of rows) for (const d of [-1n, 0n, 1n]) probes.add(r.start + d).add(r.end + d);
    for (const x of probes) {
      expect(table.lookup(v6(x)).countryCode).toBe(reference(rows, x)?.code ?? null);
    }
  });

  test("bucketed and plain IPv4 search agree", () => {
    const rnd = random(99);
    const starts = Uint32Array.from(new Set([0, ...Array.from({ length: 5000 }, () => Math.floor(rnd() * 2 ** 32))])).sort();
    const buckets = v4Buckets(starts);
    for (let i = 0; i < 20000; i++) {
      const x = rnd() < 0.5 ? Math.floor(rnd() * 2 ** 32) : starts[Math.floor(rnd() * starts.length)] - (rnd() < 0.5 ? 1 : 0);
      if (x < 0) continue;
      const h = x >>> 16;
      const lo = buckets[h];
      expect(searchV4(starts, x, lo > 0 ? lo - 1 : 0, buckets[h + 1] - 1)).toBe(searchV4(starts, x));
    }
    expect(searchV6(new Uint32Array(0), [0, 0, 0, 0])).toBe(-1);
  });
});

describe("the packed default table", () => {
  const root = join(import.meta.dir, "../../..");
  const packed = join(root, "build/generated/enrichment.bin");
  const csv = (path: string) => join(root, "node_modules/@ip-location-db", path);

  test("answers the start and end of every source row no other row overlaps", async () => {
    expect(existsSync(packed)).toBe(true); // written by `bun build/pack-enrichment.ts`
    const table = RangeTable.fromBytes(await Bun.file(packed).arrayBuffer());
    const files: Array<[string, 4 | 6, "country" | "asn"]> = [
      ["geo-whois-asn-country/geo-whois-asn-country-ipv4-num.csv", 4, "country"],
      ["geo-whois-asn-country/geo-whois-asn-country-ipv6-num.csv", 6, "country"],
      ["asn/asn-ipv4-num.csv", 4, "asn"],
      ["asn/asn-ipv6-num.csv", 6, "asn"],
    ];
    for (const [file, family, kind] of files) {
      const lines = (await Bun.file(csv(file)).text()).split("\n").filter((l) => l !== "");
      let maxEnd = -1n;
      let checked = 0;
      const ends = lines.map((l) => BigInt(l.slice(l.indexOf(",") + 1, l.indexOf(",", l.indexOf(",") + 1))));
      for (let i = 0; i < lines.length; i++) {
        const line = lines[i];
        const start = BigInt(line.slice(0, line.indexOf(",")));
        const end = ends[i];
        const nextStart = i + 1 < lines.length ? BigInt(lines[i + 1].slice(0, lines[i + 1].indexOf(","))) : MAX_V6 + 1n;
        const clean = maxEnd < start && end < nextStart;
        if (end > maxEnd) maxEnd = end;
        // Every 7th clean row keeps the test short; they spread over the whole file.
        if (!clean || i % 7 !== 0) continue;
        const rest = line.slice(line.indexOf(",", line.indexOf(",") + 1) + 1);
        for (const x of [start, end]) {
          const ip = family === 4 ? v4(Number(x)) : v6(x);
          if (kind === "country") expect(table.lookup(ip).countryCode).toBe(rest);
          else expect(table.lookup(ip).asn).toBe(Number(rest.slice(0, rest.indexOf(","))));
        }
        checked++;
      }
      expect(checked).toBeGreaterThan(lines.length / 10);
    }
  });
});

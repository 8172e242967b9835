import { describe, expect, test } from "bun:test";
import { Reader } from "mmdb-lib";
import { type MmdbEntry, writeMmdb } from "../../support/mmdb-writer";

// The writer is checked by the reader the product uses: whatever mmdb-lib reads back is what counts.
const read = (entries: MmdbEntry[], options?: Parameters<typeof writeMmdb>[1]) =>
  new Reader<Record<string, unknown>>(Buffer.from(writeMmdb(entries, options)));

describe("mmdb writer", () => {
  const entries: MmdbEntry[] = [
    { cidr: "8.8.8.0/24", data: { city: { names: { en: "Mountain View" } }, n: 5 } },
    { cidr: "8.8.8.8/32", data: { city: { names: { en: "Exact" } } } },
    { cidr: "10.0.0.0/8", data: { name: "ten" } },
    { cidr: "2001:4860::/32", data: { name: "google v6" } },
    { cidr: "0.0.0.0/1", data: { name: "lower half" } },
  ];

  test.each([24, 28, 32] as const)("record size %d: nested networks, the more specific wins", (recordSize) => {
    const reader = read(entries, { recordSize });
    expect(reader.metadata.recordSize).toBe(recordSize);
    expect(reader.get("8.8.8.8")).toEqual({ city: { names: { en: "Exact" } } });
    expect(reader.get("8.8.8.9")).toEqual({ city: { names: { en: "Mountain View" } }, n: 5 });
    expect(reader.get("10.200.1.1")).toEqual({ name: "ten" });
    expect(reader.get("100.0.0.1")).toEqual({ name: "lower half" });
    expect(reader.get("200.0.0.1")).toBeNull();
    expect(reader.get("2001:4860:4860::8888")).toEqual({ name: "google v6" });
    expect(reader.get("2001:4861::1")).toBeNull();
    // The /32 inside the /24 splits it: 8.8.8.200 differs from 8.8.8.8 in the first bit of the last octet.
    expect(reader.getWithPrefixLength("8.8.8.200")[1]).toBe(25);
  });

  test("metadata", () => {
    const reader = read([{ cidr: "1.2.3.4", data: { a: 1 } }], { databaseType: "Test-City", buildEpoch: 1_700_000_000 });
    expect(reader.metadata).toMatchObject({ ipVersion: 4, databaseType: "Test-City", binaryFormatMajorVersion: 2, languages: ["en"] });
    expect(reader.metadata.buildEpoch.getTime()).toBe(1_700_000_000_000);
    expect(reader.get("1.2.3.4")).toEqual({ a: 1 });
    expect(reader.get("1.2.3.5")).toBeNull();
  });

  test("every data type round-trips", () => {
    const data = {
      s: "ünïcødé",
      long: "x".repeat(70_000),
      u: 4_000_000_000,
      zero: 0,
      neg: -42,
      d: 1.25,
      big: 2 ** 40,
      big128: 1n << 100n,
      t: true,
      f: false,
      arr: [1, "two", { three: 3 }],
      bytes: Uint8Array.of(1, 2, 3),
      nested: { deeper: { deepest: "yes" } },
    };
    const got = read([{ cidr: "1.0.0.0/8", data }]).get("1.2.3.4")!;
    const expected: Record<string, unknown> = { ...data, big: 2n ** 40n, bytes: [1, 2, 3] };
    expect({ ...got, bytes: [...(got.bytes as Uint8Array)] } as Record<string, unknown>).toEqual(expected);
  });

  test("IPv4 networks in an IPv6 tree sit under ::/96", () => {
    const reader = read([{ cidr: "8.8.8.0/24", data: { v: 4 } }, { cidr: "2001:db8::/32", data: { v: 6 } }]);
    expect(reader.metadata.ipVersion).toBe(6);
    expect(reader.get("8.8.8.8")).toEqual({ v: 4 });
    expect(reader.get("::808:808")).toEqual({ v: 4 });
    expect(reader.get("2001:db8::1")).toEqual({ v: 6 });
  });

  test("an IPv4 tree refuses IPv6 networks; bad networks are refused", () => {
    expect(() => writeMmdb([{ cidr: "2001:db8::/32", data: {} }], { ipVersion: 4 })).toThrow();
    expect(() => writeMmdb([{ cidr: "1.2.3.0/33", data: {} }])).toThrow("bad network");
    expect(() => writeMmdb([{ cidr: "1.2.3", data: {} }])).toThrow("bad network");
  });

  test("identical data values are stored once", () => {
    const one = writeMmdb([{ cidr: "1.0.0.0/24", data: { city: "Same" } }]);
    const many = writeMmdb(Array.from({ length: 100 }, (_, i) => ({ cidr: `1.0.${i}.0/24`, data: { city: "Same" } })));
    const fresh = writeMmdb(Array.from({ length: 100 }, (_, i) => ({ cidr: `1.0.${i}.0/24`, data: { city: `C${i}` } })));
    expect(many.length - one.length).toBeLessThan(fresh.length - one.length);
  });
});

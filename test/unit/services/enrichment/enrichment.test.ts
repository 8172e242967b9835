import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AppError } from "../../../../src/domain/errors";
import type { Ip, NormalizedIp } from "../../../../src/domain/ip";
import { RangeTable } from "../../../../src/index/range-table";
import { writeRangeTable } from "../../../../src/index/range-table-writer";
import { Enrichment, isSpecialPurpose, loadBuiltInTable, openEnrichment } from "../../../../src/services/enrichment/enrichment";
import { importGeoFile } from "../../../../src/services/enrichment/geo-import";
import { writeMmdb } from "../../../support/mmdb-writer";

// Addresses built by hand: these tests do not depend on the address parser.
function ipv4(text: string): Ip {
  return { version: 4, value: text.split(".").reduce((a, o) => a * 256 + Number(o), 0), text: text as NormalizedIp };
}
function ipv6(text: string, groups: number[]): Ip {
  const words = new Uint32Array(4);
  for (let i = 0; i < 4; i++) words[i] = ((groups[2 * i] << 16) | groups[2 * i + 1]) >>> 0;
  return { version: 6, words, text: text as NormalizedIp };
}

const scratch = mkdtempSync(join(tmpdir(), "enrichment-test-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let dirs = 0;
const freshDataDir = () => {
  const dir = join(scratch, `data-${++dirs}`);
  mkdirSync(dir);
  return dir;
};
const csvFile = (name: string, text: string, mtime?: Date) => {
  const path = join(scratch, name);
  writeFileSync(path, text);
  if (mtime) utimesSync(path, mtime, mtime);
  return path;
};

const NOTHING = { countryCode: null, country: null, asn: null, isp: null, city: null };

describe("built-in data", async () => {
  const enrichment = await openEnrichment();

  test("8.8.8.8 is Google in the United States", () => {
    expect(enrichment.lookup(ipv4("8.8.8.8"))).toEqual({
      countryCode: "US",
      country: "United States",
      asn: 15169,
      isp: "Google LLC",
      city: null,
    });
  });

  test("2001:4860:4860::8888 is Google in the United States", () => {
    expect(enrichment.lookup(ipv6("2001:4860:4860::8888", [0x2001, 0x4860, 0x4860, 0, 0, 0, 0, 0x8888]))).toEqual({
      countryCode: "US",
      country: "United States",
      asn: 15169,
      isp: "Google LLC",
      city: null,
    });
  });

  test("1.1.1.1 has an organization name with a comma", () => {
    expect(enrichment.lookup(ipv4("1.1.1.1")).isp).toBe("Cloudflare, Inc.");
  });

  test.each([
    ["10.0.0.1", ipv4("10.0.0.1")],
    // The source data itself maps 192.168.0.0/16 to AU: special-purpose space must be unknown anyway.
    ["192.168.1.1", ipv4("192.168.1.1")],
    ["172.16.5.4", ipv4("172.16.5.4")],
    ["100.64.0.1", ipv4("100.64.0.1")],
    ["127.0.0.1", ipv4("127.0.0.1")],
    ["169.254.1.1", ipv4("169.254.1.1")],
    ["0.0.0.0", ipv4("0.0.0.0")],
    ["192.0.2.1", ipv4("192.0.2.1")],
    ["198.51.100.7", ipv4("198.51.100.7")],
    ["203.0.113.9", ipv4("203.0.113.9")],
    ["224.0.0.1", ipv4("224.0.0.1")],
    ["255.255.255.255", ipv4("255.255.255.255")],
    ["::", ipv6("::", [0, 0, 0, 0, 0, 0, 0, 0])],
    ["::1", ipv6("::1", [0, 0, 0, 0, 0, 0, 0, 1])],
    ["fe80::1", ipv6("fe80::1", [0xfe80, 0, 0, 0, 0, 0, 0, 1])],
    ["fd12:3456::1", ipv6("fd12:3456::1", [0xfd12, 0x3456, 0, 0, 0, 0, 0, 1])],
    ["2001:db8::1", ipv6("2001:db8::1", [0x2001, 0xdb8, 0, 0, 0, 0, 0, 1])],
    ["3fff::1", ipv6("3fff::1", [0x3fff, 0, 0, 0, 0, 0, 0, 1])],
    ["2001:2::1", ipv6("2001:2::1", [0x2001, 2, 0, 0, 0, 0, 0, 1])],
    ["ff02::1", ipv6("ff02::1", [0xff02, 0, 0, 0, 0, 0, 0, 1])],
  ])("%s (special-purpose) is unknown", (_text, ip) => {
    expect(isSpecialPurpose(ip)).toBe(true);
    expect(enrichment.lookup(ip)).toEqual(NOTHING);
  });

  test.each([
    ["8.8.8.8", ipv4("8.8.8.8")],
    ["172.32.0.1", ipv4("172.32.0.1")],
    ["100.128.0.1", ipv4("100.128.0.1")],
    ["223.255.255.255", ipv4("223.255.255.255")],
    ["2001:4860::1", ipv6("2001:4860::1", [0x2001, 0x4860, 0, 0, 0, 0, 0, 1])],
    ["2001:db9::1", ipv6("2001:db9::1", [0x2001, 0xdb9, 0, 0, 0, 0, 0, 1])],
    ["2001:2:1::1", ipv6("2001:2:1::1", [0x2001, 2, 1, 0, 0, 0, 0, 1])],
    ["fec0::1", ipv6("fec0::1", [0xfec0, 0, 0, 0, 0, 0, 0, 1])],
  ])("%s is not special-purpose", (_text, ip) => {
    expect(isSpecialPurpose(ip)).toBe(false);
  });

  test("describes its source", () => {
    const [builtIn] = enrichment.sources();
    expect(builtIn.name).toBe("built-in");
    expect(builtIn.covers).toEqual(["country IPv4", "country IPv6", "asn IPv4", "asn IPv6"]);
    expect(builtIn.detail).toContain("ip-location-db");
    expect(enrichment.hasMmdb).toBe(false);
  });
});

describe("imported range CSVs", () => {
  test("a newer country import answers first; the built-in data answers what it does not cover", async () => {
    const dataDir = freshDataDir();
    await importGeoFile(csvFile("c1.csv", "8.8.8.0,8.8.8.255,DE\n"), { dataDir });
    const enrichment = await openEnrichment({ dataDir });
    expect(enrichment.lookup(ipv4("8.8.8.8"))).toEqual({
      countryCode: "DE",
      country: "Germany",
      asn: 15169, // no ASN import: still the built-in ASN
      isp: "Google LLC",
      city: null,
    });
    expect(enrichment.lookup(ipv4("8.8.4.4")).countryCode).toBe("US");
    expect(enrichment.sources().map((s) => s.name)).toEqual(["built-in", "country-ipv4.bin"]);
  });

  test("an ASN import replaces number and organization together", async () => {
    const dataDir = freshDataDir();
    await importGeoFile(csvFile("a1.csv", '134744064,134744319,64500,"Example, Org"\n'), { dataDir });
    const hit = (await openEnrichment({ dataDir })).lookup(ipv4("8.8.8.8"));
    expect([hit.countryCode, hit.asn, hit.isp]).toEqual(["US", 64500, "Example, Org"]);
  });

  test("an import older than the built-in data answers only where the built-in data has nothing", async () => {
    const dataDir = freshDataDir();
    const old = new Date("2020-01-01T00:00:00Z");
    const result = await importGeoFile(csvFile("old.csv", "8.8.8.0,8.8.8.255,DE\n", old), { dataDir });
    expect(result.warnings[0]).toContain("older than the built-in country data");
    expect((await openEnrichment({ dataDir })).lookup(ipv4("8.8.8.8")).countryCode).toBe("US");
  });

  test("a later import of the same kind and family replaces the earlier one", async () => {
    const dataDir = freshDataDir();
    await importGeoFile(csvFile("r1.csv", "8.8.8.0,8.8.8.255,DE\n"), { dataDir });
    await importGeoFile(csvFile("r2.csv", "8.8.8.0,8.8.8.255,FR\n"), { dataDir });
    expect((await openEnrichment({ dataDir })).lookup(ipv4("8.8.8.8")).countryCode).toBe("FR");
  });

  test("a running enrichment picks up an import made after it opened", async () => {
    const dataDir = freshDataDir();
    const enrichment = await openEnrichment({ dataDir });
    expect(enrichment.reloadImported()).toBe(false);
    await importGeoFile(csvFile("late.csv", "2001:4860::,2001:4860:ffff:ffff:ffff:ffff:ffff:ffff,JP\n"), { dataDir });
    expect(enrichment.reloadImported()).toBe(true);
    expect(enrichment.reloadImported()).toBe(false);
    expect(enrichment.lookup(ipv6("2001:4860::1", [0x2001, 0x4860, 0, 0, 0, 0, 0, 1])).country).toBe("Japan");
  });

  test("a damaged file under geo/ is skipped with a warning", async () => {
    const dataDir = freshDataDir();
    mkdirSync(join(dataDir, "geo"));
    writeFileSync(join(dataDir, "geo", "country-ipv4.bin"), "not a table");
    const enrichment = await openEnrichment({ dataDir });
    expect(enrichment.warnings[0]).toContain("country-ipv4.bin");
    expect(enrichment.lookup(ipv4("8.8.8.8")).countryCode).toBe("US");
  });
});

describe("source order", () => {
  // Hand-made tables, so the order rule is checked independently of the packaged data.
  const table = (time: number, code: string, start: number, end: number) =>
    RangeTable.fromBytes(writeRangeTable({ source: code, countryDataTime: time, countryV4: [{ start: BigInt(start), end: BigInt(end), code }] }));

  test.each([
    ["newer import wins", 100, 200, "FR"],
    ["newer built-in wins", 300, 200, "DE"],
    ["on a tie the import wins", 200, 200, "FR"],
  ])("inside both ranges: %s", (_name, builtInTime, importTime, expected) => {
    const base = 0x01000000; // 1.0.0.0: public space
    const enrichment = new Enrichment(table(builtInTime, "DE", base, base + 0xffff), [
      { name: "x.bin", table: table(importTime, "FR", base, base + 0xff) },
    ]);
    expect(enrichment.lookup(ipv4("1.0.0.1")).countryCode).toBe(expected);
    // Outside the import's range the other table answers, whichever is newer.
    expect(enrichment.lookup(ipv4("1.0.1.1")).countryCode).toBe("DE");
  });
});

describe("MaxMind-format database", () => {
  const mmdbPath = join(scratch, "city.mmdb");
  writeFileSync(
    mmdbPath,
    writeMmdb([
      { cidr: "8.8.8.0/24", data: { city: { names: { en: "Mountain View", de: "Mountain View" } }, country: { iso_code: "US" } } },
      { cidr: "8.8.4.0/24", data: { city: { names: { en: "Toronto" } }, country: { iso_code: "CA" } } },
      // ip-location-db's own city layout: plain strings.
      { cidr: "1.0.0.0/24", data: { city: "Brisbane", country_code: "AU" } },
      { cidr: "9.9.9.0/24", data: { autonomous_system_number: 19281, autonomous_system_organization: "Quad9" } },
      { cidr: "2001:4860::/32", data: { city: { names: { en: "Mountain View" } } } },
      { cidr: "10.0.0.0/8", data: { city: { names: { en: "Private City" } } } },
    ]),
  );
  const v4OnlyPath = join(scratch, "v4.mmdb");
  writeFileSync(v4OnlyPath, writeMmdb([{ cidr: "8.8.8.0/24", data: { city: { names: { en: "Mountain View" } } } }], { ipVersion: 4 }));

  test("adds the city; the range table still gives ASN and ISP", async () => {
    const enrichment = await openEnrichment({ mmdbPath });
    expect(enrichment.hasMmdb).toBe(true);
    expect(enrichment.lookup(ipv4("8.8.8.8"))).toEqual({
      countryCode: "US",
      country: "United States",
      asn: 15169,
      isp: "Google LLC",
      city: "Mountain View",
    });
    expect(enrichment.lookup(ipv4("1.0.0.7")).city).toBe("Brisbane");
    expect(enrichment.lookup(ipv6("2001:4860::1", [0x2001, 0x4860, 0, 0, 0, 0, 0, 1])).city).toBe("Mountain View");
  });

  test("its country wins over the range table's; its ASN too where it has one", async () => {
    const enrichment = await openEnrichment({ mmdbPath });
    expect(enrichment.lookup(ipv4("8.8.4.4"))).toMatchObject({ countryCode: "CA", country: "Canada", asn: 15169, city: "Toronto" });
    expect(enrichment.lookup(ipv4("9.9.9.9"))).toMatchObject({ asn: 19281, isp: "Quad9", city: null });
  });

  test("an address it does not hold keeps the range table's answer with no city", async () => {
    const hit = (await openEnrichment({ mmdbPath })).lookup(ipv4("1.1.1.1"));
    expect(hit).toMatchObject({ countryCode: "AU", asn: 13335, city: null });
  });

  test("special-purpose space stays unknown even when the database has an entry", async () => {
    expect((await openEnrichment({ mmdbPath })).lookup(ipv4("10.1.2.3"))).toEqual(NOTHING);
  });

  test("an IPv4-only database answers IPv6 lookups with no city, without failing", async () => {
    const enrichment = await openEnrichment({ mmdbPath: v4OnlyPath });
    expect(enrichment.lookup(ipv4("8.8.8.8")).city).toBe("Mountain View");
    expect(enrichment.lookup(ipv6("2001:4860::1", [0x2001, 0x4860, 0, 0, 0, 0, 0, 1]))).toMatchObject({ city: null, asn: 15169 });
  });

  test("a file that is not a MaxMind database is refused with its path", async () => {
    const bad = csvFile("not.mmdb", "hello");
    const error = await openEnrichment({ mmdbPath: bad }).catch((e) => e);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).message).toContain(bad);
  });
});

test("the built-in table is loaded once and shared", async () => {
  expect(await loadBuiltInTable()).toBe(await loadBuiltInTable());
});

import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AppError } from "../../../../src/domain/errors";
import type { Ip, NormalizedIp } from "../../../../src/domain/ip";
import { RangeTable } from "../../../../src/index/range-table";
import { openEnrichment } from "../../../../src/services/enrichment/enrichment";
import { GeoCsvError, ipv6TextToBigInt, parseGeoCsv, splitCsvLine } from "../../../../src/services/enrichment/geo-csv";
import { formatGeoImportReport, geoLookupLines, importGeoFile } from "../../../../src/services/enrichment/geo-import";
import { writeMmdb } from "../../../support/mmdb-writer";

const ipv4 = (text: string): Ip => ({ version: 4, value: text.split(".").reduce((a, o) => a * 256 + Number(o), 0), text: text as NormalizedIp });

const scratch = mkdtempSync(join(tmpdir(), "geo-import-test-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let n = 0;
const file = (text: string) => {
  const path = join(scratch, `in-${++n}.csv`);
  writeFileSync(path, text);
  return path;
};
const dataDir = () => {
  const dir = join(scratch, `data-${++n}`);
  mkdirSync(dir);
  return dir;
};

describe("CSV fields", () => {
  test.each([
    ["1,2,US", ["1", "2", "US"]],
    ['1,2,13335,"Cloudflare, Inc."', ["1", "2", "13335", "Cloudflare, Inc."]],
    ['1,2,1,"Say ""hi"", Ltd"', ["1", "2", "1", 'Say "hi", Ltd']],
    ['1,2,1,""', ["1", "2", "1", ""]],
    ["1, 2 ,US", ["1", "2", "US"]],
    ['1,2,"unterminated', null],
    ['1,2,"a"b', null],
  ])("%s", (line, fields) => {
    expect(splitCsvLine(line)).toEqual(fields);
  });

  test.each([
    ["::", 0n],
    ["::1", 1n],
    ["2001:db8::", 0x20010db8n << 96n],
    ["2001:DB8:0:0:0:0:0:1", (0x20010db8n << 96n) + 1n],
    ["::ffff:1.2.3.4", 0xffff01020304n],
    ["ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", (1n << 128n) - 1n],
    ["1:2:3:4:5:6:7", null],
    ["1::2::3", null],
    ["fe80::1%eth0", null],
    ["12345::", null],
  ])("IPv6 %s", (text, value) => {
    expect(ipv6TextToBigInt(text)).toBe(value);
  });
});

describe("layouts", () => {
  test.each([
    ["country, IPv4 addresses", "1.0.0.0,1.0.0.255,AU\n", "country", 1, 0],
    ["country, IPv4 numbers", "16777216,16777471,AU\n", "country", 1, 0],
    ["country, IPv6 addresses", "2001:200::,2001:200:ffff:ffff:ffff:ffff:ffff:ffff,JP\n", "country", 0, 1],
    ["country, IPv6 numbers", "42540528726795050063891204319802818560,42540528806023212578155541913346768895,JP\n", "country", 0, 1],
    ["asn, IPv4 addresses", '1.0.0.0,1.0.0.255,13335,"Cloudflare, Inc."\n', "asn", 1, 0],
    ["asn, IPv6 numbers", "42540488161975842760550356425300246528,42540488241204005274814694018844196863,6939,Hurricane Electric LLC\n", "asn", 0, 1],
    ["asn, both families by address", "1.0.0.0,1.0.0.255,13335,Cloudflare\n2001::,2001::ff,6939,HE\n", "asn", 1, 1],
    ["header, CRLF, BOM, comments and blank lines", "\ufeffip_range_start,ip_range_end,country_code\r\n# note\r\n\r\n1.0.0.0,1.0.0.255,au\r\n", "country", 1, 0],
  ])("%s", (_name, text, layout, v4, v6) => {
    const parsed = parseGeoCsv(text);
    expect(parsed.layout as string).toBe(layout);
    expect(parsed.badLineCount).toBe(0);
    const [a, b] = layout === "country" ? [parsed.countryV4, parsed.countryV6] : [parsed.asnV4, parsed.asnV6];
    expect([a.length, b.length]).toEqual([v4, v6]);
  });

  test("numbers read as IPv6 when any of them is above 2^32 - 1", () => {
    const parsed = parseGeoCsv("1,2,US\n42540528726795050063891204319802818560,42540528726795050063891204319802818561,JP\n");
    expect(parsed.countryV6.map((r) => r.code)).toEqual(["US", "JP"]);
  });

  test("the organization may be empty", () => {
    expect(parseGeoCsv("1.0.0.0,1.0.0.255,64500,\n").asnV4[0].org).toBeNull();
  });

  test("AS numbers may carry the AS prefix", () => {
    expect(parseGeoCsv("1.0.0.0,1.0.0.255,AS64500,X\n").asnV4[0].asn).toBe(64500);
  });

  test.each([
    ["a city layout", "1.0.0.0,1.0.0.255,AU,Queensland,,Brisbane,4000,-27.4,153.0,Australia/Brisbane\n"],
    ["no ranges at all", "# nothing\n\n"],
  ])("%s is refused", (_name, text) => {
    expect(() => parseGeoCsv(text)).toThrow(GeoCsvError);
  });
});

describe("bad lines are listed with their numbers and skipped", () => {
  const text = [
    "1.0.0.0,1.0.0.255,AU", // 1 good
    "1.0.1.0,1.0.1.255,Australia", // 2 code
    "1.0.2.255,1.0.2.0,AU", // 3 end below start
    "1.0.3.0,1.0.3.255", // 4 field count
    "1.0.4.0,2001::1,AU", // 5 mixed families
    "1.0.5.0,1.0.5.256,AU", // 6 bad address
    "010.0.6.0x,1.0.6.255,AU", // 7 bad address
    '1.0.7.0,1.0.7.255,"AU', // 8 quoting
    "1.0.8.0,1.0.8.255,US", // 9 good
  ].join("\n");

  test.each([
    [2, "not a two-letter country code"],
    [3, "end is below start"],
    [4, "2 fields"],
    [5, "different kinds"],
    [6, "not an IPv4 address"],
    [7, "not an IPv4 address"],
    [8, "unbalanced quotes"],
  ])("line %d: %s", (line, reason) => {
    const parsed = parseGeoCsv(text);
    expect(parsed.badLines.find((b) => b.line === line)?.reason).toContain(reason);
  });

  test("the good lines still count", () => {
    const parsed = parseGeoCsv(text);
    expect(parsed.rowCount).toBe(2);
    expect(parsed.badLineCount).toBe(7);
    expect(parsed.badLines.map((b) => b.line)).toEqual([2, 3, 4, 5, 6, 7, 8]);
  });

  test("numbers forced to IPv4 refuse values above 2^32 - 1", () => {
    const parsed = parseGeoCsv("1,2,US\n4294967296,4294967297,US\n", { numbers: 4 });
    expect(parsed.rowCount).toBe(1);
    expect(parsed.badLines[0]).toMatchObject({ line: 2, reason: "number is above the IPv4 address space" });
  });

  test("only the first bad lines are kept, all are counted", () => {
    const many = ["1.0.0.0,1.0.0.255,AU", ...Array.from({ length: 250 }, () => "x,y,ZZZ")].join("\n");
    const parsed = parseGeoCsv(many);
    expect(parsed.badLines.length).toBe(100);
    expect(parsed.badLineCount).toBe(250);
  });
});

describe("importGeoFile", () => {
  test("writes one table per family under <data-dir>/geo/ and reports counts", async () => {
    const dir = dataDir();
    const result = await importGeoFile(file('1.0.0.0,1.0.0.255,13335,"Cloudflare, Inc."\n2001::,2001::ff,6939,HE\nbad,line,1,x\n'), {
      dataDir: dir,
    });
    expect(result.layout).toBe("asn");
    expect(result.rowCount).toBe(2);
    expect(result.badLineCount).toBe(1);
    expect(readdirSync(join(dir, "geo")).sort()).toEqual(["asn-ipv4.bin", "asn-ipv6.bin"]);
    const v4 = RangeTable.fromBytes(await Bun.file(join(dir, "geo", "asn-ipv4.bin")).arrayBuffer());
    expect(v4.has("asn", 4)).toBe(true);
    expect(v4.has("asn", 6)).toBe(false);
    expect(v4.lookup(ipv4("1.0.0.1"))).toEqual({ countryCode: null, asn: 13335, org: "Cloudflare, Inc." });

    const report = formatGeoImportReport(result);
    expect(report[0]).toStartWith("imported 2 ASN ranges from ");
    expect(report.some((l) => l.includes("IPv4: 1 ranges"))).toBe(true);
    expect(report.some((l) => l.includes("IPv6: 1 ranges"))).toBe(true);
    expect(report).toContain("skipped 1 bad lines:");
    expect(report.some((l) => l.startsWith("  line 3: "))).toBe(true);
  });

  test("a file with no valid range is refused and writes nothing", async () => {
    const dir = dataDir();
    const error = await importGeoFile(file("1.0.0.0,1.0.0.255,Australia\n"), { dataDir: dir }).catch((e) => e);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).message).toContain("no valid ranges");
    expect(existsSync(join(dir, "geo"))).toBe(false);
  });

  test("an unsupported layout is a bad request", async () => {
    const error = await importGeoFile(file("1.0.0.0,1.0.0.255,AU,x,y,z\n"), { dataDir: dataDir() }).catch((e) => e);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).errorCode).toBe("bad_request");
  });

  test("a missing file is a bad request naming it", async () => {
    const missing = join(scratch, "missing.csv");
    const error = await importGeoFile(missing, { dataDir: dataDir() }).catch((e) => e);
    expect((error as AppError).message).toContain(missing);
  });

  test("the data time defaults to the file's modification time and can be given", async () => {
    const path = file("1.0.0.0,1.0.0.255,AU\n");
    const given = Date.parse("2031-01-01T00:00:00Z");
    const result = await importGeoFile(path, { dataDir: dataDir(), dataTime: given, builtIn: null });
    expect(result.dataTime).toBe(given);
    const table = RangeTable.fromBytes(await Bun.file(result.written[0].path).arrayBuffer());
    expect(table.countryDataTime).toBe(given);
    expect((await importGeoFile(path, { dataDir: dataDir(), builtIn: null })).dataTime).toBe(Bun.file(path).lastModified);
  });
});

describe("geoLookupLines", () => {
  test("country code and name, ASN and ISP, or what is unknown", async () => {
    const enrichment = await openEnrichment();
    expect(geoLookupLines(enrichment, [ipv4("8.8.8.8"), ipv4("10.0.0.1")])).toEqual([
      "8.8.8.8: US United States; AS15169 Google LLC",
      "10.0.0.1: country unknown; ASN unknown",
    ]);
  });

  test("with a MaxMind database loaded, the city or its absence", async () => {
    const mmdbPath = join(scratch, "lines.mmdb");
    writeFileSync(mmdbPath, writeMmdb([{ cidr: "8.8.8.0/24", data: { city: { names: { en: "Mountain View" } } } }]));
    const enrichment = await openEnrichment({ mmdbPath });
    expect(geoLookupLines(enrichment, [ipv4("8.8.8.8"), ipv4("1.1.1.1")])).toEqual([
      "8.8.8.8: US United States; AS15169 Google LLC; city Mountain View",
      "1.1.1.1: AU Australia; AS13335 Cloudflare, Inc.; city unknown",
    ]);
  });
});
